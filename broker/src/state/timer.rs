//! Pending timer messages and their delivery progress.
//!
//! A timer message is stored in the timer topic (queue 0), so the store itself is the
//! persisted wheel (see `reroute` for how it is parked). In memory the broker keeps a
//! min-heap of `(deliver time, queue offset)`, 16 bytes per pending message: delivery
//! pops what is due and sleeps until the next head, never scanning the pending set.
//!
//! Progress is a watermark (every queue offset below it is delivered) plus the
//! delivered offsets above it, saved in `config/timerCheckpoint.json`. The delivery
//! loop itself is `service::timer`.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tracing::warn;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::MutexExt;

use crate::config::BrokerConfig;

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Checkpoint {
    watermark: i64,
    #[serde(default)]
    delivered: BTreeSet<i64>,
}

/// What the timer table holds under its lock.
#[derive(Default)]
pub(crate) struct Progress {
    pub(crate) watermark: i64,
    pub(crate) delivered: BTreeSet<i64>,
    /// Pending timers: Reverse((deliver at, queue offset)).
    pub(crate) heap: BinaryHeap<Reverse<(i64, i64)>>,
    /// Pending timers per real topic (`rocketmq_timing_messages`).
    timing: HashMap<String, i64>,
    dirty: bool,
}

impl Progress {
    pub(crate) fn mark_delivered(&mut self, offset: i64) {
        if offset < self.watermark {
            return;
        }
        self.delivered.insert(offset);
        while self.delivered.remove(&self.watermark) {
            self.watermark += 1;
        }
        self.dirty = true;
    }

    pub(crate) fn is_delivered(&self, offset: i64) -> bool {
        offset < self.watermark || self.delivered.contains(&offset)
    }

    /// The earliest pending delivery time.
    pub(crate) fn head(&self) -> Option<i64> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// One more pending timer of `topic`.
    pub(crate) fn track(&mut self, topic: &str) {
        *self.timing.entry(topic.to_owned()).or_default() += 1;
    }

    /// A pending timer of `topic` was delivered or rolled away.
    pub(crate) fn untrack(&mut self, topic: &str) {
        if let Some(n) = self.timing.get_mut(topic) {
            *n -= 1;
            if *n <= 0 {
                self.timing.remove(topic);
            }
        }
    }

    /// Forgets the per-topic counts (the heap is being rebuilt).
    pub(crate) fn clear_tracking(&mut self) {
        self.timing.clear();
    }
}

/// Apache's `timer_bound_s` bounds of `rocketmq_timer_message_snapshot`, seconds.
pub(crate) const TIMER_BOUNDS_S: [i64; 8] = [5, 60, 300, 900, 3600, 14_400, 28_800, 86_400];

/// The pending timers as a scrape sees them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TimerSnapshot {
    /// Due and not delivered yet.
    pub(crate) due: i64,
    /// Ms since the earliest due, undelivered timer was due (0 when none is).
    pub(crate) behind_ms: i64,
    /// Per real topic, pending.
    pub(crate) per_topic: Vec<(String, i64)>,
    /// Per bound of [`TIMER_BOUNDS_S`]: timers due within (previous bound, bound]
    /// seconds from now.
    pub(crate) distribution: [i64; 8],
}

/// The pending timers and the checkpoint file.
pub(crate) struct TimerTable {
    file: ConfigFile,
    progress: Mutex<Progress>,
    /// Signalled when a timer earlier than the current head arrives.
    pub(crate) wake: Notify,
}

impl TimerTable {
    pub(crate) fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("timerCheckpoint.json"));
        let checkpoint: Checkpoint = file
            .load(|bytes| serde_json::from_slice(bytes).ok())
            .unwrap_or_default();
        TimerTable {
            file,
            progress: Mutex::new(Progress {
                watermark: checkpoint.watermark,
                delivered: checkpoint.delivered,
                ..Default::default()
            }),
            wake: Notify::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.locked()
    }

    /// A timer message of `topic` was dispatched at `offset`, due at `deliver_at`.
    pub(crate) fn on_arrival(&self, offset: i64, deliver_at: i64, topic: &str) {
        let mut p = self.lock();
        if p.is_delivered(offset) {
            return;
        }
        let earlier = p.head().is_none_or(|head| deliver_at < head);
        p.heap.push(Reverse((deliver_at, offset)));
        p.track(topic);
        drop(p);
        if earlier {
            self.wake.notify_one();
        }
    }

    /// Number of timers waiting.
    pub(crate) fn pending(&self) -> usize {
        self.lock().heap.len()
    }

    /// Reads the pending timers at `now` (one pass over the heap, at scrape time).
    pub(crate) fn snapshot(&self, now: i64) -> TimerSnapshot {
        let p = self.lock();
        let mut out = TimerSnapshot::default();
        let mut earliest_due: Option<i64> = None;
        for Reverse((at, offset)) in p.heap.iter() {
            if p.is_delivered(*offset) {
                continue;
            }
            if *at <= now {
                out.due += 1;
                earliest_due = Some(earliest_due.map_or(*at, |e| e.min(*at)));
                continue;
            }
            let seconds = (at - now + 999) / 1000;
            if let Some(i) = TIMER_BOUNDS_S.iter().position(|b| seconds <= *b) {
                out.distribution[i] += 1;
            }
        }
        out.behind_ms = earliest_due.map_or(0, |at| now - at);
        out.per_topic = p.timing.iter().map(|(t, n)| (t.clone(), *n)).collect();
        out.per_topic.sort();
        out
    }

    pub(crate) fn persist(&self) {
        if !self.lock().dirty {
            return;
        }
        let written = self.file.persist_with(|| {
            let mut p = self.lock();
            p.dirty = false;
            serde_json::to_vec(&Checkpoint {
                watermark: p.watermark,
                delivered: p.delivered.clone(),
            })
            .unwrap_or_default()
        });
        if let Err(e) = written {
            self.lock().dirty = true;
            warn!(file = %self.file.path().display(), error = %e, "cannot persist timer checkpoint");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watermark_advances_over_delivered_offsets() {
        let mut p = Progress::default();
        p.mark_delivered(1);
        p.mark_delivered(2);
        assert_eq!(p.watermark, 0);
        assert!(p.is_delivered(2) && !p.is_delivered(0));
        p.mark_delivered(0);
        assert_eq!(p.watermark, 3);
        assert!(p.delivered.is_empty());
    }

    #[test]
    fn a_snapshot_counts_due_pending_and_per_bound() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.path().to_path_buf();
        let table = TimerTable::load(&c);
        let now = 1_000_000;
        table.on_arrival(0, now - 3_000, "A");
        table.on_arrival(1, now - 1_000, "A");
        table.on_arrival(2, now + 4_000, "B");
        table.on_arrival(3, now + 61_000, "B");
        table.on_arrival(4, now + 10_000, "B");
        table.lock().mark_delivered(1);
        table.lock().untrack("A");
        let s = table.snapshot(now);
        assert_eq!(s.due, 1);
        assert_eq!(s.behind_ms, 3_000);
        assert_eq!(s.per_topic, [("A".to_owned(), 1), ("B".to_owned(), 3)]);
        assert_eq!(s.distribution, [1, 1, 1, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn progress_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.path().to_path_buf();
        let table = TimerTable::load(&c);
        table.on_arrival(0, 10, "T");
        table.on_arrival(1, 5, "T");
        assert_eq!((table.pending(), table.lock().head()), (2, Some(5)));
        table.lock().mark_delivered(0);
        table.lock().mark_delivered(2);
        table.persist();
        let p = TimerTable::load(&c);
        let p = p.lock();
        assert_eq!(p.watermark, 1);
        assert!(p.is_delivered(2) && !p.is_delivered(1));
    }
}
