//! The producer side: `-w` tasks sharing one SDK producer, each in its mode (sync,
//! async with a window, oneway, batch), each with its own latency histogram, error
//! tally and (for `e2e`) acknowledged-sequence bitmap, merged when the run ends.
//!
//! Bodies: one shared buffer for `produce` (no per-message copy); for `e2e` a copy of
//! it per message with the [`Stamp`] written in front.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use hdrhistogram::Histogram;
use vostok_client::{ClientError, Message, Producer, ProducerConfig, SendResult};

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

/// A body of `size` bytes of lower-case letters (compressible, like text).
pub fn make_body(size: usize) -> Bytes {
    let mut x: u32 = 0x9E37_79B9;
    (0..size)
        .map(|_| {
            // xorshift32: cheap, deterministic filler.
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b'a' + (x % 26) as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// Starts a producer with the benchmark's settings: bodies compressed only with
/// `--compress`, async back-pressure sized to the windows.
pub async fn start_producer(
    common: &CommonArgs,
    args: &ProducerArgs,
    group: &str,
) -> Result<Producer, BenchError> {
    let mut config = ProducerConfig::new(group, &common.namesrv);
    config.default_topic_queue_nums = args.queues.max(1);
    config.send_msg_timeout = Duration::from_millis(args.send_timeout.max(1));
    config.compress_msg_body_over_howmuch = if args.compress { 1 } else { usize::MAX };
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
            let side = side.clone();
            tokio::spawn(async move {
                let mut task = Task {
                    id: i,
                    side: &side,
                    seq: 0,
                    pacer: Pacer::new(per_task_rate),
                    result: TaskResult {
                        latency: new_histogram(),
                        errors: BTreeMap::new(),
                        acked: AckedSet::default(),
                    },
                };
                match side.args.mode {
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

struct Task<'a> {
    id: usize,
    side: &'a ProducerSide,
    seq: u64,
    pacer: Option<Pacer>,
    result: TaskResult,
}

impl Task<'_> {
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
        let side = self.side;
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
        (seq, Message::new(side.topic.as_str(), body))
    }

    fn done(
        &mut self,
        started: Instant,
        seqs: std::ops::Range<u64>,
        r: Result<SendResult, ClientError>,
    ) {
        let n = seqs.end - seqs.start;
        match r {
            Ok(_) => {
                let side = self.side;
                side.meter.add(self.id, n, n * side.body.len() as u64);
                if side.state.measuring() {
                    histogram::record(&mut self.result.latency, started.elapsed());
                }
                if side.stamp_run.is_some() {
                    for seq in seqs {
                        self.result.acked.insert(seq);
                    }
                }
            }
            Err(e) => self.failed(&e, n),
        }
    }

    fn failed(&mut self, e: &ClientError, n: u64) {
        self.side.meter.error(self.id, n);
        *self.result.errors.entry(error_kind(e)).or_insert(0) += n;
    }

    async fn run_sync(&mut self) {
        while self.claim(1).await == 1 {
            let (seq, msg) = self.message();
            let started = Instant::now();
            let r = self.side.producer.send(msg).await;
            self.done(started, seq..seq + 1, r);
        }
    }

    async fn run_oneway(&mut self) {
        while self.claim(1).await == 1 {
            let (seq, msg) = self.message();
            let started = Instant::now();
            match self.side.producer.send_oneway(msg).await {
                Ok(()) => {
                    let side = self.side;
                    side.meter.add(self.id, 1, side.body.len() as u64);
                    if side.state.measuring() {
                        histogram::record(&mut self.result.latency, started.elapsed());
                    }
                    if side.stamp_run.is_some() {
                        self.result.acked.insert(seq);
                    }
                }
                Err(e) => self.failed(&e, 1),
            }
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
            let r = self.side.producer.send_batch(msgs).await;
            self.done(started, first..first + n, r);
        }
    }

    async fn run_async(&mut self) {
        let window = self.side.args.window.max(1);
        let mut in_flight = FuturesUnordered::new();
        let mut more = true;
        loop {
            while more && in_flight.len() < window {
                if self.side.state.claim(1) == 0 {
                    more = false;
                    break;
                }
                // Rate limit: keep taking answers while waiting for the next slot, so
                // that their latency is not stretched by the wait.
                let wait = self
                    .pacer
                    .as_mut()
                    .and_then(|p| p.book(tokio::time::Instant::now(), 1));
                if let Some(wait) = wait {
                    let sleep = tokio::time::sleep(wait);
                    tokio::pin!(sleep);
                    loop {
                        tokio::select! {
                            _ = &mut sleep => break,
                            Some((started, seq, r)) = in_flight.next(), if !in_flight.is_empty() => {
                                self.done(started, seq..seq + 1, r);
                            }
                        }
                    }
                }
                let (seq, msg) = self.message();
                let started = Instant::now();
                match self.side.producer.send_async(msg).await {
                    Ok(pending) => in_flight.push(pending.map(move |r| (started, seq, r))),
                    Err(e) => self.failed(&e, 1),
                }
            }
            match in_flight.next().await {
                Some((started, seq, r)) => self.done(started, seq..seq + 1, r),
                None if !more => return,
                None => {}
            }
            // Take every answer already there before queuing more.
            while let Some(Some((started, seq, r))) = in_flight.next().now_or_never() {
                self.done(started, seq..seq + 1, r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_letters_of_the_asked_size() {
        let b = make_body(1024);
        assert_eq!(b.len(), 1024);
        assert!(b.iter().all(u8::is_ascii_lowercase));
        assert_eq!(make_body(1024), b, "deterministic");
        assert!(make_body(0).is_empty());
    }
}
