//! Latency-based fault avoidance (Java `MQFaultStrategy` + `LatencyFaultToleranceImpl`).
//!
//! After each send the producer records how long the broker took. A slow answer or a
//! failure makes the broker "not available" for a while, and queue selection skips it
//! until then:
//!
//! | latency ≥ (ms) | 50 | 100 | 550 | 1000 | 2000 | 3000 | 15000 |
//! |---|---|---|---|---|---|---|---|
//! | avoided for (ms) | 0 | 0 | 30 000 | 60 000 | 120 000 | 180 000 | 600 000 |
//!
//! A failed send (no answer, or a retryable error code) counts as 10 000 ms, i.e.
//! 180 s of avoidance, as in RocketMQ 5.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use vostok_remoting::support::sync::MutexExt;

use crate::NameMap;

const LATENCY_MAX: [u64; 7] = [50, 100, 550, 1000, 2000, 3000, 15000];
const NOT_AVAILABLE: [u64; 7] = [0, 0, 30_000, 60_000, 120_000, 180_000, 600_000];
/// Latency charged to a broker that failed a send.
pub const ISOLATION_LATENCY_MS: u64 = 10_000;

#[derive(Debug, Clone, Copy)]
struct FaultItem {
    latency_ms: u64,
    available_at: Instant,
}

/// Per-broker-name availability, shared by every send of a producer.
#[derive(Debug, Default)]
pub struct LatencyFaultTolerance {
    items: Mutex<NameMap<FaultItem>>,
}

/// How long a broker is avoided after answering in `latency_ms`.
pub fn not_available_duration(latency_ms: u64) -> Duration {
    let i = LATENCY_MAX.iter().rposition(|max| latency_ms >= *max);
    Duration::from_millis(i.map_or(0, |i| NOT_AVAILABLE[i]))
}

impl LatencyFaultTolerance {
    /// Records one send's outcome at `now`.
    pub fn update(&self, broker_name: &str, latency_ms: u64, isolation: bool, now: Instant) {
        let latency_ms = if isolation {
            ISOLATION_LATENCY_MS.max(latency_ms)
        } else {
            latency_ms
        };
        let item = FaultItem {
            latency_ms,
            available_at: now + not_available_duration(latency_ms),
        };
        let mut items = self.items.locked();
        // Every send records its broker: the name is copied only the first time.
        match items.get_mut(broker_name) {
            Some(known) => *known = item,
            None => {
                items.insert(broker_name.to_owned(), item);
            }
        }
    }

    pub fn is_available(&self, broker_name: &str, now: Instant) -> bool {
        let items = self.items.locked();
        items
            .get(broker_name)
            .is_none_or(|item| now >= item.available_at)
    }

    /// The last latency recorded for a broker.
    pub fn latency_ms(&self, broker_name: &str) -> Option<u64> {
        let items = self.items.locked();
        items.get(broker_name).map(|i| i.latency_ms)
    }

    pub fn remove(&self, broker_name: &str) {
        self.items.locked().remove(broker_name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_the_java_table() {
        assert_eq!(not_available_duration(0), Duration::ZERO);
        assert_eq!(not_available_duration(120), Duration::ZERO);
        assert_eq!(not_available_duration(550), Duration::from_secs(30));
        assert_eq!(not_available_duration(2500), Duration::from_secs(120));
        assert_eq!(not_available_duration(10_000), Duration::from_secs(180));
        assert_eq!(not_available_duration(20_000), Duration::from_secs(600));
    }

    #[test]
    fn a_failed_broker_is_avoided_then_recovers() {
        let f = LatencyFaultTolerance::default();
        let t0 = Instant::now();
        assert!(f.is_available("a", t0));
        f.update("a", 3, true, t0);
        assert!(!f.is_available("a", t0 + Duration::from_secs(179)));
        assert!(f.is_available("a", t0 + Duration::from_secs(180)));
        f.update("b", 20, false, t0);
        assert!(f.is_available("b", t0));
        f.update("b", 600, false, t0);
        assert!(!f.is_available("b", t0 + Duration::from_secs(29)));
        assert_eq!(f.latency_ms("b"), Some(600));
        f.remove("b");
        assert!(f.is_available("b", t0));
    }
}
