//! The console's last hour (docs/operations.md#console): every [`SAMPLE_EVERY`] the
//! sampler reads the message counters and each group's lag into a ring of
//! [`SAMPLES`] points, from which the pages draw rates and lag over time. Memory: one
//! point per topic and group per sample; topics and groups that disappear age out.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;

use crate::state::Broker;

/// Time between samples.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Points kept: one hour.
pub(crate) const SAMPLES: usize = 360;

/// One sample.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sample {
    pub(crate) at: i64,
    /// Messages stored per topic since start.
    pub(crate) topic_in: BTreeMap<String, u64>,
    /// Messages taken per group since start.
    pub(crate) group_out: BTreeMap<String, u64>,
    /// (messages behind, ms behind) per group.
    pub(crate) group_lag: BTreeMap<String, (i64, i64)>,
}

/// The ring.
#[derive(Default)]
pub(crate) struct History {
    samples: Mutex<VecDeque<Sample>>,
}

/// A series: `(time ms, value)` points.
pub(crate) type Series = Vec<(i64, f64)>;

impl History {
    /// Takes a sample of `broker` now.
    pub(crate) fn sample(&self, broker: &Broker) {
        let now = now_millis();
        let mut s = Sample {
            at: now,
            topic_in: broker
                .observed
                .metrics
                .topic_in_totals()
                .into_iter()
                .collect(),
            ..Default::default()
        };
        for (_, group, n) in broker.observed.metrics.group_out_totals() {
            *s.group_out.entry(group).or_default() += n;
        }
        for group in crate::ops::lag::known_groups(&broker.consumers) {
            let lag = crate::ops::lag::group_lag(
                &broker.storage,
                &broker.consumers,
                &broker.pop,
                &crate::ops::lag::LagOf::all(&group),
            );
            let messages = lag.queues.iter().map(|q| q.lag).sum();
            let ms = lag
                .queues
                .iter()
                .map(|q| q.latency_ms(now))
                .max()
                .unwrap_or(0);
            s.group_lag.insert(group, (messages, ms));
        }
        let mut ring = self.samples.locked();
        if ring.len() == SAMPLES {
            ring.pop_front();
        }
        ring.push_back(s);
    }

    /// Per-second rate of a counter between consecutive samples.
    fn rate(&self, read: impl Fn(&Sample) -> Option<u64>) -> Series {
        let ring = self.samples.locked();
        ring.iter()
            .zip(ring.iter().skip(1))
            .map(|(a, b)| {
                let secs = ((b.at - a.at) as f64 / 1000.0).max(0.001);
                let delta = read(b).unwrap_or(0).saturating_sub(read(a).unwrap_or(0));
                (b.at, delta as f64 / secs)
            })
            .collect()
    }

    /// Messages in per second, of one topic or of all.
    pub(crate) fn rate_in(&self, topic: Option<&str>) -> Series {
        self.rate(|s| match topic {
            Some(t) => s.topic_in.get(t).copied(),
            None => Some(s.topic_in.values().sum()),
        })
    }

    /// Messages out per second, of one group or of all.
    pub(crate) fn rate_out(&self, group: Option<&str>) -> Series {
        self.rate(|s| match group {
            Some(g) => s.group_out.get(g).copied(),
            None => Some(s.group_out.values().sum()),
        })
    }

    /// A group's lag over time: (messages, seconds).
    pub(crate) fn lag(&self, group: &str) -> (Series, Series) {
        let ring = self.samples.locked();
        ring.iter()
            .filter_map(|s| s.group_lag.get(group).map(|l| (s.at, *l)))
            .map(|(at, (m, ms))| ((at, m as f64), (at, ms as f64 / 1000.0)))
            .unzip()
    }
}

/// Samples `broker` into `history` until the broker shuts down.
pub(crate) fn spawn_sampler(broker: &Arc<Broker>, history: Arc<History>) {
    let b = broker.clone();
    broker.life.tasks.spawn(async move {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        loop {
            tokio::select! {
                _ = b.life.shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            let (b2, h) = (b.clone(), history.clone());
            // Lag reads the consume queues: off the reactor.
            let _ = tokio::task::spawn_blocking(move || h.sample(&b2)).await;
        }
    });
}
