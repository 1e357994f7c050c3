//! The consumer side: the SDK's push consumer (a listener), lite pull consumer (a
//! poll loop) or simple consumer (POP receive loops, each batch acked at once) feeding
//! one [`ConsumeState`]. Counters and latency histograms are
//! sharded by queue id, so listener calls on different queues do not contend; `e2e`
//! sequence checks are lock-free bitmaps.

use std::borrow::Borrow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use vostok_client::consumer::wildcard::ROUTING_KEY;
use vostok_client::consumer::BindingKey;
use vostok_client::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeFromWhere, ConsumerConfig,
    LitePullConsumer, LitePullConsumerConfig, MessageExt, MessageListener, PushConsumer,
    SimpleConsumer, SimpleConsumerConfig,
};
use vostok_remoting::support::latency_trace::{self, Stage};
use vostok_remoting::support::sync::MutexExt;

use super::args::{CommonArgs, ConsumerArgs, From};
use super::histogram::{self, new_histogram};
use super::meter::{Meter, Totals};
use super::sequence::{now_micros, AckedSet, Seen, SeqTracker, SequenceCheck, Stamp};
use super::BenchError;

const SHARDS: usize = 16;

/// What the consumer side received (`consume`, `e2e`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Receipts {
    /// Deliveries in the window: the receive rate.
    pub in_window: Totals,
    /// Every delivery from the consumer's start until it stopped.
    pub whole_run: Totals,
    /// `e2e`: the sequence check over the same deliveries as `whole_run`.
    pub sequence: Option<SequenceCheck>,
    /// Every message the broker handed over (before `--routing-on-client` drops the
    /// ones that do not match), in record bytes as on the wire.
    pub from_broker: Totals,
}

/// Everything the consumer side records.
pub struct ConsumeState {
    pub meter: Meter,
    latency: Box<[Mutex<Histogram<u64>>]>,
    /// `e2e`: the sequence checks.
    pub tracker: Option<SeqTracker>,
    /// Latencies are recorded once the warm-up is over.
    pub measuring: AtomicBool,
    /// When the first message arrived.
    pub first_at: OnceLock<Instant>,
    /// `-c`: when the count was reached, and the totals then.
    count: Option<u64>,
    pub count_reached: OnceLock<(Instant, Totals)>,
    baseline: OnceLock<Totals>,
    /// Deliveries so far, for the `-c` check (one shared counter, not a sum of shards).
    delivered: AtomicU64,
    /// `--routing-on-client`: the binding deliveries are matched against.
    client_routing: OnceLock<BindingKey>,
    /// Everything the broker handed over, matching or not (messages, record bytes).
    wire_msgs: AtomicU64,
    wire_bytes: AtomicU64,
}

impl ConsumeState {
    pub fn new(tracker: Option<SeqTracker>, count: Option<u64>) -> ConsumeState {
        ConsumeState {
            meter: Meter::new(SHARDS),
            latency: (0..SHARDS).map(|_| Mutex::new(new_histogram())).collect(),
            tracker,
            measuring: AtomicBool::new(false),
            first_at: OnceLock::new(),
            count,
            count_reached: OnceLock::new(),
            baseline: OnceLock::new(),
            delivered: AtomicU64::new(0),
            client_routing: OnceLock::new(),
            wire_msgs: AtomicU64::new(0),
            wire_bytes: AtomicU64::new(0),
        }
    }

    /// Starts the measured window: totals from now on (`from_zero`: from the first
    /// delivery) count towards `-c`.
    pub fn start_measuring(&self, from_zero: bool) -> Totals {
        let base = *self.baseline.get_or_init(|| {
            if from_zero {
                Totals::default()
            } else {
                self.meter.totals()
            }
        });
        for h in self.latency.iter() {
            h.locked().reset();
        }
        self.measuring.store(true, Ordering::Release);
        base
    }

    /// `--routing-on-client`: deliveries are matched against `binding` here.
    pub fn match_on_client(&self, binding: &str) -> Result<(), BenchError> {
        let key = BindingKey::parse(binding).map_err(|e| BenchError::Args(e.to_string()))?;
        let _ = self.client_routing.set(key);
        Ok(())
    }

    /// Records a delivery: counts, latency (stamp's send time, else the born time),
    /// sequence check.
    pub fn on_messages<M: Borrow<MessageExt>>(&self, msgs: &[M]) {
        let wire: u64 = msgs
            .iter()
            .map(|m| m.borrow().store_size.max(0) as u64)
            .sum();
        self.wire_msgs
            .fetch_add(msgs.len() as u64, Ordering::Relaxed);
        self.wire_bytes.fetch_add(wire, Ordering::Relaxed);
        if let Some(key) = self.client_routing.get() {
            let kept: Vec<&MessageExt> = msgs
                .iter()
                .map(Borrow::borrow)
                .filter(|m| {
                    let routing_key = m.properties.get(ROUTING_KEY).or_else(|| m.tags());
                    key.matches(routing_key.unwrap_or(""))
                })
                .collect();
            return self.record(&kept);
        }
        self.record(msgs)
    }

    fn record<M: Borrow<MessageExt>>(&self, msgs: &[M]) {
        let Some(first) = msgs.first().map(Borrow::borrow) else {
            return;
        };
        self.first_at.get_or_init(Instant::now);
        let shard = first.queue_id.unsigned_abs() as usize % SHARDS;
        let now_us = now_micros();
        let measuring = self.measuring.load(Ordering::Relaxed);
        let (mut n, mut bytes) = (0u64, 0u64);
        let mut hist = measuring.then(|| self.latency[shard].locked());
        let trace = latency_trace::enabled();
        for m in msgs.iter().map(Borrow::borrow) {
            let stamp = Stamp::read(&m.body);
            let seen = self.tracker.as_ref().map(|t| t.observe(stamp.as_ref()));
            if seen == Some(Seen::Probe) {
                continue;
            }
            n += 1;
            bytes += m.body.len() as u64;
            if let (true, Some(s)) = (trace, stamp.as_ref()) {
                latency_trace::stamp_at(Stage::Sent, m.commit_log_offset, s.sent_at_us);
                latency_trace::stamp_at(Stage::Consumed, m.commit_log_offset, now_us);
            }
            let Some(h) = hist.as_mut() else {
                continue;
            };
            match (stamp, seen) {
                (Some(s), Some(Seen::New)) | (Some(s), None) => {
                    histogram::record_micros(h, now_us.saturating_sub(s.sent_at_us))
                }
                (None, None) => histogram::record_micros(
                    h,
                    now_us.saturating_sub((m.born_timestamp.max(0) as u64) * 1000),
                ),
                _ => {}
            }
        }
        drop(hist);
        if n == 0 {
            return;
        }
        self.meter.add(shard, n, bytes);
        let before = self.delivered.fetch_add(n, Ordering::Relaxed);
        if let (Some(count), true, Some(base)) = (self.count, measuring, self.baseline.get()) {
            if before + n >= base.msgs + count && self.count_reached.get().is_none() {
                let now = self.meter.totals();
                self.count_reached.get_or_init(|| (Instant::now(), now));
            }
        }
    }

    /// What was received, read once the consumer has stopped so that nothing arrives
    /// in between: `in_window` as the caller measured it, every delivery so far, and
    /// for `e2e` the sequence check against `acked` (task `i` acknowledged `acked[i]`)
    /// over those same deliveries.
    pub fn receipts(&self, in_window: Totals, acked: &[AckedSet]) -> Receipts {
        Receipts {
            in_window,
            whole_run: self.meter.totals(),
            sequence: self.tracker.as_ref().map(|t| t.check(acked)),
            from_broker: Totals {
                msgs: self.wire_msgs.load(Ordering::Relaxed),
                bytes: self.wire_bytes.load(Ordering::Relaxed),
                errors: 0,
            },
        }
    }

    /// The merged latency histogram.
    pub fn latency(&self) -> Histogram<u64> {
        let mut all = new_histogram();
        for h in self.latency.iter() {
            histogram::merge(&mut all, &h.locked());
        }
        all
    }
}

/// A running consumer of either kind.
pub enum Consumer {
    Push(PushConsumer),
    Lite {
        consumer: LitePullConsumer,
        stop: Arc<AtomicBool>,
        poller: tokio::task::JoinHandle<()>,
    },
    Pop {
        consumer: SimpleConsumer,
        stop: Arc<AtomicBool>,
        receivers: Vec<tokio::task::JoinHandle<()>>,
    },
}

fn from_where(from: From) -> ConsumeFromWhere {
    match from {
        From::First => ConsumeFromWhere::ConsumeFromFirstOffset,
        From::Last => ConsumeFromWhere::ConsumeFromLastOffset,
    }
}

/// Subscribes `group` to the topic (all tags, or `--tag` / `--sql`) and starts
/// consuming into `state`.
pub async fn start(
    common: &CommonArgs,
    args: &ConsumerArgs,
    group: &str,
    from: From,
    state: Arc<ConsumeState>,
) -> Result<Consumer, BenchError> {
    let client_err = |what| move |source| BenchError::Client { what, source };
    if let (true, Some(binding)) = (args.routing_on_client, &args.routing_key) {
        state.match_on_client(binding)?;
    }
    if args.pop {
        return start_pop(common, args, group, from, state).await;
    }
    if args.lite_pull {
        let mut config = LitePullConsumerConfig::new(group, &common.namesrv);
        common
            .configure(&mut config.common.client)
            .map_err(BenchError::Args)?;
        config.common.consume_from_where = from_where(from);
        if let Some(n) = args.pull_batch {
            config.common.pull_batch_size = n;
        }
        let consumer = LitePullConsumer::new(config);
        consumer
            .subscribe_with_selector(&common.topic, args.selector())
            .map_err(client_err("subscribing"))?;
        consumer
            .start()
            .await
            .map_err(client_err("starting the lite pull consumer"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let poller = {
            let (consumer, stop) = (consumer.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match consumer.poll(Duration::from_millis(100)).await {
                        Ok(msgs) => state.on_messages(&msgs),
                        Err(_) => return,
                    }
                }
            })
        };
        return Ok(Consumer::Lite {
            consumer,
            stop,
            poller,
        });
    }
    let mut config = ConsumerConfig::new(group, &common.namesrv);
    common
        .configure(&mut config.common.client)
        .map_err(BenchError::Args)?;
    config.common.consume_from_where = from_where(from);
    if let Some(n) = args.pull_batch {
        config.common.pull_batch_size = n;
    }
    if let Some(n) = args.consume_batch {
        config.consume_message_batch_max_size = n.max(1);
    }
    if let Some(n) = args.consume_threads {
        config.consume_thread_max = n.max(1);
    }
    let consumer = PushConsumer::new(config);
    consumer
        .subscribe_with_selector(&common.topic, args.selector())
        .map_err(client_err("subscribing"))?;
    consumer.register_message_listener(MessageListener::concurrently(
        move |msgs: &[MessageExt], _: &mut ConsumeConcurrentlyContext| {
            state.on_messages(msgs);
            ConsumeConcurrentlyStatus::ConsumeSuccess
        },
    ));
    consumer
        .start()
        .await
        .map_err(client_err("starting the push consumer"))?;
    Ok(Consumer::Push(consumer))
}

/// `--pop`: receive loops, each acking what it received with one BATCH_ACK_MESSAGE
/// before receiving again.
async fn start_pop(
    common: &CommonArgs,
    args: &ConsumerArgs,
    group: &str,
    from: From,
    state: Arc<ConsumeState>,
) -> Result<Consumer, BenchError> {
    let client_err = |what| move |source| BenchError::Client { what, source };
    let mut client = vostok_client::ClientConfig::with_namesrv(&common.namesrv);
    common.configure(&mut client).map_err(BenchError::Args)?;
    let consumer = SimpleConsumer::new(SimpleConsumerConfig {
        client,
        consumer_group: group.to_owned(),
        await_duration: Duration::from_secs(2),
        consume_from_where: from_where(from),
        ..Default::default()
    });
    consumer
        .subscribe_with_selector(&common.topic, args.selector())
        .map_err(client_err("subscribing"))?;
    consumer
        .start()
        .await
        .map_err(client_err("starting the simple consumer"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let batch = args.pull_batch.unwrap_or(32).clamp(1, 32);
    let invisible = Duration::from_millis(args.invisible_ms);
    let receivers = (0..args.pop_receivers.max(1))
        .map(|_| {
            let (consumer, stop, state) = (consumer.clone(), stop.clone(), state.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let views = match consumer.receive(batch, invisible).await {
                        Ok(v) => v,
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    };
                    if views.is_empty() {
                        continue;
                    }
                    let msgs: Vec<&MessageExt> = views.iter().map(|v| v.message()).collect();
                    state.on_messages(&msgs);
                    let _ = consumer.ack_all(&views).await;
                }
            })
        })
        .collect();
    Ok(Consumer::Pop {
        consumer,
        stop,
        receivers,
    })
}

impl Consumer {
    /// Queues assigned to this consumer so far (a POP consumer reads every queue).
    pub fn assigned(&self) -> usize {
        match self {
            Consumer::Push(c) => c.assigned_queues().len(),
            Consumer::Lite { consumer, .. } => consumer.assignment().len(),
            Consumer::Pop { .. } => usize::MAX,
        }
    }

    /// Waits until `queues` queues are assigned (or `timeout`).
    pub async fn wait_assigned(&self, queues: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.assigned() >= queues {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    pub async fn shutdown(self) {
        match self {
            Consumer::Push(c) => c.shutdown().await,
            Consumer::Lite {
                consumer,
                stop,
                poller,
            } => {
                stop.store(true, Ordering::Relaxed);
                let _ = poller.await;
                consumer.shutdown().await;
            }
            Consumer::Pop {
                consumer,
                stop,
                receivers,
            } => {
                stop.store(true, Ordering::Relaxed);
                for r in receivers {
                    let _ = r.await;
                }
                consumer.shutdown().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sequence::PROBE_TASK;
    use super::*;
    use bytes::Bytes;

    fn msg(queue_id: i32, body: Bytes) -> MessageExt {
        MessageExt {
            born_host: "127.0.0.1:1".parse().unwrap(),
            ..MessageExt::new(
                "T",
                queue_id,
                body,
                Default::default(),
                "127.0.0.1:2".parse().unwrap(),
            )
        }
    }

    fn stamped(run_id: u32, seq: u64) -> Bytes {
        let mut b = vec![0u8; 64];
        Stamp {
            run_id,
            task: 0,
            seq,
            sent_at_us: now_micros() - 2000,
        }
        .write(&mut b);
        b.into()
    }

    #[test]
    fn deliveries_are_counted_checked_and_timed() {
        let state = ConsumeState::new(Some(SeqTracker::new(9, 1)), Some(3));
        // Before measuring: counted, not timed, not towards -c. The run's own topic
        // probe is not counted at all.
        let mut probe = vec![0u8; 64];
        Stamp {
            run_id: 9,
            task: PROBE_TASK,
            seq: 0,
            sent_at_us: now_micros(),
        }
        .write(&mut probe);
        state.on_messages(&[msg(0, probe.into())]);
        state.on_messages(&[msg(0, stamped(9, 0))]);
        let base = state.start_measuring(false);
        assert_eq!(base.msgs, 1);
        state.on_messages(&[msg(1, stamped(9, 1)), msg(1, stamped(9, 1))]);
        assert!(state.count_reached.get().is_none());
        state.on_messages(&[msg(17, stamped(8, 5))]);
        let (_, at) = *state.count_reached.get().unwrap();
        assert_eq!(at.msgs, 4);
        assert_eq!(state.meter.totals().bytes, 4 * 64);
        let tracker = state.tracker.as_ref().unwrap();
        assert_eq!(tracker.duplicates(), 1);
        assert_eq!(tracker.foreign(), 1);
        // Only the first delivery of this run's message is timed, ~2 ms.
        let h = state.latency();
        assert_eq!(h.len(), 1);
        assert!(h.max() >= 2000);
    }

    #[test]
    fn routing_on_the_client_counts_what_the_broker_sent_apart() {
        let state = ConsumeState::new(None, None);
        state.match_on_client("orders.*.eu").unwrap();
        let keyed = |key: &str| {
            let mut m = msg(0, Bytes::from_static(b"body"));
            m.properties.insert("TAGS", key);
            m.store_size = 100;
            m
        };
        state.on_messages(&[
            keyed("orders.created.eu"),
            keyed("orders.created.us"),
            keyed("orders.eu"),
        ]);
        let r = state.receipts(Totals::default(), &[]);
        assert_eq!((r.whole_run.msgs, r.whole_run.bytes), (1, 4));
        assert_eq!((r.from_broker.msgs, r.from_broker.bytes), (3, 300));
        assert!(ConsumeState::new(None, None)
            .match_on_client("a..b")
            .is_err());
    }

    #[test]
    fn plain_bodies_are_timed_from_their_born_time() {
        let state = ConsumeState::new(None, None);
        state.start_measuring(true);
        let mut m = msg(0, Bytes::from_static(b"plain body"));
        m.born_timestamp = (now_micros() / 1000) as i64 - 50;
        state.on_messages(&[m]);
        let h = state.latency();
        assert_eq!(h.len(), 1);
        assert!(h.max() >= 49_000, "{}", h.max());
    }
}
