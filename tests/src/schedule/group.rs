//! The group under test, each process on its own host ([`crate::netns`]) and each
//! broker's store on its own tmpfs: starting it, telling who is master now, whether
//! it is healthy; the faults themselves are in `faults`.

mod faults;

use std::fmt;
use std::time::{Duration, Instant};

use vostok_remoting::protocol::header::{GetMetaDataResponseHeader, TopicRequestHeader};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};

use super::disk::Tmpfs;
use super::plan::{GroupKind, Target};
use crate::client::TestClient;
use crate::controller::{self, runtime_info, CONTROLLER_PORT};
use crate::netns::{HostBroker, HostNamesrv, Network};
use crate::BrokerOptions;
pub(super) use faults::Injected;
use faults::State;

pub(super) const TOPIC: &str = "ScheduleTopic";
pub(super) const QUEUES: i32 = 4;
/// How long a starting group may take to have a master that takes sends.
const READY_LIMIT: Duration = Duration::from_secs(60);

/// One process of the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Proc {
    Broker(usize),
    Coordinator(usize),
}

impl fmt::Display for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proc::Broker(i) => write!(f, "broker{i}"),
            Proc::Coordinator(i) => write!(f, "namesrv{i}"),
        }
    }
}

pub(super) struct Group {
    pub kind: GroupKind,
    /// The name servers, `ip:port;...`.
    pub namesrv: String,
    // Processes before the file systems that hold their stores: fields drop in order.
    brokers: Vec<Option<HostBroker>>,
    coordinators: Vec<Option<HostNamesrv>>,
    broker_state: Vec<State>,
    coordinator_state: Vec<State>,
    disks: Vec<Tmpfs>,
    _stores: Vec<tempfile::TempDir>,
    rpc: RemotingClient,
    /// The master when last asked.
    master: usize,
}

/// Settings of every broker of both kinds: small files, so that a store fits a
/// small tmpfs, and quick timeouts, so that a fault shows in seconds.
fn common(options: BrokerOptions) -> BrokerOptions {
    options
        .set("mappedFileSizeCommitLog", 32 << 20)
        .set("mappedFileSizeConsumeQueue", 60_000 * 20)
        .set("maxIndexNum", 100_000)
        .set("maxHashSlotNum", 20_000)
        .set("syncFlushTimeout", 2000)
        .set("registerBrokerTimeoutMills", 6000)
        // RocketMQ's floor: a restarted name server knows a broker again within 10 s.
        .set("registerNameServerPeriod", 10000)
}

impl Group {
    /// Starts the group on `net` (hosts named after `label`), the topic created and
    /// known to every broker and to the name servers.
    pub(super) async fn start(
        net: &Network,
        kind: GroupKind,
        label: &str,
        disk_mib: u64,
    ) -> Result<Group, String> {
        let disks = (0..kind.brokers())
            .map(|i| Tmpfs::mount(&format!("{label}-b{i}"), disk_mib))
            .collect::<Result<Vec<_>, _>>()?;
        let mut group = tokio::task::block_in_place(|| match kind {
            GroupKind::Classic => Self::start_classic(net, label, disks),
            GroupKind::Controller => Self::start_controller(net, label, disks),
        });
        group.master = group.wait_master().await?;
        group.create_topic().await?;
        Ok(group)
    }

    fn start_classic(net: &Network, label: &str, disks: Vec<Tmpfs>) -> Group {
        let ns = net.host(&format!("{label}-ns")).spawn_namesrv();
        let brokers = [("SYNC_MASTER", "m"), ("SLAVE", "s")]
            .iter()
            .enumerate()
            .map(|(id, (role, suffix))| {
                let host = net.host(&format!("{label}-{suffix}"));
                let options = BrokerOptions {
                    namesrv: Some(ns.addr.clone()),
                    broker_name: "broker-a".into(),
                    ..Default::default()
                }
                .set("brokerId", id)
                .set("brokerRole", role)
                .set("haListenPort", 10912)
                .set("brokerIP1", host.ip());
                Some(host.spawn_broker_with_store(common(options), disks[id].store()))
            })
            .collect();
        let namesrv = ns.addr.clone();
        Self::assemble(GroupKind::Classic, namesrv, vec![Some(ns)], brokers, disks)
    }

    fn start_controller(net: &Network, label: &str, disks: Vec<Tmpfs>) -> Group {
        let cluster = controller::start_cluster_with(net, label, 3, |i, host, options| {
            host.spawn_broker_with_store(common(options), disks[i].store())
        });
        let mut group = Self::assemble(
            GroupKind::Controller,
            cluster.namesrv,
            cluster.namesrvs,
            cluster.brokers,
            disks,
        );
        group._stores = cluster.stores;
        group
    }

    fn assemble(
        kind: GroupKind,
        namesrv: String,
        coordinators: Vec<Option<HostNamesrv>>,
        brokers: Vec<Option<HostBroker>>,
        disks: Vec<Tmpfs>,
    ) -> Group {
        Group {
            kind,
            namesrv,
            broker_state: brokers.iter().map(|_| State::default()).collect(),
            coordinator_state: coordinators.iter().map(|_| State::default()).collect(),
            brokers,
            coordinators,
            disks,
            _stores: Vec::new(),
            rpc: controller::rpc(),
            master: 0,
        }
    }

    fn broker(&self, i: usize) -> &HostBroker {
        self.brokers[i]
            .as_ref()
            .expect("a broker slot is empty only during a restart")
    }

    fn coordinator(&self, i: usize) -> &HostNamesrv {
        self.coordinators[i]
            .as_ref()
            .expect("a name server slot is empty only during a restart")
    }

    /// Every broker's main address, in broker order.
    pub(super) fn broker_addrs(&self) -> Vec<String> {
        (0..self.brokers.len())
            .map(|i| self.broker(i).addr.clone())
            .collect()
    }

    /// The logs of every start of every process, by process.
    pub(super) fn logs(&self) -> Vec<(String, Vec<std::path::PathBuf>)> {
        (0..self.brokers.len())
            .map(|i| (Proc::Broker(i).to_string(), self.broker(i).logs()))
            .collect()
    }

    /// The master that takes sends: classic, broker 0; controller mode, the broker
    /// that says it is master with the highest epoch.
    async fn current_master(&self) -> Option<usize> {
        if self.kind == GroupKind::Classic {
            return Some(0);
        }
        let mut best: Option<(i64, usize)> = None;
        for i in 0..self.brokers.len() {
            let s = &self.broker_state[i];
            if s.down || s.paused > 0 || s.cut > 0 {
                continue;
            }
            let info = runtime_info(&self.rpc, &self.broker(i).addr).await;
            if info.get("brokerRole").map(String::as_str) != Some("SYNC_MASTER") {
                continue;
            }
            let epoch = info
                .get("masterEpoch")
                .and_then(|e| e.parse().ok())
                .unwrap_or(0);
            if best.is_none_or(|(e, _)| epoch > e) {
                best = Some((epoch, i));
            }
        }
        best.map(|(_, i)| i)
    }

    async fn wait_master(&self) -> Result<usize, String> {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Some(m) = self.current_master().await {
                if self.kind == GroupKind::Classic || self.full_sync_state_set(m).await {
                    return Ok(m);
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no master within {READY_LIMIT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn full_sync_state_set(&self, master: usize) -> bool {
        let info = runtime_info(&self.rpc, &self.broker(master).addr).await;
        info.get("syncStateSet")
            .is_some_and(|s| s.split(',').count() == self.brokers.len())
    }

    async fn create_topic(&self) -> Result<(), String> {
        let admin = TestClient::new("schedule-admin");
        let master = self.broker(self.master).addr.clone();
        let response = admin.create_topic(&master, TOPIC, QUEUES).await;
        if response.code != response_code::SUCCESS {
            return Err(format!("create {TOPIC}: {}", response.remark()));
        }
        let deadline = Instant::now() + READY_LIMIT;
        for addr in self.broker_addrs() {
            loop {
                let request = RemotingCommand::request_with_header(
                    request_code::GET_TOPIC_CONFIG,
                    &TopicRequestHeader {
                        topic: TOPIC.into(),
                    },
                );
                let known = self
                    .rpc
                    .invoke_sync(&addr, request, Duration::from_secs(1))
                    .await
                    .is_ok_and(|r| r.code == response_code::SUCCESS);
                if known {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("{addr} did not learn {TOPIC} in time"));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let ns = self.namesrv.split(';').next().unwrap_or_default();
        loop {
            let routed = admin.route(ns, TOPIC).await.is_some_and(|r| {
                r.broker_datas
                    .iter()
                    .any(|b| b.broker_addrs.contains_key(&0))
            });
            if routed {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("no route of {TOPIC} with a master in time"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The process that holds `target`'s role now. A broker or controller that is
    /// paused, cut off or down is not asked, and the last master known stands in when
    /// no broker says it is master.
    pub(super) async fn resolve(&mut self, target: Target) -> Proc {
        if let Some(m) = self.current_master().await {
            self.master = m;
        }
        let slaves: Vec<usize> = (0..self.brokers.len())
            .filter(|&i| i != self.master)
            .collect();
        match target {
            Target::Master => Proc::Broker(self.master),
            Target::Slave(n) => Proc::Broker(slaves[n as usize % slaves.len()]),
            Target::Coordinator(n) => Proc::Coordinator(n as usize % self.coordinators.len()),
            Target::CoordinatorLeader => {
                Proc::Coordinator(self.controller_leader().await.unwrap_or(0))
            }
        }
    }

    async fn controller_leader(&self) -> Option<usize> {
        if self.kind == GroupKind::Classic {
            return Some(0);
        }
        for i in 0..self.coordinators.len() {
            let s = &self.coordinator_state[i];
            if s.down || s.paused > 0 || s.cut > 0 {
                continue;
            }
            let addr = self.coordinator(i).host().addr(CONTROLLER_PORT);
            let request = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
            let Ok(response) = self
                .rpc
                .invoke_sync(&addr, request, Duration::from_secs(1))
                .await
            else {
                continue;
            };
            let leader = response
                .decode_header::<GetMetaDataResponseHeader>()
                .ok()
                .and_then(|m| m.controller_leader_address);
            if let Some(leader) = leader {
                return (0..self.coordinators.len())
                    .find(|&j| self.coordinator(j).host().addr(CONTROLLER_PORT) == leader);
            }
        }
        None
    }

    /// Healthy again: every process up, and the master's replicas in sync (classic:
    /// its slave in sync; controller mode: every broker in its SyncStateSet).
    pub(super) async fn healthy(&mut self) -> bool {
        let mut states = self.broker_state.iter().chain(&self.coordinator_state);
        if states.any(|s| s.down || s.paused > 0 || s.cut > 0) {
            return false;
        }
        let Some(master) = self.current_master().await else {
            return false;
        };
        self.master = master;
        match self.kind {
            GroupKind::Controller => self.full_sync_state_set(master).await,
            GroupKind::Classic => {
                let info = runtime_info(&self.rpc, &self.broker(master).addr).await;
                info.get("haInSyncSlaveNums").map(String::as_str) == Some("1")
            }
        }
    }

    /// Each broker's commitlog end and whether it has dispatched all of it, in broker
    /// order (`None`: no answer).
    pub(super) async fn ends(&self) -> Vec<Option<(i64, bool)>> {
        let mut out = Vec::new();
        for addr in self.broker_addrs() {
            let info = runtime_info(&self.rpc, &addr).await;
            out.push(
                info.get("commitLogMaxOffset")
                    .and_then(|v| v.parse().ok())
                    .map(|end| {
                        let dispatched =
                            info.get("dispatchBehindBytes").map(String::as_str) == Some("0");
                        (end, dispatched)
                    }),
            );
        }
        out
    }

    pub(super) fn rpc(&self) -> &RemotingClient {
        &self.rpc
    }
}
