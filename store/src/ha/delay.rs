//! How long replication takes, as cumulative histograms of milliseconds (for
//! GET_BROKER_RUNTIME_INFO and the benchmark; docs/replication.md#observability).
//!
//! Every event is counted, not sampled: a reader takes two snapshots and subtracts
//! them to get the distribution over a period, so no sampling interval can hide a
//! spike and no query delay can invent one.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Upper bounds of the buckets, in milliseconds; one more bucket counts the rest.
pub const BOUNDS_MS: [i64; 13] = [1, 2, 5, 10, 20, 50, 100, 200, 300, 500, 1000, 2000, 5000];

/// Counts of events per bucket of [`BOUNDS_MS`], and the largest value seen.
#[derive(Debug, Default)]
pub(crate) struct DelayHistogram {
    counts: [AtomicU64; BOUNDS_MS.len() + 1],
    max: AtomicI64,
}

impl DelayHistogram {
    pub(crate) fn record(&self, ms: i64) {
        let ms = ms.max(0);
        let bucket = BOUNDS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(BOUNDS_MS.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(ms, Ordering::Relaxed);
    }

    /// `le:count` per bucket (`inf` for the last), then `max:ms`, comma-separated:
    /// `1:120,2:14,...,inf:0,max:37`.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        for (k, count) in self.counts.iter().enumerate() {
            let bound = BOUNDS_MS
                .get(k)
                .map_or_else(|| "inf".to_owned(), i64::to_string);
            out.push_str(&format!("{bound}:{},", count.load(Ordering::Relaxed)));
        }
        out.push_str(&format!("max:{}", self.max.load(Ordering::Relaxed)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fall_in_the_first_bucket_that_holds_them() {
        let h = DelayHistogram::default();
        for ms in [0, 1, 2, 3, 100, 101, 9_999, -5] {
            h.record(ms);
        }
        assert_eq!(
            h.render(),
            "1:3,2:1,5:1,10:0,20:0,50:0,100:1,200:1,300:0,500:0,1000:0,2000:0,5000:0,inf:1,max:9999"
        );
    }
}
