//! The expiry sweep (`scanNotActiveBroker`): every `scanNotActiveBrokerInterval`
//! (5 s), brokers silent past their heartbeat timeout (120 s) are dropped from the
//! routes and their connections closed.
//!
//! Brokers whose connection closes are dropped at once by the processor's
//! `on_channel_closed`; the sweep catches the ones whose connection stays open but
//! silent (a hung broker, a half-open TCP connection).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;
use tracing::debug;
use vostok_remoting::support::time::monotonic;

use crate::route::{ExpiredBroker, RouteInfoManager};

/// One sweep at `now`: drops the expired brokers and closes their connections.
pub fn sweep(route: &RouteInfoManager, now: Instant) -> Vec<ExpiredBroker> {
    let expired = route.scan_not_active_brokers(now);
    for broker in &expired {
        if let Some(channel) = &broker.channel {
            channel.close();
        }
    }
    expired
}

/// Sweeps every `interval` until `shutdown`; the first sweep comes one interval after
/// start, as in Java.
pub(crate) async fn run(
    route: Arc<RouteInfoManager>,
    interval: Duration,
    shutdown: CancellationToken,
) {
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    // After a stall, sweep once and keep the rhythm rather than sweeping in a burst.
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = ticker.tick() => {
                let expired = sweep(&route, monotonic());
                debug!(expired = expired.len(), "expiry sweep done");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::{BrokerRegistration, RouteConfig};
    use vostok_remoting::protocol::body::TopicConfig;

    fn registration(addr: &str) -> BrokerRegistration {
        let mut reg = BrokerRegistration {
            cluster_name: "c".into(),
            broker_addr: addr.into(),
            broker_name: "b".into(),
            broker_id: 0,
            ha_server_addr: "h:1".into(),
            ..Default::default()
        };
        reg.topic_config_wrapper
            .topic_config_table
            .insert("T".into(), TopicConfig::new("T", 4));
        reg
    }

    #[tokio::test(start_paused = true)]
    async fn the_periodic_sweep_expires_silent_brokers() {
        let route = Arc::new(RouteInfoManager::new(RouteConfig::default()));
        route.register_broker(registration("a:1"), monotonic());
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(run(route.clone(), Duration::from_secs(5), shutdown.clone()));

        tokio::time::sleep(Duration::from_secs(119)).await;
        assert!(
            route.pickup_topic_route_data("T").is_some(),
            "still within 120 s"
        );
        // The broker refreshes its registration; the clock restarts.
        route.register_broker(registration("a:1"), monotonic());
        tokio::time::sleep(Duration::from_secs(119)).await;
        assert!(route.pickup_topic_route_data("T").is_some());
        // Past 120 s of silence, the next sweep (at most 5 s later) drops it.
        tokio::time::sleep(Duration::from_secs(7)).await;
        assert!(route.pickup_topic_route_data("T").is_none());
        assert!(route.live_brokers().is_empty());

        shutdown.cancel();
        task.await.unwrap();
    }
}
