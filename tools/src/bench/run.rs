//! The three commands: set up, warm up, measure a window, summarise.
//!
//! ```text
//! produce  start producer → first send (topic exists) → tasks → warm-up → window → join
//! consume  start consumer → first message → warm-up → window (count or duration)
//! e2e      producer → first send → consumer assigned all queues → tasks (stamped)
//!          → warm-up → window → producers done → drain until every ack was received
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::task::JoinHandle;

use super::args::{CommonArgs, ConsumeCmd, E2eCmd, From, ProduceCmd, ProducerArgs};
use super::consume::{self, ConsumeState};
use super::histogram::LatencySummary;
use super::meter::{Meter, RunState, Totals};
use super::monitor::Monitor;
use super::produce::{self, ProducerSide, TaskResult};
use super::progress::{self, Delta};
use super::report::Summary;
use super::sequence::{now_micros, AckedSet, SeqTracker, Stamp, PROBE_TASK, STAMP_LEN};
use super::BenchError;

const POLL: Duration = Duration::from_millis(20);

/// Ctrl-C ends the window early; the summary is still printed.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn watch_ctrl_c() {
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            INTERRUPTED.store(true, Ordering::Relaxed);
        }
    });
}

/// The window is over: its duration elapsed, or Ctrl-C.
fn time_is_up(limit: Option<Duration>, t0: Instant) -> bool {
    INTERRUPTED.load(Ordering::Relaxed) || limit.is_some_and(|l| t0.elapsed() >= l)
}
const TICK: Duration = Duration::from_secs(1);

/// Prints the progress line once a second.
struct Ticker {
    quiet: bool,
    began: Instant,
    last_at: Instant,
    last: Vec<Totals>,
}

impl Ticker {
    fn new(quiet: bool) -> Ticker {
        let now = Instant::now();
        Ticker {
            quiet,
            began: now,
            last_at: now,
            last: Vec::new(),
        }
    }

    /// Prints when a second has passed since the last line.
    fn tick(
        &mut self,
        warming_up: bool,
        sides: &[(&'static str, Totals)],
        progress: Option<(u64, u64)>,
    ) {
        let now = Instant::now();
        if now.duration_since(self.last_at) < TICK {
            return;
        }
        if !self.quiet {
            let deltas: Vec<Delta> = sides
                .iter()
                .enumerate()
                .map(|(i, (label, t))| Delta {
                    label,
                    now: *t,
                    before: self.last.get(i).copied().unwrap_or_default(),
                })
                .collect();
            eprintln!(
                "{}",
                progress::line(
                    now.duration_since(self.began),
                    warming_up,
                    now.duration_since(self.last_at),
                    &deltas,
                    progress
                )
            );
        }
        self.last = sides.iter().map(|(_, t)| *t).collect();
        self.last_at = now;
    }
}

fn unique_group(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}_{}_{nanos}", std::process::id())
}

fn run_id() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (nanos ^ (u64::from(std::process::id()) << 32) ^ (nanos >> 32)) as u32
}

fn common_settings(c: &CommonArgs) -> Map<String, Value> {
    let v = json!({
        "namesrv": c.namesrv,
        "topic": c.topic,
        "size": c.size,
        "count": c.count,
        "duration": c.duration_limit().map(|d| d.as_secs_f64()),
        "warmup": c.warmup,
    });
    v.as_object().cloned().unwrap_or_default()
}

fn producer_settings(s: &mut Map<String, Value>, p: &ProducerArgs) {
    s.insert("tasks".into(), json!(p.tasks));
    s.insert("mode".into(), json!(p.mode.name()));
    if p.mode == super::args::Mode::Async {
        s.insert("window".into(), json!(p.window));
    }
    if p.mode == super::args::Mode::Batch {
        s.insert("batch".into(), json!(p.batch));
    }
    s.insert("compress".into(), json!(p.compress));
    s.insert("rate".into(), json!(p.rate));
}

/// The groups of `consume --groups N`: `group` itself for one, else `group_0` ...
fn group_names(group: &str, n: usize) -> Vec<String> {
    match n {
        0 | 1 => vec![group.to_owned()],
        n => (0..n).map(|i| format!("{group}_{i}")).collect(),
    }
}

fn consumer_settings(s: &mut Map<String, Value>, c: &super::args::ConsumerArgs, group: &str) {
    s.insert(
        "consumer".into(),
        json!(if c.pop {
            "pop"
        } else if c.lite_pull {
            "lite_pull"
        } else {
            "push"
        }),
    );
    s.insert("group".into(), json!(group));
    s.insert("pull_batch".into(), json!(c.pull_batch));
    s.insert("consume_batch".into(), json!(c.consume_batch));
    s.insert("routing_key".into(), json!(c.routing_key));
    if c.routing_on_client {
        s.insert("routing_on_client".into(), json!(true));
    }
}

/// Producer tasks running under a coordinator.
struct ProducerRun {
    side: Arc<ProducerSide>,
    handles: Vec<JoinHandle<TaskResult>>,
}

impl ProducerRun {
    fn finished(&self) -> bool {
        self.handles.iter().all(JoinHandle::is_finished)
    }

    /// The tasks' latencies and errors merged, and each task's acknowledged sequence
    /// numbers (index = task).
    async fn join(self) -> (TaskResult, Vec<AckedSet>) {
        let mut all = TaskResult::default();
        let mut acked = Vec::new();
        for h in self.handles {
            // A task that panicked loses its figures, not the run.
            let mut r = h.await.unwrap_or_else(|_| TaskResult::default());
            acked.push(std::mem::take(&mut r.acked));
            all.merge(&r);
        }
        (all, acked)
    }
}

async fn start_producers(
    common: &CommonArgs,
    args: &ProducerArgs,
    group: &str,
    stamp_run: Option<u32>,
) -> Result<(ProducerRun, Arc<Meter>, Arc<RunState>), BenchError> {
    if stamp_run.is_some() && common.size < STAMP_LEN {
        return Err(BenchError::Args(format!(
            "e2e needs --size of at least {STAMP_LEN} bytes (the sequence stamp)"
        )));
    }
    if common.size == 0 {
        return Err(BenchError::Args("--size must be at least 1".into()));
    }
    let body = produce::make_body(common.size);
    let producer = produce::start_producer(common, args, group).await?;
    // e2e stamps the probe as its own, so that the consumer does not count it.
    let probe = match stamp_run {
        None => body.clone(),
        Some(run_id) => {
            let mut b = bytes::BytesMut::from(&body[..]);
            Stamp {
                run_id,
                task: PROBE_TASK,
                seq: 0,
                sent_at_us: now_micros(),
            }
            .write(&mut b);
            b.freeze()
        }
    };
    produce::ensure_topic(&producer, &common.topic, probe).await?;
    let meter = Arc::new(Meter::new(args.tasks.max(1)));
    let state = Arc::new(RunState::new(common.count));
    let side = Arc::new(ProducerSide {
        producer,
        topic: common.topic.clone(),
        body,
        args: args.clone(),
        stamp_run,
        meter: meter.clone(),
        state: state.clone(),
    });
    Ok((
        ProducerRun {
            side: side.clone(),
            handles: Vec::new(),
        },
        meter,
        state,
    ))
}

pub async fn produce(cmd: ProduceCmd) -> Result<Summary, BenchError> {
    watch_ctrl_c();
    let common = &cmd.common;
    let (mut run, meter, state) = start_producers(common, &cmd.producer, &cmd.group, None).await?;
    let mut monitor = Monitor::prepare(
        &common.namesrv,
        &common.topic,
        common.broker_pid,
        &common.security,
    )
    .await;
    let mut ticker = Ticker::new(common.quiet);
    if !common.warmup().is_zero() {
        run.handles = produce::spawn(&run.side);
        let warm_until = Instant::now() + common.warmup();
        while Instant::now() < warm_until && !run.finished() {
            ticker.tick(true, &[("send", meter.totals())], None);
            tokio::time::sleep(POLL).await;
        }
    }
    monitor.begin().await;
    let base = meter.totals();
    state.measuring.store(true, Ordering::Release);
    let t0 = Instant::now();
    if run.handles.is_empty() {
        run.handles = produce::spawn(&run.side);
    }
    let limit = common.duration_limit();
    while !run.finished() {
        if time_is_up(limit, t0) {
            state.stop.store(true, Ordering::Release);
        }
        let now = meter.totals();
        ticker.tick(
            false,
            &[("send", now)],
            common.count.map(|c| ((now - base).msgs, c)),
        );
        tokio::time::sleep(POLL).await;
    }
    let elapsed = t0.elapsed();
    let figures = monitor.finish().await;
    let totals = meter.totals() - base;
    let producer = run.side.producer.clone();
    let (
        TaskResult {
            latency, errors, ..
        },
        _,
    ) = run.join().await;
    producer.shutdown().await;

    let mut settings = common_settings(common);
    producer_settings(&mut settings, &cmd.producer);
    Ok(Summary {
        command: "produce",
        settings,
        elapsed,
        sent: Some(totals.msgs),
        sent_bytes: totals.bytes,
        errors,
        send_latency: LatencySummary::of(&latency),
        figures: Some(figures),
        ..Default::default()
    })
}

pub async fn consume(cmd: ConsumeCmd) -> Result<Summary, BenchError> {
    watch_ctrl_c();
    let common = &cmd.common;
    let group = cmd.group.clone().unwrap_or_else(|| unique_group("mqbench"));
    let state = Arc::new(ConsumeState::new(None, common.count));
    let mut monitor = Monitor::prepare(
        &common.namesrv,
        &common.topic,
        common.broker_pid,
        &common.security,
    )
    .await;
    let warmup = common.warmup();
    if warmup.is_zero() {
        // The window opens with the first delivery.
        state.start_measuring(true);
    }
    let groups = group_names(&group, cmd.groups);
    // Started together: each start waits for routes and a first rebalance.
    let consumers = futures_util::future::try_join_all(
        groups
            .iter()
            .map(|g| consume::start(common, &cmd.consumer, g, cmd.from, state.clone())),
    )
    .await?;
    let mut ticker = Ticker::new(common.quiet);
    // The clock starts with the first message (not with rebalancing).
    let wait_until = Instant::now() + Duration::from_secs(60);
    while state.first_at.get().is_none()
        && Instant::now() < wait_until
        && !INTERRUPTED.load(Ordering::Relaxed)
    {
        ticker.tick(true, &[("recv", state.meter.totals())], None);
        tokio::time::sleep(POLL).await;
    }
    let (base, t0) = if warmup.is_zero() {
        monitor.begin().await;
        let first = state.first_at.get().copied().unwrap_or_else(Instant::now);
        (state.start_measuring(true), first)
    } else {
        let warm_until = Instant::now() + warmup;
        while Instant::now() < warm_until {
            ticker.tick(true, &[("recv", state.meter.totals())], None);
            tokio::time::sleep(POLL).await;
        }
        monitor.begin().await;
        (state.start_measuring(false), Instant::now())
    };
    let limit = common.duration_limit();
    let nothing_came = state.first_at.get().is_none();
    let (t_end, end) = loop {
        if let Some((at, totals)) = state.count_reached.get() {
            break (*at, *totals);
        }
        if nothing_came || time_is_up(limit, t0) {
            break (Instant::now(), state.meter.totals());
        }
        let now = state.meter.totals();
        ticker.tick(
            false,
            &[("recv", now)],
            common.count.map(|c| ((now - base).msgs, c)),
        );
        tokio::time::sleep(POLL).await;
    };
    let elapsed = t_end.duration_since(t0);
    let figures = monitor.finish().await;
    for consumer in consumers {
        consumer.shutdown().await;
    }
    let receipts = state.receipts(end - base, &[]);
    if nothing_came {
        eprintln!("no message arrived within 60 s");
    }

    let mut settings = common_settings(common);
    consumer_settings(&mut settings, &cmd.consumer, &group);
    settings.insert("groups".into(), json!(groups.len()));
    settings.insert(
        "from".into(),
        json!(if cmd.from == From::First {
            "first"
        } else {
            "last"
        }),
    );
    Ok(Summary {
        command: "consume",
        settings,
        elapsed,
        receipts: Some(receipts),
        e2e_latency: LatencySummary::of(&state.latency()),
        figures: Some(figures),
        ..Default::default()
    })
}

pub async fn e2e(cmd: E2eCmd) -> Result<Summary, BenchError> {
    watch_ctrl_c();
    let common = &cmd.common;
    let group = cmd
        .group
        .clone()
        .unwrap_or_else(|| unique_group("mqbench_e2e"));
    let run_id = run_id();
    let (mut run, meter, state) =
        start_producers(common, &cmd.producer, "mqbench_e2e_producer", Some(run_id)).await?;
    let queues = run
        .side
        .producer
        .fetch_publish_message_queues(&common.topic)
        .await
        .map(|q| q.len())
        .unwrap_or(1);
    let tracker = SeqTracker::new(run_id, cmd.producer.tasks.max(1));
    let cstate = Arc::new(ConsumeState::new(Some(tracker), None));
    let consumer =
        consume::start(common, &cmd.consumer, &group, From::Last, cstate.clone()).await?;
    if !consumer
        .wait_assigned(queues, Duration::from_secs(30))
        .await
    {
        eprintln!(
            "the consumer has {} of {queues} queues after 30 s; starting anyway",
            consumer.assigned()
        );
    }
    // Let the pull tasks fetch their start offsets before the first stamped message.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut monitor = Monitor::prepare(
        &common.namesrv,
        &common.topic,
        common.broker_pid,
        &common.security,
    )
    .await;
    let mut ticker = Ticker::new(common.quiet);
    let sides = |cs: &ConsumeState| [("send", meter.totals()), ("recv", cs.meter.totals())];
    if !common.warmup().is_zero() {
        run.handles = produce::spawn(&run.side);
        let warm_until = Instant::now() + common.warmup();
        while Instant::now() < warm_until && !run.finished() {
            ticker.tick(true, &sides(&cstate), None);
            tokio::time::sleep(POLL).await;
        }
    }
    monitor.begin().await;
    let base = meter.totals();
    let recv_base = cstate.start_measuring(false);
    state.measuring.store(true, Ordering::Release);
    let t0 = Instant::now();
    if run.handles.is_empty() {
        run.handles = produce::spawn(&run.side);
    }
    let limit = common.duration_limit();
    while !run.finished() {
        if time_is_up(limit, t0) {
            state.stop.store(true, Ordering::Release);
        }
        let s = sides(&cstate);
        ticker.tick(false, &s, common.count.map(|c| ((s[0].1 - base).msgs, c)));
        tokio::time::sleep(POLL).await;
    }
    let elapsed = t0.elapsed();
    let received_in_window = cstate.meter.totals() - recv_base;
    let sent = meter.totals() - base;
    let figures = monitor.finish().await;
    let producer = run.side.producer.clone();
    let (
        TaskResult {
            latency, errors, ..
        },
        acked,
    ) = run.join().await;

    // Drain: wait for every acknowledged message, while deliveries keep coming.
    let tracker = cstate.tracker.as_ref().expect("e2e tracks sequences");
    let acked_total: u64 = acked.iter().map(|a| a.len()).sum();
    let drain_timeout = Duration::from_secs_f64(cmd.drain_timeout.max(0.0));
    let mut last = (tracker.received(), Instant::now());
    while tracker.received() < acked_total
        && last.1.elapsed() < drain_timeout
        && !INTERRUPTED.load(Ordering::Relaxed)
    {
        let s = sides(&cstate);
        ticker.tick(false, &s, Some((tracker.received(), acked_total)));
        tokio::time::sleep(POLL).await;
        if tracker.received() != last.0 {
            last = (tracker.received(), Instant::now());
        }
    }
    // Every whole-run figure is read after the consumer stopped: the same deliveries.
    consumer.shutdown().await;
    let receipts = cstate.receipts(received_in_window, &acked);
    producer.shutdown().await;

    let mut settings = common_settings(common);
    producer_settings(&mut settings, &cmd.producer);
    consumer_settings(&mut settings, &cmd.consumer, &group);
    Ok(Summary {
        command: "e2e",
        settings,
        elapsed,
        sent: Some(sent.msgs),
        sent_bytes: sent.bytes,
        errors,
        receipts: Some(receipts),
        send_latency: LatencySummary::of(&latency),
        e2e_latency: LatencySummary::of(&cstate.latency()),
        figures: Some(figures),
    })
}
