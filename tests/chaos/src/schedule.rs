//! The randomized fault schedule (`vostok_tests::schedule`) for minutes or hours on
//! the release binaries: a classic SYNC_MASTER group, or a controller-mode group of
//! three with three controllers, each process on its own network-namespace host.
//! Needs root. The run's directory (SEND_OK log, timeline, and the brokers' logs when
//! it fails) is kept when the check fails.

use std::time::Duration;

use vostok_tests::netns::Network;
use vostok_tests::schedule::{self, GroupKind, Settings};

use crate::{Env, Outcome};

pub async fn run(env: &Env, kind: GroupKind) -> Result<Outcome, String> {
    if !vostok_tests::use_programs(&env.bins.dir) {
        return Err("the harness already runs other programs".into());
    }
    let seed = env.seed.unwrap_or_else(|| u64::from(rand::random::<u32>()));
    let (episodes, until) = match &env.episodes {
        Some(range) => (range.clone(), None),
        None => (0..u32::MAX, Some(Duration::from_secs(env.minutes * 60))),
    };
    let dir = env.scratch(&format!("schedule-{}", kind.name()))?;
    let settings = Settings {
        kind,
        seed,
        episodes,
        until,
        rate: env.rate,
        producer_tasks: env.producers,
        disk_mib: env.disk_mib,
        settle_limit: Duration::from_secs(60),
        live: true,
        work: Some(dir.path().to_path_buf()),
    };
    println!("   seed {seed}");
    // A panic in the harness (a process that does not boot) ends this scenario only.
    let report = tokio::spawn(async move {
        let net = Network::new(&format!("chaos-{}", kind.name()))
            .ok_or("network namespaces need root and iproute2")?;
        schedule::run(&net, &settings).await
    })
    .await
    .map_err(|e| format!("the schedule panicked: {e}"))??;
    println!("{}", report.describe());
    let mut figures = report.figures();
    if !report.passed() {
        let kept = dir.keep();
        figures.push(("kept".into(), kept.display().to_string()));
    }
    Ok(Outcome {
        name: match kind {
            GroupKind::Classic => "schedule: classic SYNC_MASTER group",
            GroupKind::Controller => "schedule: controller-mode group of 3",
        },
        checked: format!(
            "a randomized fault schedule (kill -9, SIGSTOP, link cut, name server/controller kill -9, \
             restarts, disk full) under {} SDK producers at {} msg/s; every queue of every replica \
             read back and compared with the SEND_OKs and with each other",
            env.producers, env.rate
        ),
        figures,
        passed: report.passed(),
    })
}
