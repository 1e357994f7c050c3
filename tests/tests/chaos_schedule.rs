//! The randomized fault schedule (`vostok_tests::schedule`) on short runs: each entry
//! of `tests/chaos/regressions.txt` played on a fresh group, a classic SYNC_MASTER
//! group and a controller-mode group of three at once; nothing acknowledged may be
//! missing, doubled or diverging between replicas, and no process may exit by
//! itself. The chaos suite runs the same schedules for an hour on the release
//! binaries. Skipped (with a message) without root.

use vostok_tests::netns::Network;
use vostok_tests::schedule::{self, GroupKind, Settings};

async fn play_the_list(kind: GroupKind) {
    let list = schedule::regressions(include_str!("../chaos/regressions.txt"))
        .expect("tests/chaos/regressions.txt");
    for entry in list.into_iter().filter(|e| e.kind == kind) {
        let Some(net) = Network::new(&format!("schedule-{}", kind.name())) else {
            return;
        };
        let settings = Settings {
            // The timeline as it happens, for whoever follows a run with --nocapture.
            live: std::env::var_os("VOSTOK_SCHEDULE_LIVE").is_some(),
            ..Settings::short(kind, entry.seed, entry.episodes.clone())
        };
        let report = schedule::run(&net, &settings)
            .await
            .unwrap_or_else(|e| panic!("{} seed {}: {e}", kind.name(), entry.seed));
        eprintln!("{}", report.describe());
        assert!(
            report.passed(),
            "{} seed {} episodes {:?} failed:\n{}timeline:\n{}",
            kind.name(),
            entry.seed,
            entry.episodes,
            report.describe(),
            report.timeline.join("\n")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_group_keeps_what_it_acknowledged_under_random_faults() {
    play_the_list(GroupKind::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_group_keeps_what_it_acknowledged_under_random_faults() {
    play_the_list(GroupKind::Controller).await;
}
