//! Vostok's chaos suite: the release `mqbroker` and `mqnamesrv` under SIGKILL loops, a
//! full disk, floods and a paused consumer on loopback, and randomized fault schedules
//! on network-namespace hosts; each scenario prints what it checked and its figures,
//! and the run ends with a Markdown table of them.
//!
//! ```text
//! vostok-chaos [--bins DIR] [--only a,b,...] [--cycles N] [--pause-secs S]
//!              [--producers N] [--commitlog-mib N] [--master-kills N] [--work DIR]
//!              [--max-memory-mib N] [--seed N] [--minutes N] [--episodes A..B]
//!              [--rate N] [--disk-mib N]
//! ```
//!
//! Scenarios: `kill-loop`, `disk-full` (root: mounts a tmpfs), `floods`, `paused`,
//! `master-kill`, `schedule-classic` and `schedule-controller` (root: network
//! namespaces and tmpfs; `--minutes` of episodes of `--seed`, or just `--episodes`).
//! Exit status 1 when any scenario failed its check.

mod disk_full;
mod floods;
mod kill_loop;
mod ledger;
mod load;
mod master_kill;
mod paused;
mod probe;
mod process;
mod raw;
mod rss;
mod schedule;

use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use process::Binaries;
use vostok_tests::schedule::GroupKind;

/// Settings every scenario reads.
pub struct Env {
    pub bins: Binaries,
    pub work: PathBuf,
    pub cycles: usize,
    pub pause_secs: u64,
    pub producers: usize,
    pub commitlog_file: usize,
    pub master_kills: usize,
    /// `maxMemoryBytes` given to the flooded broker (`--max-memory-mib 0`: the broker's
    /// own default, a quarter of the machine's memory).
    pub memory_ceiling: Option<u64>,
    /// The schedules' seed (`None`: a random one, printed).
    pub seed: Option<u64>,
    /// How long a schedule starts new episodes.
    pub minutes: u64,
    /// The episodes a schedule plays instead (a replay).
    pub episodes: Option<Range<u32>>,
    /// A schedule's sends per second.
    pub rate: u32,
    /// The tmpfs of each broker of a schedule.
    pub disk_mib: u64,
}

impl Env {
    /// A fresh directory for one scenario, removed when dropped.
    pub fn scratch(&self, name: &str) -> Result<tempfile::TempDir, String> {
        std::fs::create_dir_all(&self.work).map_err(|e| format!("{}: {e}", self.work.display()))?;
        tempfile::Builder::new()
            .prefix(&format!("chaos-{name}-"))
            .tempdir_in(&self.work)
            .map_err(|e| format!("temp dir: {e}"))
    }
}

/// What a scenario checked and measured.
pub struct Outcome {
    pub name: &'static str,
    pub checked: String,
    pub figures: Vec<(String, String)>,
    pub passed: bool,
}

const ALL: [&str; 7] = [
    "kill-loop",
    "disk-full",
    "floods",
    "paused",
    "master-kill",
    "schedule-classic",
    "schedule-controller",
];

fn usage() -> ! {
    eprintln!(
        "usage: vostok-chaos [--bins DIR] [--only {}] [--cycles N] [--pause-secs S] \
         [--producers N] [--commitlog-mib N] [--master-kills N] [--work DIR] \
         [--max-memory-mib N] [--seed N] [--minutes N] [--episodes A..B] [--rate N] \
         [--disk-mib N]",
        ALL.join(",")
    );
    std::process::exit(2)
}

fn parse_args() -> (Env, Vec<String>) {
    let mut env = Env {
        bins: Binaries {
            dir: PathBuf::from("target/release"),
        },
        work: std::env::temp_dir(),
        cycles: 100,
        pause_secs: 30,
        producers: 4,
        commitlog_file: 4 << 20,
        master_kills: 5,
        memory_ceiling: Some(512 << 20),
        seed: None,
        minutes: 3,
        episodes: None,
        rate: 200,
        disk_mib: 512,
    };
    let mut only: Vec<String> = ALL.iter().map(|s| s.to_string()).collect();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        let number = |v: String| v.parse::<usize>().unwrap_or_else(|_| usage());
        match flag.as_str() {
            "--bins" => env.bins.dir = PathBuf::from(value()),
            "--work" => env.work = PathBuf::from(value()),
            "--only" => only = value().split(',').map(str::to_owned).collect(),
            "--cycles" => env.cycles = number(value()),
            "--pause-secs" => env.pause_secs = number(value()) as u64,
            "--producers" => env.producers = number(value()).max(1),
            "--commitlog-mib" => env.commitlog_file = number(value()).max(1) << 20,
            "--master-kills" => env.master_kills = number(value()),
            "--max-memory-mib" => {
                env.memory_ceiling = Some((number(value()) as u64) << 20).filter(|&c| c > 0)
            }
            "--seed" => env.seed = Some(value().parse().unwrap_or_else(|_| usage())),
            "--minutes" => env.minutes = number(value()) as u64,
            "--episodes" => env.episodes = Some(episodes(&value()).unwrap_or_else(|| usage())),
            "--rate" => env.rate = number(value()).max(1) as u32,
            "--disk-mib" => env.disk_mib = number(value()).max(64) as u64,
            _ => usage(),
        }
    }
    if only.iter().any(|s| !ALL.contains(&s.as_str())) {
        usage();
    }
    (env, only)
}

/// `A..B`, not empty.
fn episodes(text: &str) -> Option<Range<u32>> {
    let (first, end) = text.split_once("..")?;
    Some(first.parse().ok()?..end.parse().ok()?).filter(|r| !r.is_empty())
}

/// Raises the open-file limit (the connection flood needs thousands); the brokers
/// started later inherit it.
fn raise_nofile() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: get/setrlimit on this process with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max.min(65_536);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

async fn run_one(env: &Env, name: &str) -> Result<Outcome, String> {
    match name {
        "kill-loop" => kill_loop::run(env).await,
        "disk-full" => disk_full::run(env).await,
        "floods" => floods::run(env).await,
        "paused" => paused::run(env).await,
        "master-kill" => master_kill::run(env).await,
        "schedule-classic" => schedule::run(env, GroupKind::Classic).await,
        "schedule-controller" => schedule::run(env, GroupKind::Controller).await,
        _ => unreachable!("names are checked in parse_args"),
    }
}

fn main() {
    let (env, only) = parse_args();
    if let Err(e) = env.bins.check() {
        eprintln!("{e}");
        std::process::exit(2);
    }
    raise_nofile();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut rows = Vec::new();
    let mut failed = false;
    for name in &only {
        println!("== {name}");
        let started = Instant::now();
        let outcome = runtime.block_on(run_one(&env, name));
        match outcome {
            Ok(o) => {
                println!("   checked: {}", o.checked);
                for (k, v) in &o.figures {
                    println!("   {k}: {v}");
                }
                println!(
                    "   {} in {:.0} s",
                    if o.passed { "PASSED" } else { "FAILED" },
                    started.elapsed().as_secs_f64()
                );
                failed |= !o.passed;
                let figures: Vec<String> =
                    o.figures.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                rows.push(format!(
                    "| {} | {} | {} |",
                    o.name,
                    figures.join("; "),
                    if o.passed { "passed" } else { "FAILED" }
                ));
            }
            Err(e) => {
                println!("   ERROR: {e}");
                failed = true;
                rows.push(format!("| {name} | error: {e} | FAILED |"));
            }
        }
    }
    println!("\n| scenario | figures | result |\n|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    std::process::exit(i32::from(failed));
}
