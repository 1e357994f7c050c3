//! Store throughput bench: appends of 1 KiB messages (ASYNC_FLUSH from 1 and 8
//! tasks, SYNC_FLUSH from 64 concurrent writers) and a sequential read through the
//! consume queue. Prints the median of several runs. `ROLL` measures the latency of
//! each put (100,000 puts/s, 16 MiB commitlog files), and apart that of the puts that
//! opened a new file (what creating a file costs the put path).
//!
//! ```text
//! cargo run --release -p vostok-store --bin store_bench -- [messages] [runs] [dir] [only]
//! ```
//! `only` keeps the scenarios whose name starts with it (e.g. `SYNC`).
//! Defaults: 300000 messages per append run, 5 runs, a fresh directory under the
//! system temp dir for each run (removed afterwards).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use vostok_remoting::protocol::message::property::{
    push_pair, TAGS, UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
};
use vostok_store::{FlushDiskType, MessageInner, MessageStore, PutMessageStatus, StoreConfig};

const TOPIC: &str = "BenchTopic";
const QUEUES: i32 = 8;

fn message(n: u64, body: &Bytes) -> MessageInner {
    let mut properties = String::with_capacity(64);
    push_pair(&mut properties, TAGS, "TagA");
    push_pair(
        &mut properties,
        UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        &format!("7F0000010000{n:020X}"),
    );
    MessageInner {
        topic: TOPIC.to_owned(),
        queue_id: (n % QUEUES as u64) as i32,
        flag: 0,
        body: body.clone(),
        properties,
        tags_code: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: SocketAddr::from(([127, 0, 0, 1], 50000)),
        store_host: SocketAddr::from(([127, 0, 0, 1], 10911)),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn config(dir: &Path, flush: FlushDiskType) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        flush_disk_type: flush,
        ..Default::default()
    }
}

/// Appends `total` messages from `tasks` concurrent tasks; returns messages/s.
async fn append(store: &Arc<MessageStore>, total: u64, tasks: u64) -> f64 {
    let body = Bytes::from(vec![b'x'; 1024]);
    let start = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let store = Arc::clone(store);
        let body = body.clone();
        handles.push(tokio::spawn(async move {
            let mut n = t;
            while n < total {
                let r = store.put_message(message(n, &body)).await;
                assert_eq!(r.status, PutMessageStatus::PutOk, "put failed");
                n += tasks;
            }
        }));
    }
    for h in handles {
        h.await.expect("task");
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// Commitlog file size of the `ROLL` scenario: a new file every ~14,000 puts.
const ROLL_FILE: usize = 16 << 20;

/// Puts per second in the `ROLL` scenario: about what a broker takes from one
/// producer, so that a file lasts ~140 ms, as a 1 GiB file lasts seconds in production.
const ROLL_RATE: u32 = 100_000;

/// Puts `total` messages one after the other at [`ROLL_RATE`]; returns the latency
/// of every put and, apart, of those that landed at the start of a new commitlog file.
async fn put_latencies(store: &MessageStore, total: u64) -> (Vec<Duration>, Vec<Duration>) {
    let body = Bytes::from(vec![b'x'; 1024]);
    let (mut all, mut rolls) = (Vec::with_capacity(total as usize), Vec::new());
    let mut file = 0;
    let begin = Instant::now();
    let interval = Duration::from_secs(1) / ROLL_RATE;
    for n in 0..total {
        let due = begin + interval * n as u32;
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        let start = Instant::now();
        let r = store.put_message(message(n, &body)).await;
        let took = start.elapsed();
        let offset = r.append.expect("put failed").wrote_offset;
        all.push(took);
        if offset / ROLL_FILE as i64 != file {
            file = offset / ROLL_FILE as i64;
            rolls.push(took);
        }
    }
    (all, rolls)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).copied().unwrap_or_default()
}

/// The `ROLL` scenario: put latency percentiles, and those of the puts that rolled.
fn roll_scenario(rt: &tokio::runtime::Runtime, base: &Path, messages: u64, runs: usize) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for run in 0..runs {
        let dir = fresh_dir(base, "roll", run);
        let config = StoreConfig {
            mapped_file_size_commit_log: ROLL_FILE,
            ..config(&dir, FlushDiskType::AsyncFlush)
        };
        let store = MessageStore::open(config).expect("open store");
        let (mut all, mut rolls) = rt.block_on(put_latencies(&store, messages));
        let info = store.runtime_info();
        let on_append = info.get("commitLogFilesAllocatedOnAppend").cloned();
        store.shutdown();
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
        all.sort();
        rolls.sort();
        println!(
            "ROLL run {run}: all puts p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.0} us; \
             {} puts opening a file: median {:.0} max {:.0} us (files created on the put path: {})",
            us(percentile(&all, 0.5)),
            us(percentile(&all, 0.99)),
            us(percentile(&all, 0.999)),
            us(all.last().copied().unwrap_or_default()),
            rolls.len(),
            us(percentile(&rolls, 0.5)),
            us(rolls.last().copied().unwrap_or_default()),
            on_append.as_deref().unwrap_or("all"),
        );
    }
}

/// Reads every queue from offset 0 in pulls of 32; returns messages/s.
fn read_all(store: &MessageStore) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    for q in 0..QUEUES {
        let mut offset = 0;
        loop {
            let r = store.get_message(TOPIC, q, offset, 32, 0, None);
            if r.messages.is_empty() {
                break;
            }
            n += r.messages.len() as u64;
            offset = r.next_begin_offset;
        }
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// Median latency of a 1 KiB append + fdatasync in `dir`: what one group commit costs.
fn fdatasync_latency(dir: &Path) -> Duration {
    use std::io::Write;
    let _ = std::fs::create_dir_all(dir);
    let path = dir.join("fdatasync-probe");
    let mut lat = Vec::new();
    if let Ok(mut f) = std::fs::File::create(&path) {
        for _ in 0..101 {
            let start = Instant::now();
            if f.write_all(&[b'x'; 1024])
                .and_then(|()| f.sync_data())
                .is_err()
            {
                break;
            }
            lat.push(start.elapsed());
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    lat.sort();
    lat.get(lat.len() / 2).copied().unwrap_or_default()
}

/// `RssAnon` of this process, from /proc.
fn rss_anon() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("RssAnon:"))
                .map(|l| l.trim_start_matches("RssAnon:").trim().to_owned())
        })
        .unwrap_or_else(|| "?".to_owned())
}

/// CPU time (user + system) this process has used so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn fresh_dir(base: &Path, name: &str, run: usize) -> PathBuf {
    let dir = base.join(format!(
        "vostok-store-bench-{}-{name}-{run}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let messages: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let runs: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let base = args
        .get(3)
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "{messages} messages of 1 KiB per run, {runs} runs, data under {}",
        base.display()
    );
    println!(
        "fdatasync of a 1 KiB append here: median {:?}",
        fdatasync_latency(&fresh_dir(&base, "probe", 0))
    );
    let scenarios: [(&str, FlushDiskType, u64); 3] = [
        ("ASYNC_FLUSH, 1 task", FlushDiskType::AsyncFlush, 1),
        ("ASYNC_FLUSH, 8 tasks", FlushDiskType::AsyncFlush, 8),
        ("SYNC_FLUSH, 64 writers", FlushDiskType::SyncFlush, 64),
    ];
    let mut reads = Vec::new();
    let only = args.get(4).cloned().unwrap_or_default();
    if "ROLL".starts_with(only.as_str()) {
        roll_scenario(&rt, &base, messages, runs);
    }
    for (name, flush, tasks) in scenarios {
        if !name.starts_with(only.as_str()) {
            continue;
        }
        let mut results = Vec::new();
        let mut cpus = Vec::new();
        for run in 0..runs {
            let dir = fresh_dir(&base, &name.replace([' ', ','], ""), run);
            let store = MessageStore::open(config(&dir, flush)).expect("open store");
            if run == 0 && tasks == 1 {
                println!("RssAnon with an idle, freshly opened store: {}", rss_anon());
            }
            let cpu = cpu_time();
            let rate = rt.block_on(append(&store, messages, tasks));
            // Let the dispatcher finish too: its work is part of the cost of a put.
            assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(60)));
            cpus.push((cpu_time() - cpu).as_secs_f64() * 1e6 / messages as f64);
            results.push(rate);
            if flush == FlushDiskType::SyncFlush {
                let info = store.runtime_info();
                let get = |k: &str| info.get(k).cloned().unwrap_or_default();
                println!(
                    "  group commit: {} rounds, {} writers served, average sync {} us",
                    get("groupCommitRounds"),
                    get("groupCommitWaiters"),
                    get("groupCommitAvgSyncMicros")
                );
            }
            if tasks == 8 {
                assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(60)));
                reads.push(read_all(&store));
            }
            store.shutdown();
            drop(store);
            let _ = std::fs::remove_dir_all(&dir);
        }
        let list: Vec<String> = results.iter().map(|r| format!("{r:.0}")).collect();
        println!(
            "{name:<24} median {:>9.0} msg/s   runs: {}   (CPU per message {:.2} us)",
            median(results),
            list.join(" "),
            median(cpus)
        );
    }
    if reads.is_empty() {
        return;
    }
    let list: Vec<String> = reads.iter().map(|r| format!("{r:.0}")).collect();
    println!(
        "{:<24} median {:>9.0} msg/s   runs: {}",
        "read via consume queue",
        median(reads),
        list.join(" ")
    );
}
