//! Per-topic and per-group statistics over the last minute, hour and day, as RocketMQ's
//! `BrokerStatsManager` keeps them for VIEW_BROKER_STATS_DATA (`statsAll`):
//! `TOPIC_PUT_NUMS` (key: topic) and `GROUP_GET_NUMS` (key: `topic@group`).
//!
//! Apache samples each counter every 10 s (kept for a minute), every 10 min (kept for
//! an hour) and every hour (kept for a day), and answers with the difference between
//! the newest and the oldest sample of a window. Here the newest point is the counter
//! as it is when asked, so an answer is current from the first request on; a counter
//! missing from the oldest sample (a topic first sent to since) counts from zero. The
//! counters are the request metrics' ([`super::metrics`]), kept while the exporter or
//! the console is on.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vostok_remoting::support::sync::MutexExt;

use super::metrics::BrokerMetrics;

/// Apache's statistic names served.
pub(crate) const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
pub(crate) const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";

/// Time between samples of the minute window.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// `(sample period ms, samples kept)` of the minute, hour and day windows.
const WINDOWS: [(i64, usize); 3] = [(10_000, 7), (600_000, 7), (3_600_000, 25)];

/// One window's figures (Java `BrokerStatsItem`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub(crate) struct StatsItem {
    pub(crate) sum: i64,
    pub(crate) tps: f64,
    /// Messages per request; 0 where the broker does not count requests (gets).
    pub(crate) avgpt: f64,
}

/// VIEW_BROKER_STATS_DATA's body (Java `BrokerStatsData`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatsData {
    pub(crate) stats_minute: StatsItem,
    pub(crate) stats_hour: StatsItem,
    pub(crate) stats_day: StatsItem,
}

/// `(messages, requests)` of one counter; requests 0 when not counted.
type Point = (u64, u64);

/// Every counter at one time.
#[derive(Debug, Default)]
struct Snapshot {
    at: i64,
    values: HashMap<(&'static str, String), Point>,
}

/// The three windows' samples.
#[derive(Default)]
pub(crate) struct StatsWindows {
    rings: Mutex<[VecDeque<Arc<Snapshot>>; 3]>,
}

fn read(metrics: &BrokerMetrics, at: i64) -> Snapshot {
    let mut values = HashMap::new();
    for (topic, messages, puts) in metrics.topic_put_counts() {
        values.insert((TOPIC_PUT_NUMS, topic), (messages, puts));
    }
    for (topic, group, messages) in metrics.group_out_totals() {
        values.insert((GROUP_GET_NUMS, format!("{topic}@{group}")), (messages, 0));
    }
    Snapshot { at, values }
}

impl StatsWindows {
    /// Takes a sample at `now` (ms) into each window whose period has passed since its
    /// newest sample; called every [`SAMPLE_EVERY`].
    pub(crate) fn sample(&self, metrics: &BrokerMetrics, now: i64) {
        let snapshot = Arc::new(read(metrics, now));
        let mut rings = self.rings.locked();
        for (ring, (period, keep)) in rings.iter_mut().zip(WINDOWS) {
            // A little slack: a tick a few ms early still counts as the next period.
            let due = ring
                .back()
                .is_none_or(|last| now - last.at >= period - 1000);
            if due {
                if ring.len() == keep {
                    ring.pop_front();
                }
                ring.push_back(snapshot.clone());
            }
        }
    }

    /// The statistic `name` of `key` at `now`; `None` when the broker never counted
    /// that key (Apache answers SYSTEM_ERROR "not exist").
    pub(crate) fn view(
        &self,
        metrics: &BrokerMetrics,
        name: &str,
        key: &str,
        now: i64,
    ) -> Option<StatsData> {
        let name = match name {
            TOPIC_PUT_NUMS => TOPIC_PUT_NUMS,
            GROUP_GET_NUMS => GROUP_GET_NUMS,
            _ => return None,
        };
        let current = read(metrics, now);
        let id = (name, key.to_owned());
        let last = *current.values.get(&id)?;
        let oldest: Vec<Option<Arc<Snapshot>>> = self
            .rings
            .locked()
            .iter()
            .map(|r| r.front().cloned())
            .collect();
        let item = |first: &Option<Arc<Snapshot>>| {
            let (at, (messages, requests)) = match first {
                Some(s) => (s.at, s.values.get(&id).copied().unwrap_or_default()),
                None => (now, (0, 0)),
            };
            compute(last, (messages, requests), now - at)
        };
        Some(StatsData {
            stats_minute: item(&oldest[0]),
            stats_hour: item(&oldest[1]),
            stats_day: item(&oldest[2]),
        })
    }
}

/// Apache's `computeStatsData`: the sum between two points, per second and per request.
fn compute(last: Point, first: Point, elapsed_ms: i64) -> StatsItem {
    let sum = last.0.saturating_sub(first.0);
    let requests = last.1.saturating_sub(first.1);
    StatsItem {
        sum: sum as i64,
        tps: if elapsed_ms > 0 {
            sum as f64 * 1000.0 / elapsed_ms as f64
        } else {
            0.0
        },
        avgpt: if requests > 0 {
            sum as f64 / requests as f64
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::metrics::MessageKind;

    #[test]
    fn windows_count_from_their_oldest_sample() {
        let m = BrokerMetrics::new(true);
        let w = StatsWindows::default();
        w.sample(&m, 0);
        m.add_put("T", MessageKind::Normal, 30, 3000);
        m.add_put("T", MessageKind::Normal, 10, 1000);
        m.record_get("T", "G", 5, 500);
        let d = w.view(&m, TOPIC_PUT_NUMS, "T", 20_000).unwrap();
        assert_eq!(d.stats_minute.sum, 40);
        assert_eq!(d.stats_minute.tps, 2.0);
        assert_eq!(d.stats_minute.avgpt, 20.0);
        assert_eq!(d.stats_day.sum, 40);
        let g = w.view(&m, GROUP_GET_NUMS, "T@G", 20_000).unwrap();
        assert_eq!(g.stats_hour.sum, 5);
        assert!(w.view(&m, TOPIC_PUT_NUMS, "other", 20_000).is_none());
        assert!(w.view(&m, "TOPIC_PUT_SIZE", "T", 20_000).is_none());

        // Ten seconds later the minute window moves on; the day window does not.
        w.sample(&m, 10_000);
        m.add_put("T", MessageKind::Normal, 10, 1000);
        let d = w.view(&m, TOPIC_PUT_NUMS, "T", 20_000).unwrap();
        assert_eq!(
            d.stats_minute.sum, 50,
            "the first minute sample is still kept"
        );
        for t in 2..=7 {
            w.sample(&m, t * 10_000);
        }
        let d = w.view(&m, TOPIC_PUT_NUMS, "T", 70_000).unwrap();
        assert_eq!(d.stats_minute.sum, 10, "the samples before 10 s dropped");
        assert_eq!(d.stats_day.sum, 50);
    }
}
