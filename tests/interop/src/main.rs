//! Interop check: the crates.io `rocketmq-client-rust` 1.0 producer and push consumer
//! against a running Vostok broker.
//!
//! Scenarios, each printed as one PASS/FAIL line, then a summary; the exit code is
//! non-zero when any failed:
//!
//! 1. sync sends with tags, keys and user properties
//! 2. async sends, every callback acknowledged
//! 3. oneway sends
//! 4. one batch send
//! 5. a clustering push-consumer group receives every message of 1-4 exactly once, intact
//! 6. a second group consumes the same topic independently (`--skip-second-group` drops it)
//! 7. a `TagA || TagB` subscription gets exactly those tags (`--skip-tag-filter` drops it)
//!
//! Every send, start, shutdown and wait is bounded by a timeout. Each run uses a fresh
//! topic and fresh groups (the prefix plus the start time), so runs do not see each other.

mod corpus;
mod recorder;

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocketmq_client_rust::{
    ClientConfig, ClientRuntime, ClientRuntimeConfig, DefaultMQProducer, DefaultMQPushConsumer,
    MQPushConsumer,
};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::result::SendStatus;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};
use tokio::sync::mpsc;

use corpus::{Expected, Received, SendKind, Verdict};
use recorder::Records;

const USAGE: &str = "\
usage: vostok-interop [options]
  --namesrv ADDR            name server address (default 127.0.0.1:9876)
  --topic-prefix NAME       prefix of the run's topic and groups (default VostokInterop)
  --count N                 messages per sync, async and oneway scenario (default 16)
  --batch-size N            messages in the batch send (default 8)
  --group-a-consumers N     consumer instances in the clustering group (default 2)
  --timeout-secs N          bound on waiting for all deliveries (default 60)
  --send-timeout-ms N       bound on each send (default 3000)
  --skip-second-group       do not run scenario 6
  --skip-tag-filter         do not run scenario 7
Client logs go to stderr; RUST_LOG sets their filter (default warn).";

struct Options {
    namesrv: String,
    topic_prefix: String,
    count: usize,
    batch_size: usize,
    group_a_consumers: usize,
    timeout: Duration,
    send_timeout: Duration,
    second_group: bool,
    tag_filter: bool,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut o = Options {
            namesrv: "127.0.0.1:9876".into(),
            topic_prefix: "VostokInterop".into(),
            count: 16,
            batch_size: 8,
            group_a_consumers: 2,
            timeout: Duration::from_secs(60),
            send_timeout: Duration::from_millis(3000),
            second_group: true,
            tag_filter: true,
        };
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or(format!("{flag} needs a value"));
            let number = |v: String| {
                v.parse::<usize>()
                    .map_err(|e| format!("{flag} {v:?}: {e}"))
            };
            match flag.as_str() {
                "--namesrv" => o.namesrv = value()?,
                "--topic-prefix" => o.topic_prefix = value()?,
                "--count" => o.count = number(value()?)?,
                "--batch-size" => o.batch_size = number(value()?)?,
                "--group-a-consumers" => o.group_a_consumers = number(value()?)?.max(1),
                "--timeout-secs" => o.timeout = Duration::from_secs(number(value()?)? as u64),
                "--send-timeout-ms" => {
                    o.send_timeout = Duration::from_millis(number(value()?)? as u64)
                }
                "--skip-second-group" => o.second_group = false,
                "--skip-tag-filter" => o.tag_filter = false,
                "-h" | "--help" => return Err(String::new()),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        Ok(o)
    }
}

/// Bound on starting or stopping a client.
const LIFECYCLE_TIMEOUT: Duration = Duration::from_secs(30);
/// After the last expected delivery, how long to keep listening for duplicates and strays.
const GRACE: Duration = Duration::from_secs(3);

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("{msg}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime can be built");
    let code = runtime.block_on(async {
        match ClientSetup::start() {
            Ok(setup) => {
                let report = run(&options, setup.client_runtime.clone()).await;
                setup.shutdown().await;
                report.finish()
            }
            Err(e) => {
                println!("FAIL setup: client runtime: {e}");
                1
            }
        }
    });
    // The client's runtime threads are not ours to join; leave without waiting on them.
    std::process::exit(code);
}

/// The runtime, telemetry and client pool that `rocketmq-client-rust` 1.0 asks its caller
/// to own.
struct ClientSetup {
    owner: RuntimeOwner,
    telemetry: rocketmq_observability::TelemetryRuntimeGuard,
    client_runtime: Arc<ClientRuntime>,
}

impl ClientSetup {
    fn start() -> Result<ClientSetup, Box<dyn std::error::Error>> {
        let owner = RuntimeOwner::plan(RuntimeConfig {
            thread_name: "interop-client".into(),
            ..Default::default()
        })?
        .build()?;
        let mut telemetry_config = rocketmq_observability::TelemetryBootstrapConfig::default();
        telemetry_config.logging.filter =
            std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into());
        telemetry_config.logging.console.ansi = false;
        let telemetry = rocketmq_observability::install_global(&telemetry_config)?;
        let client_runtime = ClientRuntime::try_new(
            owner.root_context().component("client"),
            ClientRuntimeConfig::default(),
            telemetry.handle(),
        )?;
        Ok(ClientSetup {
            owner,
            telemetry,
            client_runtime,
        })
    }

    async fn shutdown(self) {
        let quiet = |what: &str, healthy: bool| {
            if !healthy {
                eprintln!("note: {what} shutdown report is not healthy");
            }
        };
        match tokio::time::timeout(LIFECYCLE_TIMEOUT, self.client_runtime.shutdown()).await {
            Ok(report) => quiet("client runtime", report.is_healthy()),
            Err(_) => eprintln!("note: client runtime shutdown timed out"),
        }
        match tokio::time::timeout(LIFECYCLE_TIMEOUT, self.owner.shutdown_tasks()).await {
            Ok(report) => quiet("runtime tasks", report.is_healthy()),
            Err(_) => eprintln!("note: runtime task shutdown timed out"),
        }
        quiet("runtime", self.owner.shutdown_background().is_healthy());
        quiet("telemetry", self.telemetry.shutdown().is_healthy());
    }
}

#[derive(Default)]
struct Report {
    passed: usize,
    failed: usize,
}

impl Report {
    fn record(&mut self, scenario: &str, passed: bool, detail: &str) {
        if passed {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        let word = if passed { "PASS" } else { "FAIL" };
        println!("{word} {scenario}: {detail}");
    }

    fn finish(&self) -> i32 {
        println!("summary: {} passed, {} failed", self.passed, self.failed);
        i32::from(self.failed > 0)
    }
}

async fn bounded<T>(what: &str, limit: Duration, fut: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| format!("{what} did not finish within {limit:?}"))
}

/// One subscription group and the scenario that judges it.
struct Group {
    scenario: &'static str,
    name: String,
    expression: &'static str,
    instances: usize,
    accepts: fn(&Expected) -> bool,
    records: Records,
    consumers: Vec<DefaultMQPushConsumer>,
    start_error: Option<String>,
}

async fn run(o: &Options, rt: Arc<ClientRuntime>) -> Report {
    let mut report = Report::default();
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis()
        .to_string();
    let topic = format!("{}_{run_id}", o.topic_prefix);
    println!(
        "interop: rocketmq-client-rust 1.0, name server {}, topic {topic}",
        o.namesrv
    );
    let send_ms = o.send_timeout.as_millis() as u64;
    let mut producer = DefaultMQProducer::builder(rt.clone())
        .producer_group(format!("{}_pg_{run_id}", o.topic_prefix))
        .name_server_addr(o.namesrv.as_str())
        .send_msg_timeout(send_ms as u32)
        .build();
    match bounded("producer start", LIFECYCLE_TIMEOUT, producer.start()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            report.record("setup", false, &format!("producer start: {e}"));
            return report;
        }
        Err(e) => {
            report.record("setup", false, &e);
            return report;
        }
    }

    let mut sent: Vec<Expected> = Vec::new();

    // 1. Sync sends. They also create the topic, so consumers started next find a route.
    let mut batch: Vec<Expected> = (0..o.count)
        .map(|i| Expected::new(&run_id, &topic, SendKind::Sync, i))
        .collect();
    let (ok, detail) = sync_sends(&producer, &mut batch, send_ms).await;
    report.record("1 sync send (tags, keys, properties)", ok, &detail);
    sent.extend(batch);

    // Consumers start before the remaining sends, so those arrive through live pulls.
    let mut groups = vec![Group {
        scenario: "5 clustering group, every message exactly once",
        name: format!("{}_cg_a_{run_id}", o.topic_prefix),
        expression: "*",
        instances: o.group_a_consumers,
        accepts: |_| true,
        records: Records::default(),
        consumers: Vec::new(),
        start_error: None,
    }];
    if o.second_group {
        groups.push(Group {
            scenario: "6 second group, independent of the first",
            name: format!("{}_cg_b_{run_id}", o.topic_prefix),
            expression: "*",
            instances: 1,
            accepts: |_| true,
            records: Records::default(),
            consumers: Vec::new(),
            start_error: None,
        });
    }
    if o.tag_filter {
        groups.push(Group {
            scenario: "7 tag filter TagA || TagB",
            name: format!("{}_cg_c_{run_id}", o.topic_prefix),
            expression: "TagA || TagB",
            instances: 1,
            accepts: |e| e.tags == "TagA" || e.tags == "TagB",
            records: Records::default(),
            consumers: Vec::new(),
            start_error: None,
        });
    }
    for group in &mut groups {
        for n in 0..group.instances {
            let instance = format!("{}#{n}", group.name);
            match start_consumer(&rt, o, &topic, group, &instance).await {
                Ok(consumer) => group.consumers.push(consumer),
                Err(e) => {
                    group.start_error = Some(format!("consumer {instance}: {e}"));
                    break;
                }
            }
        }
    }

    // 2. Async sends.
    let mut batch: Vec<Expected> = (0..o.count)
        .map(|i| Expected::new(&run_id, &topic, SendKind::Async, i))
        .collect();
    let (ok, detail) = async_sends(&producer, &mut batch, o.send_timeout).await;
    report.record("2 async send (callbacks)", ok, &detail);
    sent.extend(batch);

    // 3. Oneway sends: nothing comes back, delivery is checked by the consumers.
    let batch: Vec<Expected> = (0..o.count)
        .map(|i| Expected::new(&run_id, &topic, SendKind::Oneway, i))
        .collect();
    let (ok, detail) = oneway_sends(&producer, &batch, o.send_timeout).await;
    report.record("3 oneway send", ok, &detail);
    sent.extend(batch);

    // 4. Batch send.
    let mut batch: Vec<Expected> = (0..o.batch_size)
        .map(|i| Expected::new(&run_id, &topic, SendKind::Batch, i))
        .collect();
    let (ok, detail) = batch_send(&producer, &mut batch, send_ms).await;
    report.record("4 batch send", ok, &detail);
    sent.extend(batch);

    // 5-7. Wait until every group has every message it should get, or the deadline.
    let deadline = Instant::now() + o.timeout;
    loop {
        let done = groups.iter().all(|g| {
            g.start_error.is_some() || {
                let got = g.records.snapshot();
                sent.iter()
                    .filter(|e| (g.accepts)(e))
                    .all(|e| got.iter().any(|r| r.id() == Some(e.id.as_str())))
            }
        });
        if done || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(GRACE).await;
    let started = Instant::now();
    for group in &mut groups {
        let label = format!(
            "{} ({}, {} consumer{}, \"{}\")",
            group.scenario,
            group.name,
            group.instances,
            if group.instances == 1 { "" } else { "s" },
            group.expression
        );
        let records: Vec<Received> = group.records.snapshot();
        let verdict = Verdict::check(sent.iter().filter(|e| (group.accepts)(e)), &records);
        match &group.start_error {
            Some(e) => report.record(&label, false, &format!("{e}; {}", verdict.summary())),
            None => report.record(&label, verdict.passed(), &verdict.summary()),
        }
        for consumer in &mut group.consumers {
            if bounded("consumer shutdown", LIFECYCLE_TIMEOUT, consumer.shutdown())
                .await
                .is_err()
            {
                eprintln!("note: a consumer of {} did not shut down in time", group.name);
            }
        }
    }
    if bounded("producer shutdown", LIFECYCLE_TIMEOUT, producer.shutdown())
        .await
        .is_err()
    {
        eprintln!("note: the producer did not shut down in time");
    }
    eprintln!("note: clients shut down in {:?}", started.elapsed());
    report
}

async fn start_consumer(
    rt: &Arc<ClientRuntime>,
    o: &Options,
    topic: &str,
    group: &Group,
    instance: &str,
) -> Result<DefaultMQPushConsumer, String> {
    // One instance name per consumer: two consumers of one group in one process would
    // otherwise share a client id, and the broker would see a single member.
    let mut config = ClientConfig::default();
    config.set_instance_name(instance.into());
    let mut consumer = DefaultMQPushConsumer::builder(rt.clone())
        .client_config(config)
        .name_server_addr(o.namesrv.as_str())
        .consumer_group(group.name.as_str())
        .message_model(MessageModel::Clustering)
        .consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset)
        .build();
    bounded(
        "subscribe",
        LIFECYCLE_TIMEOUT,
        consumer.subscribe(topic, group.expression),
    )
    .await?
    .map_err(|e| format!("subscribe: {e}"))?;
    consumer.register_message_listener_concurrently(group.records.listener(instance));
    bounded("consumer start", LIFECYCLE_TIMEOUT, consumer.start())
        .await?
        .map_err(|e| format!("start: {e}"))?;
    Ok(consumer)
}

async fn sync_sends(
    producer: &DefaultMQProducer,
    batch: &mut [Expected],
    send_ms: u64,
) -> (bool, String) {
    let mut failures = Vec::new();
    let limit = Duration::from_millis(send_ms * 2);
    for e in batch.iter_mut() {
        let outcome = bounded("send", limit, producer.send_with_timeout(e.to_message(), send_ms))
            .await
            .and_then(|r| r.map_err(|err| err.to_string()));
        match outcome {
            Ok(Some(r)) if r.send_status == SendStatus::SendOk => match r.msg_id {
                Some(id) => e.msg_id = Some(id.to_string()),
                None => failures.push(format!("{}: SEND_OK without a msgId", e.id)),
            },
            Ok(Some(r)) => failures.push(format!("{}: status {:?}", e.id, r.send_status)),
            Ok(None) => failures.push(format!("{}: no send result", e.id)),
            Err(err) => failures.push(format!("{}: {err}", e.id)),
        }
    }
    verdict_of_sends(batch.len(), &failures, "SEND_OK with a msgId")
}

async fn async_sends(
    producer: &DefaultMQProducer,
    batch: &mut [Expected],
    send_timeout: Duration,
) -> (bool, String) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Result<String, String>)>();
    let mut failures = Vec::new();
    let mut pending = 0;
    for (i, e) in batch.iter().enumerate() {
        let tx = tx.clone();
        let callback = move |result: Option<&rocketmq_model::result::SendResult>,
                             error: Option<&rocketmq_client_rust::ClientError>| {
            let outcome = match (result, error) {
                (Some(r), _) if r.send_status != SendStatus::SendOk => {
                    Err(format!("status {:?}", r.send_status))
                }
                (Some(r), _) => r
                    .msg_id
                    .as_ref()
                    .map(|id| id.to_string())
                    .ok_or_else(|| "SEND_OK without a msgId".to_string()),
                (None, Some(err)) => Err(err.to_string()),
                (None, None) => Err("callback with neither result nor error".into()),
            };
            // The receiver is gone only once the scenario stopped waiting.
            let _ = tx.send((i, outcome));
        };
        let call = producer.send_with_callback_timeout(
            e.to_message(),
            callback,
            send_timeout.as_millis() as u64,
        );
        match bounded("async send", send_timeout, call).await {
            Ok(Ok(())) => pending += 1,
            Ok(Err(err)) => failures.push(format!("{}: {err}", e.id)),
            Err(err) => failures.push(format!("{}: {err}", e.id)),
        }
    }
    drop(tx);
    let deadline = tokio::time::Instant::now() + send_timeout * 2;
    let mut acknowledged = 0;
    while acknowledged < pending {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((i, Ok(msg_id)))) => {
                acknowledged += 1;
                batch[i].msg_id = Some(msg_id);
            }
            Ok(Some((i, Err(err)))) => {
                acknowledged += 1;
                failures.push(format!("{}: {err}", batch[i].id));
            }
            Ok(None) => break,
            Err(_) => {
                failures.push(format!(
                    "{} callbacks missing after {:?}",
                    pending - acknowledged,
                    send_timeout * 2
                ));
                break;
            }
        }
    }
    verdict_of_sends(batch.len(), &failures, "callbacks reported SEND_OK with a msgId")
}

async fn oneway_sends(
    producer: &DefaultMQProducer,
    batch: &[Expected],
    send_timeout: Duration,
) -> (bool, String) {
    let mut failures = Vec::new();
    for e in batch {
        match bounded("oneway send", send_timeout, producer.send_oneway(e.to_message())).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => failures.push(format!("{}: {err}", e.id)),
            Err(err) => failures.push(format!("{}: {err}", e.id)),
        }
    }
    verdict_of_sends(batch.len(), &failures, "handed to the broker")
}

async fn batch_send(
    producer: &DefaultMQProducer,
    batch: &mut [Expected],
    send_ms: u64,
) -> (bool, String) {
    let messages: Vec<_> = batch.iter().map(Expected::to_message).collect();
    let limit = Duration::from_millis(send_ms * 2);
    let outcome = bounded(
        "batch send",
        limit,
        producer.send_batch_with_timeout(messages, send_ms),
    )
    .await
    .and_then(|r| r.map_err(|err| err.to_string()));
    match outcome {
        Ok(r) if r.send_status == SendStatus::SendOk => {
            // RocketMQ reports a batch's message ids joined by commas, in batch order.
            let ids: Vec<String> = r
                .msg_id
                .as_ref()
                .map(|ids| ids.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            if ids.len() != batch.len() {
                return (
                    false,
                    format!(
                        "SEND_OK but {} msgIds for {} messages: {:?}",
                        ids.len(),
                        batch.len(),
                        r.msg_id
                    ),
                );
            }
            for (e, id) in batch.iter_mut().zip(ids) {
                e.msg_id = Some(id);
            }
            (
                true,
                format!(
                    "1 batch of {} SEND_OK, {} msgIds, queue offset {}",
                    batch.len(),
                    batch.len(),
                    r.queue_offset
                ),
            )
        }
        Ok(r) => (false, format!("status {:?}", r.send_status)),
        Err(err) => (false, err),
    }
}

fn verdict_of_sends(total: usize, failures: &[String], what: &str) -> (bool, String) {
    if failures.is_empty() {
        (true, format!("{total}/{total} {what}"))
    } else {
        let shown: Vec<&str> = failures.iter().take(3).map(String::as_str).collect();
        (
            false,
            format!(
                "{} of {total} failed; first: {}",
                failures.len(),
                shown.join(" | ")
            ),
        )
    }
}
