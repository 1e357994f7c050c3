//! kill -9 loop: a SYNC_FLUSH broker SIGKILLed `cycles` times under synchronous
//! producers and a push consumer; afterwards every acknowledged message is stored and
//! consumed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::ledger::Ledger;
use crate::load::{self, Producers};
use crate::process::{Broker, Namesrv};
use crate::raw::Raw;
use crate::{Env, Outcome};

const TOPIC: &str = "ChaosKill";
const QUEUES: i32 = 4;

pub async fn run(env: &Env) -> Result<Outcome, String> {
    let dir = env.scratch("kill-loop")?;
    let ns = Namesrv::start(&env.bins, dir.path())?;
    let mut broker = Broker::start(
        &env.bins,
        dir.path(),
        &ns.addr,
        &[
            ("brokerName", "chaos-kill".into()),
            ("flushDiskType", "SYNC_FLUSH".into()),
            ("mappedFileSizeCommitLog", env.commitlog_file.to_string()),
        ],
    )?;
    let raw = Raw::default();
    raw.create_topic(&broker.addr, TOPIC, QUEUES).await?;
    raw.wait_route(&ns.addr, TOPIC, Duration::from_secs(30))
        .await?;

    let ledger = Arc::new(Ledger::default());
    let producer = load::producer(&ns.addr, "chaos-kill-producer").await?;
    let (consumer, received) = load::consumer(&ns.addr, "chaos-kill-consumer", TOPIC).await?;
    let producers = Producers::start(
        producer.clone(),
        TOPIC,
        "kill",
        env.producers,
        Duration::ZERO,
        ledger.clone(),
    );

    let mut restarts = Vec::new();
    let started = Instant::now();
    for cycle in 0..env.cycles {
        let run_for = Duration::from_millis(rand::rng().random_range(200..800));
        tokio::time::sleep(run_for).await;
        broker.kill9();
        restarts.push(
            broker
                .restart()
                .map_err(|e| format!("cycle {cycle}: restart: {e}"))?,
        );
        if (cycle + 1) % 10 == 0 {
            println!(
                "  kill-loop: {} cycles, {} acknowledged so far",
                cycle + 1,
                ledger.acked()
            );
        }
    }
    // Let the producers see the last restart, then stop them.
    tokio::time::sleep(Duration::from_secs(2)).await;
    producers.stop().await;
    let elapsed = started.elapsed();

    let (missing, repeats) =
        load::wait_received(&received, &ledger, Duration::from_secs(120)).await;
    consumer.shutdown().await;
    producer.shutdown().await;
    let stored = raw.read_topic(&broker.addr, TOPIC, QUEUES).await?;
    let verdict = ledger.verify(&stored);
    restarts.sort();
    let median = restarts
        .get(restarts.len() / 2)
        .copied()
        .unwrap_or_default();

    Ok(Outcome {
        name: "kill -9 loop",
        checked: format!(
            "{} SIGKILLs of a SYNC_FLUSH broker ({} MiB commitlog files) under {} sync producers and a push consumer; every acknowledged message stored and consumed",
            env.cycles,
            env.commitlog_file >> 20,
            env.producers
        ),
        figures: vec![
            ("cycles".into(), env.cycles.to_string()),
            ("duration".into(), format!("{:.0} s", elapsed.as_secs_f64())),
            ("sends".into(), ledger.attempts().to_string()),
            ("verdict".into(), verdict.describe()),
            ("consumer missing".into(), missing.to_string()),
            ("consumer redeliveries".into(), repeats.to_string()),
            ("restart to serving (median)".into(), format!("{} ms", median.as_millis())),
            ("failed sends".into(), format!("{:?}", ledger.failures())),
        ],
        passed: verdict.ok() && missing == 0,
    })
}
