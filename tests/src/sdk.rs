//! What the SDK tests share: bounded waiting, and a client with quick timers.

use std::future::Future;
use std::time::{Duration, Instant};

use vostok_client::ClientConfig;

/// Upper bound of every wait in the SDK tests.
pub const WAIT: Duration = Duration::from_secs(30);

/// Polls `check` until it holds, at most [`WAIT`]; panics naming `what` otherwise.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if check().await {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`eventually`] for a condition that needs no awaiting.
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    eventually(what, || std::future::ready(cond())).await
}

/// Short timers: offsets reach the broker within 200 ms, rebalancing runs every 2 s
/// besides the broker's NOTIFY_CONSUMER_IDS_CHANGED.
pub fn client(namesrv: &str, instance: &str) -> ClientConfig {
    ClientConfig {
        instance_name: instance.to_owned(),
        persist_consumer_offset_interval: Duration::from_millis(200),
        rebalance_interval: Duration::from_secs(2),
        ..ClientConfig::with_namesrv(namesrv)
    }
}
