//! Harness for tests that cross process boundaries: starts real `mqnamesrv` and
//! `mqbroker` processes in unique temp directories on ephemeral ports, waits for their
//! boot line, and kills them on drop. When a test fails, the child's log is printed.
//!
//! The processes run `vostok-test-broker` and `vostok-test-namesrv`: this crate's
//! builds of `mqbroker`'s and `mqnamesrv`'s command lines, so cargo rebuilds them
//! whenever the tests are built. A program outside `cargo test` (the chaos suite)
//! points the harness at other builds with [`use_programs`].

pub mod acl;
pub mod client;
pub mod console;
pub mod controller;
pub mod freeze;
pub mod http;
pub mod netns;
pub mod pki;
pub mod proxy;
pub mod python;
pub mod schedule;
pub mod sdk;
pub mod tier;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// How long a process may take to print its boot line.
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(30);

/// A loopback port free right now, for a setting that must be known before the
/// process starts (an HA port, a second broker's listen port).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Path of a workspace binary built alongside the running test.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} not found: it is built with this crate's tests",
        path.display()
    );
    path
}

/// The directory of `mqbroker` and `mqnamesrv` set by [`use_programs`].
static PROGRAMS: OnceLock<PathBuf> = OnceLock::new();

/// Runs the `mqbroker` and `mqnamesrv` found in `dir` (a release build) instead of
/// this crate's test builds, for every process started afterwards. Set once per
/// process; `false` when it was set already to another directory.
pub fn use_programs(dir: &Path) -> bool {
    PROGRAMS.get_or_init(|| dir.to_path_buf()) == dir
}

/// The broker program every harness starts.
pub fn broker_program() -> PathBuf {
    match PROGRAMS.get() {
        Some(dir) => dir.join("mqbroker"),
        None => binary("vostok-test-broker"),
    }
}

/// The name server program every harness starts.
pub fn namesrv_program() -> PathBuf {
    match PROGRAMS.get() {
        Some(dir) => dir.join("mqnamesrv"),
        None => binary("vostok-test-namesrv"),
    }
}

/// A child process that printed its boot line.
pub struct Process {
    child: Option<Child>,
    log: PathBuf,
    /// The line the process printed when ready.
    pub boot_line: String,
    /// What it printed before that line.
    pub early_lines: Vec<String>,
}

impl Process {
    fn spawn(program: &Path, args: &[String], log: PathBuf, ready: &str) -> Process {
        Self::spawn_with_env(program, args, &[], log, ready)
    }

    fn spawn_with_env(
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: PathBuf,
        ready: &str,
    ) -> Process {
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        Self::start(command, log, ready)
    }

    /// Runs `command` with its stderr in `log` and waits for a stdout line containing
    /// `ready`. `command` may wrap the program (`ip netns exec ns program ...`) as long
    /// as the wrapper execs it, so that [`Process::pid`] is the program's.
    pub fn start(mut command: Command, log: PathBuf, ready: &str) -> Process {
        let program = format!("{:?}", command.get_program());
        let log_file = std::fs::File::create(&log).expect("log file");
        let mut child = command
            .env(
                "RUST_LOG",
                std::env::var("VOSTOK_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        let ready = ready.to_owned();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let mut early = Vec::new();
            for line in lines.by_ref().map_while(Result::ok) {
                if line.contains(&ready) {
                    let _ = tx.send((line, early));
                    break;
                }
                early.push(line);
            }
            // Keep draining so the child never blocks on a full pipe.
            for _ in lines {}
        });
        let mut process = Process {
            child: Some(child),
            log,
            boot_line: String::new(),
            early_lines: Vec::new(),
        };
        match rx.recv_timeout(BOOT_TIMEOUT) {
            Ok((line, early)) => {
                process.boot_line = line;
                process.early_lines = early;
            }
            Err(_) => {
                let log = std::fs::read_to_string(&process.log).unwrap_or_default();
                panic!("{program} did not boot within {BOOT_TIMEOUT:?}; log:\n{log}");
            }
        }
        process
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// How the process ended, when it ended by itself (reaping it); `None` while it
    /// runs or once it was stopped here.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status)
    }

    /// The process's anonymous resident memory (`RssAnon` in `/proc/<pid>/status`):
    /// what its heap and stacks take, without the mapped commitlog's pages.
    pub fn rss_anon_bytes(&self) -> Option<u64> {
        rss_anon_bytes(self.pid())
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM (clean shutdown), waiting up to `timeout`; SIGKILL after that.
    pub fn terminate(&mut self, timeout: Duration) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// `RssAnon` of process `pid` in bytes (see [`Process::rss_anon_bytes`]).
pub fn rss_anon_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl Drop for Process {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("---- log of {} ----\n{}", self.log.display(), self.log());
        }
        self.kill9();
    }
}

/// A running `mqnamesrv`.
pub struct Namesrv {
    pub process: Process,
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Namesrv {
    pub fn start() -> Namesrv {
        Self::start_with(&[])
    }

    /// A name server with extra `namesrv.conf` keys (`-o key=value`).
    pub fn start_with(settings: &[(&str, &str)]) -> Namesrv {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut args = vec![
            "--listen-port".to_owned(),
            "0".to_owned(),
            "--bind-address".to_owned(),
            "127.0.0.1".to_owned(),
            "--kv-config-path".to_owned(),
            dir.path().join("kvConfig.json").display().to_string(),
        ];
        for (k, v) in settings {
            args.push("-o".to_owned());
            args.push(format!("{k}={v}"));
        }
        let process = Process::spawn(
            &namesrv_program(),
            &args,
            dir.path().join("namesrv.log"),
            "boot success",
        );
        let addr = process
            .boot_line
            .rsplit(' ')
            .next()
            .expect("address at the end of the boot line")
            .to_owned();
        Namesrv {
            process,
            addr,
            _dir: dir,
        }
    }
}

/// How to start a broker.
#[derive(Clone, Debug)]
pub struct BrokerOptions {
    /// Name servers; `None` runs the broker standalone with an embedded one.
    pub namesrv: Option<String>,
    pub broker_name: String,
    pub cluster: String,
    /// Extra `broker.conf` entries.
    pub settings: Vec<(String, String)>,
    /// Extra environment variables of the process (e.g. `ROCKETMQ_HOME`).
    pub env: Vec<(String, String)>,
}

impl Default for BrokerOptions {
    fn default() -> Self {
        BrokerOptions {
            namesrv: None,
            broker_name: "broker-a".to_owned(),
            cluster: "DefaultCluster".to_owned(),
            settings: Vec::new(),
            env: Vec::new(),
        }
    }
}

impl BrokerOptions {
    pub fn set(mut self, key: &str, value: impl ToString) -> Self {
        self.settings.push((key.to_owned(), value.to_string()));
        self
    }
}

/// A running `mqbroker` with its own store directory, which outlives restarts.
pub struct Broker {
    pub process: Process,
    /// `ip:port` clients use.
    pub addr: String,
    /// Name server address the broker registers with.
    pub namesrv: String,
    pub options: BrokerOptions,
    pub store_dir: PathBuf,
    /// `ip:port` of the gRPC endpoint (5.x clients), when enabled.
    pub grpc_addr: Option<String>,
    /// `ip:port` of `/metrics`, when `metricsExporterType=PROM`.
    pub metrics_addr: Option<String>,
    /// `ip:port` of the web console, when it is on.
    pub console_addr: Option<String>,
    listen_port: u16,
    embedded_namesrv_port: u16,
    grpc_port: u16,
    dir: tempfile::TempDir,
}

impl Broker {
    pub fn start(options: BrokerOptions) -> Broker {
        let dir = tempfile::tempdir().expect("temp dir");
        let store_dir = dir.path().join("store");
        Self::start_in(options, dir, store_dir, [0, 0, 0])
    }

    /// `ports`: listen, embedded name server and gRPC ports (0: a free one).
    fn start_in(
        options: BrokerOptions,
        dir: tempfile::TempDir,
        store_dir: PathBuf,
        ports: [u16; 3],
    ) -> Broker {
        let [listen_port, ns_port, grpc_port] = ports;
        let mut args = Vec::new();
        let mut set = |k: &str, v: String| {
            args.push("-o".to_owned());
            args.push(format!("{k}={v}"));
        };
        set("brokerName", options.broker_name.clone());
        set("brokerClusterName", options.cluster.clone());
        set("brokerIP1", "127.0.0.1".into());
        set("brokerIP2", "127.0.0.1".into());
        set("listenPort", listen_port.to_string());
        set("fastListenEnable", "false".into());
        set("grpcServerPort", grpc_port.to_string());
        set("storePathRootDir", store_dir.display().to_string());
        // Standalone brokers serve the web console: on a free port, many run at once;
        // so is the Prometheus endpoint of a test that turns it on.
        set("consolePort", "0".into());
        set("metricsPromExporterPort", "0".into());
        // 64 MiB commitlog files (their blocks reserved 4 MiB at a time): tests that
        // fill files roll them quickly, and many test brokers run at once.
        set("mappedFileSizeCommitLog", (64 << 20).to_string());
        match &options.namesrv {
            Some(ns) => set("namesrvAddr", ns.clone()),
            None => set("embeddedNamesrvPort", ns_port.to_string()),
        }
        for (k, v) in &options.settings {
            set(k, v.clone());
        }
        let log = dir
            .path()
            .join(format!("broker-{}.log", rand::random::<u32>()));
        let process =
            Process::spawn_with_env(&broker_program(), &args, &options.env, log, "boot success");
        let line = process.boot_line.clone();
        let addr = line
            .split_once(", ")
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(addr, _)| addr.to_owned())
            .expect("broker address in the boot line");
        let namesrv = line
            .rsplit(' ')
            .next()
            .expect("name server at the end of the boot line")
            .to_owned();
        let port = |a: &str| {
            a.rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0)
        };
        // `gRPC endpoint <ip:port> (...)`, printed before the boot line.
        let grpc_addr = process
            .early_lines
            .iter()
            .find_map(|l| l.strip_prefix("gRPC endpoint "))
            .and_then(|rest| rest.split(' ').next())
            .map(str::to_owned);
        // `Prometheus metrics on http://<ip:port>/metrics`, `Web console on http://<ip:port>/`.
        let http_addr = |prefix: &str| {
            process
                .early_lines
                .iter()
                .find_map(|l| l.strip_prefix(prefix))
                .and_then(|rest| rest.split('/').next())
                .map(str::to_owned)
        };
        let metrics_addr = http_addr("Prometheus metrics on http://");
        let console_addr = http_addr("Web console on http://");
        Broker {
            metrics_addr,
            console_addr,
            grpc_port: grpc_addr.as_deref().map(port).unwrap_or(0),
            grpc_addr,
            listen_port: port(&addr),
            embedded_namesrv_port: if options.namesrv.is_none() {
                port(&namesrv)
            } else {
                0
            },
            process,
            addr,
            namesrv,
            options,
            store_dir,
            dir,
        }
    }

    /// Stops the broker (SIGKILL when `kill9`, else a clean shutdown) and starts it again
    /// on the same store and ports.
    pub fn restart(self, kill9: bool) -> Broker {
        self.restart_with(kill9, |_| {})
    }

    /// [`Broker::restart`], running `between` on the store directory while the broker
    /// is down (to plant files a broker would have written).
    pub fn restart_with(self, kill9: bool, between: impl FnOnce(&Path)) -> Broker {
        let Broker {
            mut process,
            options,
            store_dir,
            dir,
            listen_port,
            embedded_namesrv_port,
            grpc_port,
            ..
        } = self;
        if kill9 {
            process.kill9();
        } else {
            assert!(
                process.terminate(Duration::from_secs(30)),
                "broker did not stop in time"
            );
        }
        drop(process);
        between(&store_dir);
        Self::start_in(
            options,
            dir,
            store_dir,
            [listen_port, embedded_namesrv_port, grpc_port],
        )
    }

    pub fn kill9(&mut self) {
        self.process.kill9();
    }
}
