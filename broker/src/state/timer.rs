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
use std::collections::{BTreeSet, BinaryHeap};
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

    /// A timer message was dispatched at `offset`, due at `deliver_at`.
    pub(crate) fn on_arrival(&self, offset: i64, deliver_at: i64) {
        let mut p = self.lock();
        if p.is_delivered(offset) {
            return;
        }
        let earlier = p.head().is_none_or(|head| deliver_at < head);
        p.heap.push(Reverse((deliver_at, offset)));
        drop(p);
        if earlier {
            self.wake.notify_one();
        }
    }

    /// Number of timers waiting.
    pub(crate) fn pending(&self) -> usize {
        self.lock().heap.len()
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
    fn progress_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.path().to_path_buf();
        let table = TimerTable::load(&c);
        table.on_arrival(0, 10);
        table.on_arrival(1, 5);
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
