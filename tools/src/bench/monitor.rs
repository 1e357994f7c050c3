//! Broker and process figures over the measured window: the broker's peak `RssAnon`
//! (sampled), peak RSS (`VmHWM`), CPU seconds and bytes written to storage, read from
//! `/proc` when the broker runs on this machine; its commitlog growth from
//! GET_BROKER_RUNTIME_INFO (`commitLogMaxOffset`, which Apache RocketMQ brokers report
//! too); and mqbench's own CPU seconds, to tell whether the tool was the bottleneck.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::task::JoinHandle;
use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::header::GetRouteInfoRequestHeader;
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::{json as wire_json, request_code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};

use crate::security::SecurityArgs;

use super::procfs::{self, ProcSample};

const CALL_TIMEOUT: Duration = Duration::from_secs(3);
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// The brokers serving a topic, asked directly over the remoting protocol.
pub struct BrokerProbe {
    client: RemotingClient,
    /// Master addresses.
    pub addrs: Vec<String>,
}

impl BrokerProbe {
    /// Looks the topic's brokers up on the first name server that answers.
    pub async fn locate(
        namesrv: &str,
        topic: &str,
        security: &SecurityArgs,
    ) -> Option<BrokerProbe> {
        let client = security.remoting_client().ok()?;
        for ns in namesrv.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let header = GetRouteInfoRequestHeader {
                topic: topic.to_owned(),
                accept_standard_json_only: None,
            };
            let request =
                RemotingCommand::request_with_header(request_code::GET_ROUTEINFO_BY_TOPIC, &header);
            let Ok(response) = client.invoke_sync(ns, request, CALL_TIMEOUT).await else {
                continue;
            };
            if response.code != response_code::SUCCESS {
                continue;
            }
            let Ok(route) = TopicRouteData::decode(&response.body) else {
                continue;
            };
            let addrs: Vec<String> = route
                .broker_datas
                .iter()
                .filter_map(|b| b.master_addr().map(str::to_owned))
                .collect();
            if !addrs.is_empty() {
                return Some(BrokerProbe { client, addrs });
            }
        }
        None
    }

    /// Sum of the brokers' `commitLogMaxOffset`; `None` when one does not say.
    pub async fn commitlog_max_offset(&self) -> Option<i64> {
        let mut sum = 0;
        for addr in &self.addrs {
            let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
            let response = self
                .client
                .invoke_sync(addr, request, CALL_TIMEOUT)
                .await
                .ok()?;
            if response.code != response_code::SUCCESS {
                return None;
            }
            let table: KvTable = wire_json::from_slice("KVTable", &response.body).ok()?;
            sum += table.table.get("commitLogMaxOffset")?.parse::<i64>().ok()?;
        }
        Some(sum)
    }

    /// The pid of the first broker when it listens on this machine.
    pub fn local_pid(&self) -> Option<u32> {
        let addr: SocketAddr = self.addrs.first()?.parse().ok()?;
        if !is_local(addr.ip()) {
            return None;
        }
        procfs::listening_pid(addr.port())
    }
}

/// Loopback, or one of this machine's addresses (a bind on it succeeds).
fn is_local(ip: std::net::IpAddr) -> bool {
    ip.is_loopback() || std::net::TcpListener::bind((ip, 0)).is_ok()
}

/// Figures of the measured window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub broker_pid: Option<u32>,
    pub broker_addrs: Vec<String>,
    pub broker_peak_rss_anon_kib: Option<u64>,
    pub broker_vm_hwm_kib: Option<u64>,
    pub broker_cpu_secs: Option<f64>,
    pub broker_disk_write_bytes: Option<u64>,
    pub store_bytes_written: Option<i64>,
    pub tool_cpu_secs: f64,
    pub tool_peak_rss_kib: u64,
}

const MIB: f64 = 1024.0;

impl Figures {
    pub fn to_json(&self, elapsed: Duration) -> Value {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mib = |kib: Option<u64>| kib.map(|k| (k as f64 / MIB * 10.0).round() / 10.0);
        let share = |cpu: Option<f64>| cpu.map(|c| (c / secs * 1000.0).round() / 1000.0);
        json!({
            "broker": {
                "pid": self.broker_pid,
                "addrs": self.broker_addrs,
                "peak_rss_anon_mib": mib(self.broker_peak_rss_anon_kib),
                "peak_rss_mib": mib(self.broker_vm_hwm_kib),
                "cpu_secs": self.broker_cpu_secs.map(|c| (c * 100.0).round() / 100.0),
                "cpu_cores": share(self.broker_cpu_secs),
                "disk_write_bytes": self.broker_disk_write_bytes,
                "store_bytes_written": self.store_bytes_written,
            },
            "mqbench": {
                "cpu_secs": (self.tool_cpu_secs * 100.0).round() / 100.0,
                "cpu_cores": share(Some(self.tool_cpu_secs)),
                "peak_rss_mib": mib(Some(self.tool_peak_rss_kib)),
            },
        })
    }

    pub fn lines(&self, elapsed: Duration) -> Vec<String> {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mut out = Vec::new();
        match (self.broker_pid, self.broker_cpu_secs) {
            (Some(pid), Some(cpu)) => out.push(format!(
                "broker pid {pid}: peak RssAnon {:.1} MiB, peak RSS {:.1} MiB, CPU {:.2} s ({:.2} cores), disk writes {}",
                self.broker_peak_rss_anon_kib.unwrap_or(0) as f64 / MIB,
                self.broker_vm_hwm_kib.unwrap_or(0) as f64 / MIB,
                cpu,
                cpu / secs,
                self.broker_disk_write_bytes
                    .map(|b| format!("{:.1} MiB", b as f64 / MIB / MIB))
                    .unwrap_or_else(|| "n/a".into()),
            )),
            _ => out.push("broker process: not on this machine (or not visible); no /proc figures".into()),
        }
        if let Some(b) = self.store_bytes_written {
            out.push(format!(
                "store: commitlog grew {:.1} MiB",
                b as f64 / MIB / MIB
            ));
        }
        out.push(format!(
            "mqbench: CPU {:.2} s ({:.2} cores), peak RSS {:.1} MiB",
            self.tool_cpu_secs,
            self.tool_cpu_secs / secs,
            self.tool_peak_rss_kib as f64 / MIB
        ));
        out
    }
}

/// Samples the broker while the window runs.
pub struct Monitor {
    probe: Option<BrokerProbe>,
    pid: Option<u32>,
    start_offset: Option<i64>,
    broker_start: Option<ProcSample>,
    tool_start: Option<ProcSample>,
    peak_rss_anon: Arc<AtomicU64>,
    sampler: Option<JoinHandle<()>>,
}

impl Monitor {
    /// Finds the broker (its route, and its pid unless given) before the window.
    pub async fn prepare(
        namesrv: &str,
        topic: &str,
        pid: Option<u32>,
        security: &SecurityArgs,
    ) -> Monitor {
        let probe = BrokerProbe::locate(namesrv, topic, security).await;
        let pid = pid.or_else(|| probe.as_ref().and_then(BrokerProbe::local_pid));
        Monitor {
            probe,
            pid,
            start_offset: None,
            broker_start: None,
            tool_start: None,
            peak_rss_anon: Arc::new(AtomicU64::new(0)),
            sampler: None,
        }
    }

    /// Starts the window: first readings, and a sampler of the broker's memory.
    pub async fn begin(&mut self) {
        self.start_offset = match &self.probe {
            Some(p) => p.commitlog_max_offset().await,
            None => None,
        };
        self.broker_start = self.pid.and_then(|p| procfs::sample(Some(p)).ok());
        self.peak_rss_anon.store(
            self.broker_start.map(|s| s.rss_anon_kib).unwrap_or(0),
            Ordering::Relaxed,
        );
        self.sampler = self.broker_start.and(self.pid).map(|pid| {
            let peak = self.peak_rss_anon.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(SAMPLE_EVERY);
                loop {
                    tick.tick().await;
                    match procfs::sample(Some(pid)) {
                        Ok(s) => {
                            peak.fetch_max(s.rss_anon_kib, Ordering::Relaxed);
                        }
                        Err(_) => return,
                    }
                }
            })
        });
        self.tool_start = procfs::sample(None).ok();
    }

    /// Ends the window.
    pub async fn finish(mut self) -> Figures {
        if let Some(s) = self.sampler.take() {
            s.abort();
        }
        let broker_end = self.pid.and_then(|p| procfs::sample(Some(p)).ok());
        if let Some(end) = broker_end {
            self.peak_rss_anon
                .fetch_max(end.rss_anon_kib, Ordering::Relaxed);
        }
        let end_offset = match &self.probe {
            Some(p) => p.commitlog_max_offset().await,
            None => None,
        };
        let tool_end = procfs::sample(None).ok();
        let (broker_ok, start, end) = match (self.broker_start, broker_end) {
            (Some(s), Some(e)) => (true, s, e),
            _ => (false, ProcSample::default(), ProcSample::default()),
        };
        Figures {
            broker_pid: self.pid.filter(|_| broker_ok),
            broker_addrs: self.probe.map(|p| p.addrs).unwrap_or_default(),
            broker_peak_rss_anon_kib: broker_ok.then(|| self.peak_rss_anon.load(Ordering::Relaxed)),
            broker_vm_hwm_kib: broker_ok.then_some(end.vm_hwm_kib),
            broker_cpu_secs: broker_ok.then(|| (end.cpu_secs - start.cpu_secs).max(0.0)),
            broker_disk_write_bytes: match (broker_ok, start.write_bytes, end.write_bytes) {
                (true, Some(s), Some(e)) => Some(e.saturating_sub(s)),
                _ => None,
            },
            store_bytes_written: match (self.start_offset, end_offset) {
                (Some(s), Some(e)) => Some(e - s),
                _ => None,
            },
            tool_cpu_secs: match (self.tool_start, tool_end) {
                (Some(s), Some(e)) => (e.cpu_secs - s.cpu_secs).max(0.0),
                _ => 0.0,
            },
            tool_peak_rss_kib: tool_end.map(|e| e.vm_hwm_kib).unwrap_or(0),
        }
    }
}
