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
//! 7. a tag-filtered subscription (`TagA||TagB`) gets exactly those tags
//!    (`--skip-tag-filter` drops it)
//! 8. the group of 5, stopped and started again, resumes from the offsets it committed:
//!    nothing is redelivered and a new message arrives (`--skip-resume` drops it)
//!
//! Every send, start, shutdown and wait is bounded by a timeout. Each run uses a fresh
//! topic and fresh groups (the prefix plus the start time), so runs do not see each other.
//!
//! Two defaults work around the client's own deviations from Apache RocketMQ (README.md):
//! the tag expression has no spaces around `||`, and the client runtime's blocking lane
//! that runs listeners gets a deeper queue. `--tag-expression` and `--stock-client-lanes`
//! bring the client's behaviour back.

mod corpus;
mod groups;
mod recorder;
mod sends;

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocketmq_client_rust::{ClientRuntime, ClientRuntimeConfig, DefaultMQProducer};
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};

use corpus::{Expected, Received, SendKind, Verdict};
use groups::{resume, start_consumer, Group};
use sends::{async_sends, batch_send, oneway_sends, sync_sends};

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
  --skip-resume             do not run scenario 8
  --tag-expression EXPR     scenario 7's subscription (default TagA||TagB)
  --stock-client-lanes      keep the client runtime's default blocking-lane queue depth
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
    resume: bool,
    tag_expression: String,
    stock_client_lanes: bool,
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
            resume: true,
            tag_expression: "TagA||TagB".into(),
            stock_client_lanes: false,
        };
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or(format!("{flag} needs a value"));
            let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag} {v:?}: {e}"));
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
                "--skip-resume" => o.resume = false,
                "--tag-expression" => o.tag_expression = value()?,
                "--stock-client-lanes" => o.stock_client_lanes = true,
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
        match ClientSetup::start(options.stock_client_lanes) {
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
    fn start(stock_lanes: bool) -> Result<ClientSetup, Box<dyn std::error::Error>> {
        let mut config = RuntimeConfig {
            thread_name: "interop-client".into(),
            ..Default::default()
        };
        if !stock_lanes {
            // The push consumer runs every listener call on this lane and, when its queue
            // (8 x cores deep) is full, fails the call and sends the message back for a
            // retry. Java's consume pool queues without bound; so does this, nearly.
            config.blocking_lane_policies.metadata_io.max_queue_depth = 4096;
        }
        let owner = RuntimeOwner::plan(config)?.build()?;
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

async fn bounded<T>(
    what: &str,
    limit: Duration,
    fut: impl Future<Output = T>,
) -> Result<T, String> {
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| format!("{what} did not finish within {limit:?}"))
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
    let mut groups = vec![Group::new(
        "5 clustering group, every message exactly once",
        format!("{}_cg_a_{run_id}", o.topic_prefix),
        "*",
        o.group_a_consumers,
    )];
    if o.second_group {
        groups.push(Group::new(
            "6 second group, independent of the first",
            format!("{}_cg_b_{run_id}", o.topic_prefix),
            "*",
            1,
        ));
    }
    if o.tag_filter {
        groups.push(Group::new(
            "7 tag-filtered group",
            format!("{}_cg_c_{run_id}", o.topic_prefix),
            &o.tag_expression,
            1,
        ));
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
                    .filter(|e| g.accepts(e))
                    .all(|e| got.iter().any(|r| r.id() == Some(e.id.as_str())))
            }
        });
        if done || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    tokio::time::sleep(GRACE).await;
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
        let verdict = Verdict::check(sent.iter().filter(|e| group.accepts(e)), &records);
        match &group.start_error {
            Some(e) => report.record(&label, false, &format!("{e}; {}", verdict.summary())),
            None => report.record(&label, verdict.passed(), &verdict.summary()),
        }
        for consumer in &mut group.consumers {
            if bounded("consumer shutdown", LIFECYCLE_TIMEOUT, consumer.shutdown())
                .await
                .is_err()
            {
                eprintln!(
                    "note: a consumer of {} did not shut down in time",
                    group.name
                );
            }
        }
    }
    // 8. The first group again, now that its consumers have stopped.
    if o.resume {
        let (ok, detail) = resume(&rt, o, &topic, &run_id, &producer, &groups[0].name).await;
        report.record(
            "8 restarted group resumes from its committed offsets",
            ok,
            &detail,
        );
    }
    if bounded("producer shutdown", LIFECYCLE_TIMEOUT, producer.shutdown())
        .await
        .is_err()
    {
        eprintln!("note: the producer did not shut down in time");
    }
    report
}
