//! Master kill -9 under SYNC_MASTER producers: a master and its slave (classic HA) on
//! loopback; after each SIGKILL of the master, every message it acknowledged is read
//! back from the slave. The master is restarted between kills.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ledger::{Ledger, Verdict};
use crate::load::{self, Producers};
use crate::process::{Broker, Namesrv};
use crate::raw::Raw;
use crate::{Env, Outcome};

const TOPIC: &str = "ChaosHa";
const QUEUES: i32 = 4;

async fn wait_acks_beyond(ledger: &Ledger, n: usize, limit: Duration) -> Result<Duration, String> {
    let t = Instant::now();
    while ledger.acked() <= n {
        if t.elapsed() > limit {
            return Err(format!(
                "no SEND_OK within {limit:?}; failures {:?}",
                ledger.failures()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(t.elapsed())
}

pub async fn run(env: &Env) -> Result<Outcome, String> {
    let dir = env.scratch("master-kill")?;
    let ns = Namesrv::start(&env.bins, dir.path())?;
    let group = |id: &str, role: &str, store: &str| {
        vec![
            ("brokerName", "chaos-ha".to_owned()),
            ("brokerId", id.to_owned()),
            ("brokerRole", role.to_owned()),
            (
                "storePathRootDir",
                dir.path().join(store).display().to_string(),
            ),
            ("mappedFileSizeCommitLog", env.commitlog_file.to_string()),
        ]
    };
    let mut master = Broker::start(
        &env.bins,
        dir.path(),
        &ns.addr,
        &group("0", "SYNC_MASTER", "master"),
    )?;
    let slave = Broker::start(
        &env.bins,
        dir.path(),
        &ns.addr,
        &group("1", "SLAVE", "slave"),
    )?;
    let raw = Raw::default();
    raw.create_topic(&master.addr, TOPIC, QUEUES).await?;
    raw.wait_route(&ns.addr, TOPIC, Duration::from_secs(30))
        .await?;

    let ledger = Arc::new(Ledger::default());
    let producer = load::producer(&ns.addr, "chaos-ha-producer").await?;
    let producers = Producers::start(
        producer.clone(),
        TOPIC,
        "ha",
        env.producers,
        Duration::ZERO,
        ledger.clone(),
    );
    let first = wait_acks_beyond(&ledger, 0, Duration::from_secs(60)).await?;
    // The slave learns the topic with its 10 s config sync.
    let deadline = Instant::now() + Duration::from_secs(60);
    while raw.read_topic(&slave.addr, TOPIC, QUEUES).await.is_err() {
        if Instant::now() > deadline {
            return Err("the slave never served the topic".into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let mut worst = Verdict::default();
    let mut per_kill = Vec::new();
    let mut resumes = Vec::new();
    for kill in 0..env.master_kills {
        tokio::time::sleep(Duration::from_secs(3)).await;
        master.kill9();
        let stored = raw.read_topic(&slave.addr, TOPIC, QUEUES).await?;
        let verdict = ledger.verify(&stored);
        per_kill.push(format!(
            "{}/{}",
            verdict.acked - verdict.lost,
            verdict.acked
        ));
        if verdict.lost > worst.lost || kill == 0 {
            worst = verdict;
        }
        let acked = ledger.acked();
        master.restart()?;
        resumes.push(wait_acks_beyond(&ledger, acked, Duration::from_secs(90)).await?);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    producers.stop().await;
    producer.shutdown().await;
    let stored = raw.read_topic(&slave.addr, TOPIC, QUEUES).await?;
    let last = ledger.verify(&stored);
    resumes.sort();
    Ok(Outcome {
        name: "master kill -9 (SYNC_MASTER)",
        checked: format!(
            "{} SIGKILLs of a SYNC_MASTER under {} sync producers; after each, every acknowledged message read back from its SLAVE",
            env.master_kills, env.producers
        ),
        figures: vec![
            ("first SEND_OK after start".into(), format!("{} ms", first.as_millis())),
            ("acknowledged on the slave at each kill".into(), per_kill.join(", ")),
            ("worst kill".into(), worst.describe()),
            ("at the end, on the slave".into(), last.describe()),
            (
                "restart to SEND_OK again (median)".into(),
                format!("{:.1} s", resumes.get(resumes.len() / 2).map_or(0.0, Duration::as_secs_f64)),
            ),
            ("failed sends".into(), format!("{:?}", ledger.failures())),
        ],
        passed: worst.lost == 0 && last.ok(),
    })
}
