//! Heap allocations per message on the send path, broker and SDK side by side.
//!
//! A standalone broker and an SDK producer run in this one process on loopback, each on
//! an async runtime of its own, under a counting allocator wrapped around mimalloc (the
//! allocator of `mqbroker` and `mqbench`). Every thread of the producer's runtime counts
//! as the client; every other thread (the broker's runtime, the store's threads) as the
//! broker. Each row sends a warm-up, then `--count` messages, and prints the allocations
//! and bytes each side asked for per message over the measured ones. Counts depend on
//! the code, not on the machine's load, so two builds compare by them exactly.
//!
//! ```sh
//! cargo bench -p vostok-tools --bench alloc_count
//! cargo bench -p vostok-tools --bench alloc_count -- --count 20000 --rows async
//! cargo bench --profile profiling -p vostok-tools --bench alloc_count -- --count 20000 --sites broker
//! ```
//!
//! `--sites broker|client` samples one allocation in `--sample` of that side with its
//! stack and prints the most frequent call paths through Vostok's code (use the
//! `profiling` profile: the release and bench profiles carry no symbols).
//!
//! Not a test: it asserts nothing and is run by hand (deploy/bench/README.md).

use std::alloc::{GlobalAlloc, Layout};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use mimalloc::MiMalloc;
use tokio::sync::Semaphore;
use vostok_broker::{Broker, BrokerConfig};
use vostok_client::{Message, Producer, ProducerConfig};

const BROKER: usize = 0;
const CLIENT: usize = 1;
const SIDES: [&str; 2] = ["broker", "client"];

struct Counter {
    allocs: AtomicU64,
    bytes: AtomicU64,
}

static COUNTS: [Counter; 2] = [
    Counter {
        allocs: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    },
    Counter {
        allocs: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    },
];

/// Which side samples stacks (`usize::MAX`: none) and one in how many allocations.
static SAMPLE_SIDE: AtomicU64 = AtomicU64::new(u64::MAX);
static SAMPLE_EVERY: AtomicU64 = AtomicU64::new(97);
static RANDOM: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
static SAMPLES: Mutex<Vec<Backtrace>> = Mutex::new(Vec::new());

thread_local! {
    /// The side this thread's allocations count for.
    static SIDE: Cell<usize> = const { Cell::new(BROKER) };
    /// Allocations of this thread until its next sample.
    static GAP: Cell<u64> = const { Cell::new(1) };
    /// Set while this thread records a sample (the recording allocates).
    static SAMPLING: Cell<bool> = const { Cell::new(false) };
}

/// mimalloc, counting each allocation (a `realloc` counts as one) for the thread's side.
struct Counting;

impl Counting {
    fn count(size: usize) {
        if SAMPLING.with(Cell::get) {
            return; // the sampler's own allocations
        }
        let side = SIDE.with(Cell::get);
        let c = &COUNTS[side];
        c.allocs.fetch_add(1, Relaxed);
        c.bytes.fetch_add(size as u64, Relaxed);
        if SAMPLE_SIDE.load(Relaxed) == side as u64 && Self::sample_now() {
            SAMPLING.with(|s| s.set(true));
            let bt = Backtrace::force_capture();
            if let Ok(mut samples) = SAMPLES.lock() {
                samples.push(bt);
            }
            SAMPLING.with(|s| s.set(false));
        }
    }
}

impl Counting {
    /// Whether to sample this allocation: one in `SAMPLE_EVERY` on average, at random
    /// gaps, so that a path allocating in a fixed cycle is not sampled in step with it.
    fn sample_now() -> bool {
        GAP.with(|gap| {
            let left = gap.get();
            if left > 1 {
                gap.set(left - 1);
                return false;
            }
            // xorshift64 over a process-wide state: gaps uniform in 1..2 * every.
            let mut x = RANDOM.load(Relaxed) | 1;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            RANDOM.store(x, Relaxed);
            gap.set(1 + x % (2 * SAMPLE_EVERY.load(Relaxed)));
            left == 1
        })
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::count(layout.size());
        MiMalloc.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::count(layout.size());
        MiMalloc.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::count(new_size);
        MiMalloc.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        MiMalloc.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn snapshot() -> [(u64, u64); 2] {
    [0, 1].map(|s| {
        (
            COUNTS[s].allocs.load(Relaxed),
            COUNTS[s].bytes.load(Relaxed),
        )
    })
}

struct Args {
    count: u64,
    warmup: u64,
    window: usize,
    batch: usize,
    size: usize,
    rows: Vec<String>,
    /// Header serialisation; the SDK's default when not given.
    serialize: Option<vostok_remoting::SerializeType>,
    sites: Option<usize>,
    sample: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        count: 100_000,
        warmup: 20_000,
        window: 1024,
        batch: 32,
        size: 1024,
        rows: vec!["async".into(), "batch".into(), "sync".into()],
        serialize: None,
        sites: None,
        sample: 97,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{v}: {e}"));
        match flag.as_str() {
            // What `cargo bench` passes to every bench target.
            "--bench" => {}
            "--count" => a.count = num(value()?)?.max(1),
            "--warmup" => a.warmup = num(value()?)?,
            "--window" => a.window = num(value()?)?.max(1) as usize,
            "--batch" => a.batch = num(value()?)?.max(1) as usize,
            "--size" => a.size = num(value()?)? as usize,
            "--sample" => a.sample = num(value()?)?.max(1),
            "--rows" => a.rows = value()?.split(',').map(str::to_owned).collect(),
            "--serialize-type" => {
                a.serialize = Some(match value()?.to_ascii_lowercase().as_str() {
                    "json" => vostok_remoting::SerializeType::Json,
                    "rocketmq" => vostok_remoting::SerializeType::RocketMq,
                    other => return Err(format!("--serialize-type json|rocketmq, not {other}")),
                })
            }
            "--sites" => {
                a.sites = Some(match value()?.as_str() {
                    "broker" => BROKER,
                    "client" => CLIENT,
                    other => return Err(format!("--sites broker|client, not {other}")),
                })
            }
            other => {
                return Err(format!(
                    "unknown argument {other}; flags: --count N --warmup N --window N \
                     --batch N --size BYTES --rows async,batch,sync \
                     --serialize-type json|rocketmq --sites broker|client --sample N"
                ))
            }
        }
    }
    Ok(a)
}

/// Sends `n` messages the way `mqbench produce` does in the row's mode.
async fn send(producer: &Producer, row: &str, args: &Args, body: &Bytes, n: u64) {
    match row {
        "async" => {
            // mqbench's async loop: a window of permits, a callback per send.
            let permits = Arc::new(Semaphore::new(args.window));
            let failed = Arc::new(AtomicU64::new(0));
            for _ in 0..n {
                let permit = permits.clone().acquire_owned().await.expect("open");
                let failed = failed.clone();
                producer
                    .send_with_callback(Message::new(TOPIC, body.clone()), move |r| {
                        if r.is_err() {
                            failed.fetch_add(1, Relaxed);
                        }
                        drop(permit);
                    })
                    .await
                    .expect("queued");
            }
            let _all = permits.acquire_many(args.window as u32).await;
            assert_eq!(failed.load(Relaxed), 0, "every send stored");
        }
        "batch" => {
            let mut sent = 0;
            while sent < n {
                let k = (n - sent).min(args.batch as u64);
                let msgs: Vec<Message> =
                    (0..k).map(|_| Message::new(TOPIC, body.clone())).collect();
                producer.send_batch(msgs).await.expect("stored");
                sent += k;
            }
        }
        "sync" => {
            for _ in 0..n {
                producer
                    .send(Message::new(TOPIC, body.clone()))
                    .await
                    .expect("stored");
            }
        }
        other => panic!("unknown row {other} (async, batch, sync)"),
    }
}

const TOPIC: &str = "AllocCountTopic";

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let broker_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("broker")
        .enable_all()
        .build()
        .expect("broker runtime");
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name("client")
        .on_thread_start(|| SIDE.with(|s| s.set(CLIENT)))
        .enable_all()
        .build()
        .expect("client runtime");

    let mut config = BrokerConfig::loopback("alloc-count", dir.path().join("store"));
    config.store.mapped_file_size_commit_log = 256 * 1024 * 1024;
    let broker = broker_rt
        .block_on(Broker::start(config))
        .expect("broker starts");
    let namesrv = broker.namesrv_addr();

    SIDE.with(|s| s.set(CLIENT));
    let body = Bytes::from(vec![b'x'; args.size]);
    let serialize = args
        .serialize
        .unwrap_or_else(vostok_client::instance::config::serialize_type_from_env);
    println!(
        "allocations per message, {} B bodies, {} headers, {} measured after {} warm-up",
        args.size,
        match serialize {
            vostok_remoting::SerializeType::Json => "JSON",
            vostok_remoting::SerializeType::RocketMq => "ROCKETMQ",
        },
        args.count,
        args.warmup
    );
    println!(
        "{:<22} {:>14} {:>14} {:>14} {:>14} {:>10}",
        "row", "broker allocs", "broker bytes", "client allocs", "client bytes", "msg/s"
    );
    client_rt.block_on(async {
        let mut pc = ProducerConfig::new("AllocCountGroup", &namesrv);
        pc.default_topic_queue_nums = 8;
        pc.compress_msg_body_over_howmuch = usize::MAX;
        pc.back_pressure_for_async_send_num = args.window;
        pc.client.remoting.connection.serialize_type = serialize;

        let producer = Producer::new(pc);
        producer.start().await.expect("producer starts");
        for row in &args.rows {
            send(&producer, row, &args, &body, args.warmup.max(1)).await;
            if let Some(side) = args.sites {
                SAMPLE_EVERY.store(args.sample, Relaxed);
                SAMPLE_SIDE.store(side as u64, Relaxed);
            }
            let before = snapshot();
            let started = Instant::now();
            send(&producer, row, &args, &body, args.count).await;
            let elapsed = started.elapsed().as_secs_f64();
            let after = snapshot();
            SAMPLE_SIDE.store(u64::MAX, Relaxed);
            let per = |side: usize, i: usize| {
                let d = if i == 0 {
                    after[side].0 - before[side].0
                } else {
                    after[side].1 - before[side].1
                };
                d as f64 / args.count as f64
            };
            let name = match row.as_str() {
                "batch" => format!("batch x{}", args.batch),
                "async" => format!("async window {}", args.window),
                other => other.to_owned(),
            };
            println!(
                "{:<22} {:>14.2} {:>14.0} {:>14.2} {:>14.0} {:>10.0}",
                name,
                per(BROKER, 0),
                per(BROKER, 1),
                per(CLIENT, 0),
                per(CLIENT, 1),
                args.count as f64 / elapsed
            );
            if let Some(side) = args.sites {
                print_sites(SIDES[side], args.sample);
            }
        }
        producer.shutdown().await;
    });
    broker_rt.block_on(broker.shutdown());
}

/// The sampled stacks, grouped by their frames in Vostok's crates, most frequent first.
fn print_sites(side: &str, every: u64) {
    let samples = std::mem::take(&mut *SAMPLES.lock().expect("samples"));
    let mut paths: HashMap<String, u64> = HashMap::new();
    for bt in &samples {
        let text = bt.to_string();
        let mut frames = Vec::new();
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let Some((_, name)) = line.trim().split_once(": ") else {
                continue;
            };
            let at = lines
                .peek()
                .filter(|l| l.trim_start().starts_with("at "))
                .map(|l| l.trim().trim_start_matches("at ").to_owned());
            // Frames of this workspace's code only (not the standard library's nor a
            // dependency's), as `function (crate/src/file.rs:line)`.
            let Some(at) = at.filter(|a| !a.contains("/rustc/") && !a.contains("/.cargo/")) else {
                continue;
            };
            if name.contains("alloc_count::") || at.contains("examples/alloc_count") {
                continue;
            }
            let file = at.rsplit_once("/src/").map_or(at.as_str(), |(head, f)| {
                let krate = head.rsplit('/').next().unwrap_or("");
                &at[at.len() - f.len() - krate.len() - 5..]
            });
            let name = match name.strip_prefix('<').and_then(|n| n.split_once(">::")) {
                Some((inner, rest)) => {
                    format!("{}::{rest}", inner.split(" as ").next().unwrap_or(inner))
                }
                None => name.to_owned(),
            };
            let function = name
                .split('<')
                .next()
                .unwrap_or(&name)
                .trim_end_matches("::{{closure}}")
                .rsplit("::")
                .take(2)
                .collect::<Vec<_>>();
            let function = function
                .iter()
                .rev()
                .cloned()
                .collect::<Vec<_>>()
                .join("::");
            frames.push(format!("{function} ({file})"));
            if frames.len() == 4 {
                break;
            }
        }
        let key = if frames.is_empty() {
            "(outside Vostok's code)".to_owned()
        } else {
            frames.join("\n      < ")
        };
        *paths.entry(key).or_default() += 1;
    }
    let mut paths: Vec<_> = paths.into_iter().collect();
    paths.sort_by_key(|p| std::cmp::Reverse(p.1));
    println!(
        "\n{side}: {} sampled allocations (1 in {every}), by call path",
        samples.len()
    );
    for (path, n) in paths.iter().take(40) {
        println!(
            "{:>6.1} %  {path}",
            100.0 * *n as f64 / samples.len().max(1) as f64
        );
    }
    println!();
}
