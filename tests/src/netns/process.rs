//! `mqnamesrv` and `mqbroker` processes on a [`Host`]: started with
//! `ip netns exec`, waited for, logged and killed like every [`Process`].

use std::path::PathBuf;
use std::time::Duration;

use super::Host;
use crate::{broker_program, namesrv_program, BrokerOptions, Process};

/// The name server's default port.
const NAMESRV_PORT: u16 = 9876;
/// The broker's default `listenPort`.
const BROKER_PORT: u16 = 10911;

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The port at the end of `ip:port`.
fn port_of(addr: &str) -> Option<u16> {
    addr.rsplit(':').next()?.parse().ok()
}

/// A name server running on a host.
pub struct HostNamesrv {
    pub process: Process,
    /// `host-ip:port`, as clients and brokers reach it.
    pub addr: String,
    host: Host,
    settings: Vec<(String, String)>,
    dir: tempfile::TempDir,
}

impl HostNamesrv {
    pub(super) fn start(host: &Host, settings: &[(&str, &str)]) -> HostNamesrv {
        let settings = settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Self::start_in(host.clone(), settings, temp_dir())
    }

    fn start_in(
        host: Host,
        settings: Vec<(String, String)>,
        dir: tempfile::TempDir,
    ) -> HostNamesrv {
        let mut command = host.command(namesrv_program());
        command
            .arg("--kv-config-path")
            .arg(dir.path().join("kvConfig.json"))
            .args(["--set", &format!("listenPort={NAMESRV_PORT}")]);
        // Later settings win, so these may change the port.
        for (k, v) in &settings {
            command.args(["--set", &format!("{k}={v}")]);
        }
        let log = dir.path().join(format!("namesrv-{}.log", host.name()));
        let process = Process::start(command, log, "boot success");
        let port = port_of(&process.boot_line).expect("address at the end of the boot line");
        HostNamesrv {
            addr: host.addr(port),
            process,
            host,
            settings,
            dir,
        }
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    pub fn kill9(&mut self) {
        self.process.kill9();
    }

    /// Stops the name server (SIGKILL when `kill9`, else a clean shutdown) and starts
    /// it again on the same host, settings and KV file.
    pub fn restart(self, kill9: bool) -> HostNamesrv {
        let HostNamesrv {
            mut process,
            host,
            settings,
            dir,
            ..
        } = self;
        stop(&mut process, kill9);
        drop(process);
        Self::start_in(host, settings, dir)
    }
}

fn stop(process: &mut Process, kill9: bool) {
    if kill9 {
        process.kill9();
    } else {
        assert!(
            process.terminate(Duration::from_secs(30)),
            "process {} did not stop in time",
            process.pid()
        );
    }
}

/// A broker running on a host, with a store that outlives restarts.
pub struct HostBroker {
    pub process: Process,
    /// `brokerIP1:listenPort`, the address it registers and clients use.
    pub addr: String,
    /// The name server addresses it registers with (`a;b`).
    pub namesrv: String,
    pub options: BrokerOptions,
    pub store_dir: PathBuf,
    host: Host,
    listen_port: u16,
    dir: tempfile::TempDir,
}

impl HostBroker {
    pub(super) fn start(host: &Host, options: BrokerOptions) -> HostBroker {
        let dir = temp_dir();
        let store_dir = dir.path().join("store");
        Self::start_in(host.clone(), options, dir, store_dir, None)
    }

    /// As [`HostBroker::start`], with the store at `store_dir` (a file system of the
    /// test's own, such as a small tmpfs).
    pub(super) fn start_with_store(
        host: &Host,
        options: BrokerOptions,
        store_dir: PathBuf,
    ) -> HostBroker {
        Self::start_in(host.clone(), options, temp_dir(), store_dir, None)
    }

    fn start_in(
        host: Host,
        options: BrokerOptions,
        dir: tempfile::TempDir,
        store_dir: PathBuf,
        listen_port: Option<u16>,
    ) -> HostBroker {
        let mut command = host.command(broker_program());
        let mut set = |k: &str, v: &str| {
            command.args(["-o", &format!("{k}={v}")]);
        };
        set("brokerName", &options.broker_name);
        set("brokerClusterName", &options.cluster);
        set("brokerIP1", &host.ip().to_string());
        set("listenPort", &BROKER_PORT.to_string());
        set("storePathRootDir", &store_dir.display().to_string());
        // 64 MiB commitlog files: each broker reserves its current file and the next.
        set("mappedFileSizeCommitLog", &(64 << 20).to_string());
        match &options.namesrv {
            Some(ns) => set("namesrvAddr", ns),
            None => {
                // Standalone: reachable from other hosts, embedded name server on 9876.
                set("bindAddress", "0.0.0.0");
                set("embeddedNamesrvPort", &NAMESRV_PORT.to_string());
            }
        }
        for (k, v) in &options.settings {
            set(k, v);
        }
        if let Some(port) = listen_port {
            set("listenPort", &port.to_string());
        }
        let log = dir.path().join(format!(
            "broker-{}-{}-{}.log",
            options.broker_name,
            host.name(),
            rand::random::<u32>()
        ));
        let process = Process::start(command, log, "boot success");
        let line = process.boot_line.clone();
        let addr = line
            .split_once(", ")
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(addr, _)| addr.to_owned())
            .expect("broker address in the boot line");
        let namesrv = match &options.namesrv {
            Some(ns) => ns.clone(),
            None => host.addr(port_of(&line).expect("name server port in the boot line")),
        };
        HostBroker {
            listen_port: port_of(&addr).expect("port in the broker address"),
            addr,
            namesrv,
            options,
            store_dir,
            host,
            process,
            dir,
        }
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The port the broker listens on; the HA port is `haListenPort`, by default one
    /// above it.
    pub fn listen_port(&self) -> u16 {
        self.listen_port
    }

    pub fn kill9(&mut self) {
        self.process.kill9();
    }

    /// The logs of every start of this broker, oldest first.
    pub fn logs(&self) -> Vec<PathBuf> {
        let mut logs: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .map(|p| {
                let created = std::fs::metadata(&p)
                    .and_then(|m| m.created().or_else(|_| m.modified()))
                    .unwrap_or(std::time::UNIX_EPOCH);
                (created, p)
            })
            .collect();
        logs.sort();
        logs.into_iter().map(|(_, p)| p).collect()
    }

    /// Stops the broker (SIGKILL when `kill9`, else a clean shutdown) and starts it
    /// again on the same host, store and port.
    pub fn restart(self, kill9: bool) -> HostBroker {
        let HostBroker {
            mut process,
            options,
            store_dir,
            host,
            listen_port,
            dir,
            ..
        } = self;
        stop(&mut process, kill9);
        drop(process);
        Self::start_in(host, options, dir, store_dir, Some(listen_port))
    }
}
