//! The processes under test: the release `mqnamesrv` and `mqbroker` started from a
//! binary directory, in temp directories, on loopback ports chosen here so that a
//! restarted broker comes back on the same ones; their memory read from `/proc`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a process may take to print its boot line.
const BOOT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where `mqbroker` and `mqnamesrv` are.
#[derive(Clone, Debug)]
pub struct Binaries {
    pub dir: PathBuf,
}

impl Binaries {
    pub fn check(&self) -> Result<(), String> {
        for name in ["mqbroker", "mqnamesrv"] {
            let path = self.dir.join(name);
            if !path.exists() {
                return Err(format!(
                    "{} not found: build it with `cargo build --release`",
                    path.display()
                ));
            }
        }
        Ok(())
    }
}

/// A port free on 127.0.0.1 right now (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral loopback port")
}

/// A child that printed its boot line; killed on drop.
pub struct Process {
    child: Option<Child>,
    pub log: PathBuf,
    pub boot_line: String,
}

impl Process {
    /// Starts `program` and waits for its boot line; blocks (off the async workers).
    fn start(
        program: &Path,
        args: &[String],
        log: PathBuf,
        ready: &str,
    ) -> Result<Process, String> {
        tokio::task::block_in_place(|| Self::start_blocking(program, args, log, ready))
    }

    fn start_blocking(
        program: &Path,
        args: &[String],
        log: PathBuf,
        ready: &str,
    ) -> Result<Process, String> {
        let log_file =
            std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = Command::new(program)
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("CHAOS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        let ready = ready.to_owned();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref().map_while(Result::ok) {
                if line.contains(&ready) {
                    let _ = tx.send(line);
                    break;
                }
            }
            // Keep draining so that the child never blocks on a full pipe.
            for _ in lines {}
        });
        let mut process = Process {
            child: Some(child),
            log,
            boot_line: String::new(),
        };
        match rx.recv_timeout(BOOT_TIMEOUT) {
            Ok(line) => {
                process.boot_line = line;
                Ok(process)
            }
            Err(_) => Err(format!(
                "{} did not boot within {BOOT_TIMEOUT:?}; log {}:\n{}",
                program.display(),
                process.log.display(),
                tail(&process.log)
            )),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The last lines of a log, for error messages.
pub fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A kilobyte figure of `/proc/<pid>/status` (`RssAnon`, `VmRSS`), in bytes.
pub fn proc_status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub struct Namesrv {
    /// Held: dropping it kills the name server.
    _process: Process,
    pub addr: String,
}

impl Namesrv {
    pub fn start(bins: &Binaries, dir: &Path) -> Result<Namesrv, String> {
        Self::start_with(bins, dir, &[])
    }

    /// A name server with extra `namesrv.conf` keys.
    pub fn start_with(
        bins: &Binaries,
        dir: &Path,
        settings: &[(&str, &str)],
    ) -> Result<Namesrv, String> {
        let port = free_port();
        let mut args = vec![
            "--listen-port".to_owned(),
            port.to_string(),
            "--bind-address".to_owned(),
            "127.0.0.1".to_owned(),
            "--kv-config-path".to_owned(),
            dir.join("kvConfig.json").display().to_string(),
        ];
        for (k, v) in settings {
            args.push("-o".to_owned());
            args.push(format!("{k}={v}"));
        }
        let process = Process::start(
            &bins.dir.join("mqnamesrv"),
            &args,
            dir.join("namesrv.log"),
            "boot success",
        )?;
        Ok(Namesrv {
            _process: process,
            addr: format!("127.0.0.1:{port}"),
        })
    }
}

/// A broker with its own store directory and ports, which outlive restarts.
pub struct Broker {
    pub process: Process,
    pub addr: String,
    bins: Binaries,
    dir: PathBuf,
    settings: Vec<(String, String)>,
    starts: u32,
}

impl Broker {
    /// Starts `mqbroker` registered with `namesrv`, its store under `dir/store`
    /// (unless `settings` names `storePathRootDir`), with `settings` as `-o` keys.
    pub fn start(
        bins: &Binaries,
        dir: &Path,
        namesrv: &str,
        settings: &[(&str, String)],
    ) -> Result<Broker, String> {
        let port = free_port();
        let mut all: Vec<(String, String)> = vec![
            ("brokerIP1".into(), "127.0.0.1".into()),
            ("brokerIP2".into(), "127.0.0.1".into()),
            ("listenPort".into(), port.to_string()),
            ("haListenPort".into(), free_port().to_string()),
            ("fastListenEnable".into(), "false".into()),
            ("grpcServerPort".into(), free_port().to_string()),
            ("namesrvAddr".into(), namesrv.to_owned()),
            (
                "storePathRootDir".into(),
                dir.join("store").display().to_string(),
            ),
        ];
        for (k, v) in settings {
            all.retain(|(key, _)| key != k);
            all.push(((*k).to_owned(), v.clone()));
        }
        Ok(Broker {
            process: Self::spawn(bins, dir, &all, 0)?,
            addr: format!("127.0.0.1:{port}"),
            bins: bins.clone(),
            dir: dir.to_path_buf(),
            settings: all,
            starts: 1,
        })
    }

    fn spawn(
        bins: &Binaries,
        dir: &Path,
        settings: &[(String, String)],
        n: u32,
    ) -> Result<Process, String> {
        let mut args = Vec::new();
        for (k, v) in settings {
            args.push("-o".to_owned());
            args.push(format!("{k}={v}"));
        }
        let name = settings
            .iter()
            .find(|(k, _)| k == "brokerName")
            .map_or("broker", |(_, v)| v.as_str());
        let id = settings
            .iter()
            .find(|(k, _)| k == "brokerId")
            .map_or("0", |(_, v)| v.as_str());
        // One log per start would be thousands of files over a kill loop: two, alternating.
        let log = dir.join(format!("{name}-{id}-{}.log", n % 2));
        Process::start(&bins.dir.join("mqbroker"), &args, log, "boot success")
    }

    /// SIGKILL.
    pub fn kill9(&mut self) {
        self.process.kill9();
    }

    /// Starts the killed (or stopped) broker again on the same store and ports.
    pub fn restart(&mut self) -> Result<Duration, String> {
        self.process.kill9();
        let started = Instant::now();
        self.process = Self::spawn(&self.bins, &self.dir, &self.settings, self.starts)?;
        self.starts += 1;
        Ok(started.elapsed())
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}
