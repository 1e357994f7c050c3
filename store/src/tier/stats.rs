//! The tier's counters, and the snapshot of its state that `brokerStatus`, the
//! metrics and the console show (docs/tiered-storage.md#status-and-metrics).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (ms) of the buckets of the tier's read latency histogram.
pub const READ_LATENCY_BOUNDS_MS: [u64; 8] = [1, 5, 10, 50, 100, 500, 1000, 5000];

/// Counters of the tier.
#[derive(Debug, Default)]
pub struct TierStats {
    pub segments_uploaded: AtomicU64,
    pub bytes_uploaded: AtomicU64,
    pub upload_failures: AtomicU64,
    /// Whether the last upload pass failed.
    pub failing: AtomicBool,
    pub segments_expired: AtomicU64,
    pub reads: AtomicU64,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    /// Reads from the object store (cache misses answered, or failed).
    pub object_reads: AtomicU64,
    pub object_read_bytes: AtomicU64,
    pub object_read_failures: AtomicU64,
    /// Object-store read latency: per bucket of [`READ_LATENCY_BOUNDS_MS`], then
    /// those above the last bound.
    pub read_latency_buckets: [AtomicU64; READ_LATENCY_BOUNDS_MS.len() + 1],
    pub read_latency_micros: AtomicU64,
    /// When the last segment was uploaded, ms (0: none since start).
    pub last_upload_ms: AtomicI64,
    /// The last failed upload pass: when (ms) and why.
    pub last_upload_error: Mutex<Option<(i64, String)>>,
}

impl TierStats {
    /// Records one read from the object store.
    pub(super) fn object_read(&self, took: Duration, bytes: Option<usize>) {
        let ms = took.as_millis() as u64;
        let bucket = READ_LATENCY_BOUNDS_MS
            .iter()
            .position(|b| ms <= *b)
            .unwrap_or(READ_LATENCY_BOUNDS_MS.len());
        bump(&self.read_latency_buckets[bucket]);
        self.read_latency_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        bump(&self.object_reads);
        match bytes {
            Some(n) => {
                self.object_read_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            None => bump(&self.object_read_failures),
        }
    }
}

/// A snapshot of the tier's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TierStatus {
    /// Segments recorded in the tier.
    pub segments: usize,
    /// Commitlog offset of the oldest segment's first byte, if any.
    pub min_offset: Option<i64>,
    /// Commitlog offset of the newest segment's first byte, if any.
    pub last_segment: Option<i64>,
    pub segments_uploaded: u64,
    pub bytes_uploaded: u64,
    pub upload_failures: u64,
    /// Segments deleted from the tier (objects included) for their age.
    pub segments_expired: u64,
    pub reads: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Bytes the read cache holds.
    pub cache_bytes: u64,
    /// Whether the last upload attempt failed.
    pub failing: bool,
    pub object_reads: u64,
    pub object_read_bytes: u64,
    pub object_read_failures: u64,
    /// Object-store reads per latency bucket ([`READ_LATENCY_BOUNDS_MS`], then above).
    pub read_latency_buckets: Vec<u64>,
    /// Sum of the object-store reads' latencies.
    pub read_latency_micros: u64,
    /// Reads of cold data queued or running on the tier's reader threads.
    pub reads_pending: u64,
    /// Reads given up over the I/O budget: refused with the reader queue full, or
    /// waiting past `tieredStoreReadTimeout` for a reader or the budget.
    pub reads_over_budget: u64,
    /// Commitlog bytes not in the tier yet (the writer's file included).
    pub upload_lag_bytes: i64,
    /// Age of the oldest message not in the tier yet, ms (0 when none).
    pub upload_lag_ms: i64,
    /// The object store, for people: kind and place, never credentials.
    pub backend: String,
    /// When the last segment was uploaded, ms (0: none since start).
    pub last_upload_ms: i64,
    /// The last failed upload pass since start: when (ms) and why, kept after the
    /// uploads recover (`failing` says whether they did).
    pub last_upload_error: Option<(i64, String)>,
}

/// Adds one to a counter.
pub(super) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}
