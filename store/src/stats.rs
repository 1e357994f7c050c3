//! Counters behind [`crate::MessageStore::runtime_info`].

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) put_times: AtomicU64,
    pub(crate) put_bytes: AtomicU64,
    pub(crate) put_failed: AtomicU64,
    pub(crate) get_found: AtomicU64,
    pub(crate) get_miss: AtomicU64,
    pub(crate) get_transferred: AtomicU64,
    pub(crate) flush_timeouts: AtomicU64,
    /// SYNC_MASTER puts answered FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE.
    pub(crate) slave_timeouts: AtomicU64,
    pub(crate) slave_not_available: AtomicU64,
    /// Unconsumed messages dropped by forced deletions (`cleanFileForciblyEnable`).
    pub(crate) forced_unconsumed_dropped: AtomicU64,
    /// Unconsumed messages the last retention pass refused to drop (a gauge).
    pub(crate) forced_unconsumed_refused: AtomicU64,
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
