//! The producer side: `-w` tasks sharing one SDK producer, each in its mode (sync,
//! async with a window, oneway, batch), each with its own latency histogram, error
//! tally and (for `e2e`) acknowledged-sequence bitmap, merged when the run ends.
//!
//! Bodies: one shared buffer for `produce` (no per-message copy); for `e2e` a copy of
//! it per message with the [`Stamp`] written in front.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use hdrhistogram::Histogram;
use tokio::sync::Semaphore;
use vostok_client::{ClientError, Compression, Message, Producer, ProducerConfig};
use vostok_remoting::support::sync::MutexExt;

use super::args::{CommonArgs, Mode, ProducerArgs};
use super::histogram::{self, new_histogram};
use super::meter::{Meter, RunState};
use super::rate::Pacer;
use super::sequence::{now_micros, AckedSet, Stamp};
use super::{error_kind, BenchError};

/// What every producer task shares.
pub struct ProducerSide {
    pub producer: Producer,
    pub topic: String,
    pub body: Bytes,
    pub args: ProducerArgs,
    /// `e2e`: stamp bodies with this run id.
    pub stamp_run: Option<u32>,
    pub meter: Arc<Meter>,
    pub state: Arc<RunState>,
}

/// What one task hands back.
pub struct TaskResult {
    pub latency: Histogram<u64>,
    pub errors: BTreeMap<String, u64>,
    pub acked: AckedSet,
}

/// A body of `size` bytes of text: words drawn from a small vocabulary, so that it
/// compresses (about 2:1 with LZ4) like real text payloads do under `--compress`.
pub fn make_body(size: usize) -> Bytes {
    const WORDS: &[&str] = &[
        "order",
        "created",
        "paid",
        "shipped",
        "customer",
        "amount",
        "currency",
        "EUR",
        "USD",
        "status",
        "pending",
        "done",
        "item",
        "quantity",
        "price",
        "warehouse",
        "region",
        "north",
        "south",
        "east",
        "west",
        "priority",
        "high",
        "low",
        "retry",
        "timestamp",
        "account",
        "balance",
        "transfer",
        "invoice",
        "refund",
        "coupon",
    ];
    let mut x: u32 = 0x9E37_79B9;
    let mut out = Vec::with_capacity(size + 16);
    while out.len() < size {
        // xorshift32: cheap, deterministic choice of the next word.
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out.extend_from_slice(WORDS[x as usize % WORDS.len()].as_bytes());
        out.push(if x % 7 == 0 { b'\n' } else { b' ' });
    }
    out.truncate(size);
    out.into()
}

/// Starts a producer with the benchmark's settings: bodies compressed (LZ4, the
/// cheapest codec, chosen explicitly as the SDK defaults to ZLIB) only with
/// `--compress`, async back-pressure sized to the windows.
pub async fn start_producer(
    common: &CommonArgs,
    args: &ProducerArgs,
    group: &str,
) -> Result<Producer, BenchError> {
    let mut config = ProducerConfig::new(group, &common.namesrv);
    common
        .configure(&mut config.client)
        .map_err(BenchError::Args)?;
    config.default_topic_queue_nums = args.queues.max(1);
    config.send_msg_timeout = Duration::from_millis(args.send_timeout.max(1));
    config.compress_msg_body_over_howmuch = if args.compress { 1 } else { usize::MAX };
    config.compress_type = Compression::Lz4;
    config.back_pressure_for_async_send_num = (args.window.max(1) * args.tasks.max(1)).max(1);
    let producer = Producer::new(config);
    producer
        .start()
        .await
        .map_err(|source| BenchError::Client {
            what: "starting the producer",
            source,
        })?;
    Ok(producer)
}

/// Sends one message and waits for it, so that the topic exists (auto-created) and
/// its route is known before the clock starts. Retries for up to 15 s.
pub async fn ensure_topic(producer: &Producer, topic: &str, body: Bytes) -> Result<(), BenchError> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut told = false;
    loop {
        match producer.send(Message::new(topic, body.clone())).await {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() < deadline => {
                if !told {
                    eprintln!("first send failed ({e}); retrying for up to 15 s");
                    told = true;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(source) => {
                return Err(BenchError::Client {
                    what: "sending the first message",
                    source,
                })
            }
        }
    }
}

/// Spawns the producer tasks.
pub fn spawn(side: &Arc<ProducerSide>) -> Vec<tokio::task::JoinHandle<TaskResult>> {
    let tasks = side.args.tasks.max(1);
    let per_task_rate = side.args.rate.map(|r| r / tasks as f64);
    (0..tasks)
        .map(|i| {
            let mut task = Task {
                id: i,
                side: side.clone(),
                seq: 0,
                pacer: Pacer::new(per_task_rate),
                result: TaskResult::default(),
            };
            tokio::spawn(async move {
                match task.side.args.mode {
                    Mode::Sync => task.run_sync().await,
                    Mode::Async => task.run_async().await,
                    Mode::Oneway => task.run_oneway().await,
                    Mode::Batch => task.run_batch().await,
                }
                task.result
            })
        })
        .collect()
}

impl Default for TaskResult {
    fn default() -> TaskResult {
        TaskResult {
            latency: new_histogram(),
            errors: BTreeMap::new(),
            acked: AckedSet::default(),
        }
    }
}

impl TaskResult {
    /// Adds `other`'s latencies, errors and acknowledgements.
    pub fn merge(&mut self, other: &TaskResult) {
        histogram::merge(&mut self.latency, &other.latency);
        for (k, n) in &other.errors {
            *self.errors.entry(k.clone()).or_insert(0) += n;
        }
        self.acked.merge(&other.acked);
    }

    /// Records the outcome of a send of the messages `seqs` started at `started`.
    fn record(
        &mut self,
        side: &ProducerSide,
        task: usize,
        started: Instant,
        seqs: std::ops::Range<u64>,
        r: Result<(), ClientError>,
    ) {
        let n = seqs.end - seqs.start;
        match r {
            Ok(()) => {
                side.meter.add(task, n, n * side.body.len() as u64);
                if side.state.measuring() {
                    histogram::record(&mut self.latency, started.elapsed());
                }
                if side.stamp_run.is_some() {
                    for seq in seqs {
                        self.acked.insert(seq);
                    }
                }
            }
            Err(e) => {
                side.meter.error(task, n);
                // The summary's send errors are those of the window, as its sends.
                if side.state.measuring() {
                    *self.errors.entry(error_kind(&e)).or_insert(0) += n;
                }
            }
        }
    }
}

/// Async completions run on any worker thread: their results go to a few shards.
const ASYNC_SHARDS: usize = 4;

struct Task {
    id: usize,
    side: Arc<ProducerSide>,
    seq: u64,
    pacer: Option<Pacer>,
    result: TaskResult,
}

impl Task {
    /// Claims `n` messages (0: stop) and waits for the rate limit.
    async fn claim(&mut self, n: u64) -> u64 {
        let granted = self.side.state.claim(n);
        if granted > 0 {
            if let Some(p) = &mut self.pacer {
                p.wait(granted).await;
            }
        }
        granted
    }

    /// The next message: the shared body, or a stamped copy for `e2e`.
    fn message(&mut self) -> (u64, Message) {
        let seq = self.seq;
        self.seq += 1;
        let side = &self.side;
        let body = match side.stamp_run {
            None => side.body.clone(),
            Some(run_id) => {
                let mut b = BytesMut::from(&side.body[..]);
                Stamp {
                    run_id,
                    task: self.id as u32,
                    seq,
                    sent_at_us: now_micros(),
                }
                .write(&mut b);
                b.freeze()
            }
        };
        let mut msg = Message::new(side.topic.as_str(), body);
        let tags = &side.args.tags;
        if !tags.is_empty() {
            let k = (seq % tags.len() as u64) as usize;
            msg = msg.with_tags(&tags[k]).with_property("k", k.to_string());
        }
        (seq, msg)
    }

    fn record(&mut self, started: Instant, seqs: std::ops::Range<u64>, r: Result<(), ClientError>) {
        self.result.record(&self.side, self.id, started, seqs, r);
    }

    async fn run_sync(&mut self) {
        while self.claim(1).await == 1 {
            let (seq, msg) = self.message();
            let started = Instant::now();
            let r = self.side.producer.send(msg).await.map(drop);
            self.record(started, seq..seq + 1, r);
        }
    }

    async fn run_oneway(&mut self) {
        while self.claim(1).await == 1 {
            let (seq, msg) = self.message();
            let started = Instant::now();
            let r = self.side.producer.send_oneway(msg).await;
            self.record(started, seq..seq + 1, r);
        }
    }

    async fn run_batch(&mut self) {
        let size = self.side.args.batch.max(1) as u64;
        loop {
            let n = self.claim(size).await;
            if n == 0 {
                return;
            }
            let first = self.seq;
            let msgs: Vec<Message> = (0..n).map(|_| self.message().1).collect();
            let started = Instant::now();
            let r = self.side.producer.send_batch(msgs).await.map(drop);
            self.record(started, first..first + n, r);
        }
    }

    /// Up to `--window` sends in flight, each with a callback (RocketMQ's
    /// `SendCallback`): the SDK runs it where the answer is read, so answers are
    /// processed on the connection's reader, not on the one task running this loop.
    async fn run_async(&mut self) {
        let window = self.side.args.window.max(1);
        let permits = Arc::new(Semaphore::new(window));
        let shards: Arc<[Mutex<TaskResult>]> = (0..ASYNC_SHARDS)
            .map(|_| Mutex::new(TaskResult::default()))
            .collect();
        while self.claim(1).await == 1 {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let (seq, msg) = self.message();
            let started = Instant::now();
            let (side, shards, id) = (self.side.clone(), shards.clone(), self.id);
            let sent = self
                .side
                .producer
                .send_with_callback(msg, move |r| {
                    let shard = &shards[seq as usize % ASYNC_SHARDS];
                    shard
                        .locked()
                        .record(&side, id, started, seq..seq + 1, r.map(drop));
                    drop(permit);
                })
                .await;
            if let Err(e) = sent {
                self.record(started, seq..seq + 1, Err(e));
            }
        }
        // Every answer is in once all permits are back.
        let _all = permits.acquire_many(window as u32).await;
        for shard in shards.iter() {
            self.result.merge(&shard.locked());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_text_of_the_asked_size_and_compress() {
        let b = make_body(4096);
        assert_eq!(b.len(), 4096);
        assert!(b
            .iter()
            .all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace()));
        assert_eq!(make_body(4096), b, "deterministic");
        assert!(make_body(0).is_empty());
        assert_eq!(make_body(3).len(), 3);
        let packed = vostok_client::message::compress(&b, Compression::Lz4, 5).unwrap();
        assert!(
            packed.len() < b.len() * 3 / 4,
            "{} of {}",
            packed.len(),
            b.len()
        );
    }
}
