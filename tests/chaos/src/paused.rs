//! A push consumer suspended for a while (minutes with `--pause-secs`) while producers
//! keep sending, then resumed: it receives everything acknowledged, nothing lost.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ledger::Ledger;
use crate::load::{self, Producers};
use crate::process::{Broker, Namesrv};
use crate::raw::Raw;
use crate::{Env, Outcome};

const TOPIC: &str = "ChaosPaused";
const QUEUES: i32 = 4;

pub async fn run(env: &Env) -> Result<Outcome, String> {
    let dir = env.scratch("paused")?;
    let ns = Namesrv::start(&env.bins, dir.path())?;
    let broker = Broker::start(
        &env.bins,
        dir.path(),
        &ns.addr,
        &[
            ("brokerName", "chaos-paused".into()),
            ("mappedFileSizeCommitLog", env.commitlog_file.to_string()),
        ],
    )?;
    let raw = Raw::default();
    raw.create_topic(&broker.addr, TOPIC, QUEUES).await?;
    raw.wait_route(&ns.addr, TOPIC, Duration::from_secs(30))
        .await?;

    let ledger = Arc::new(Ledger::default());
    let producer = load::producer(&ns.addr, "chaos-paused-producer").await?;
    let (consumer, received) = load::consumer(&ns.addr, "chaos-paused-consumer", TOPIC).await?;
    let producers = Producers::start(
        producer.clone(),
        TOPIC,
        "paused",
        env.producers,
        Duration::from_millis(5),
        ledger.clone(),
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    consumer.suspend();
    let before = received.lock().expect("received lock").len();
    tokio::time::sleep(Duration::from_secs(env.pause_secs)).await;
    let during = received.lock().expect("received lock").len() - before;
    let acked_at_resume = ledger.acked();
    let backlog = acked_at_resume.saturating_sub(before);
    let resumed = Instant::now();
    consumer.resume();
    tokio::time::sleep(Duration::from_secs(3)).await;
    producers.stop().await;
    let (missing, repeats) =
        load::wait_received(&received, &ledger, Duration::from_secs(120)).await;
    let caught_up = resumed.elapsed();
    consumer.shutdown().await;
    producer.shutdown().await;
    let stored = raw.read_topic(&broker.addr, TOPIC, QUEUES).await?;
    let verdict = ledger.verify(&stored);
    Ok(Outcome {
        name: "paused consumer",
        checked: format!(
            "a push consumer suspended for {} s under {} producers, then resumed: it receives every acknowledged message",
            env.pause_secs, env.producers
        ),
        figures: vec![
            ("pause".into(), format!("{} s", env.pause_secs)),
            ("received while suspended".into(), during.to_string()),
            ("backlog at resume".into(), format!("~{backlog} messages")),
            ("verdict".into(), verdict.describe()),
            ("consumer missing".into(), missing.to_string()),
            ("consumer redeliveries".into(), repeats.to_string()),
            ("resume to everything received".into(), format!("{:.1} s", caught_up.as_secs_f64())),
        ],
        passed: verdict.ok() && missing == 0,
    })
}
