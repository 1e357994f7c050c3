//! A histogram of fixed buckets recorded with plain atomic adds: no lock, no float
//! arithmetic and no allocation per observation.
//!
//! `prometheus_client`'s `Histogram` takes a mutex per observation; on the send path,
//! where every request records one or two observations, that lock and the label-set
//! hashing of a `Family` were the cost of recording. Values are integers in a unit of
//! the caller's choice (nanoseconds, bytes) and converted to the exported unit (`scale`)
//! only when Prometheus scrapes, so the text is the one `Histogram` would give.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Bucket bounds in the recorded unit, and the factor from that unit to the exported
/// one (e.g. `1e6` for nanoseconds recorded, milliseconds exported).
#[derive(Debug)]
pub struct Buckets {
    /// Upper bounds, inclusive, ascending, in the recorded unit.
    pub bounds: &'static [u64],
    /// Recorded unit per exported unit.
    pub scale: f64,
}

/// One histogram: a counter per bucket plus one for `+Inf`, and the sum. A clone is
/// another handle on the same counters, as with `prometheus_client`'s metrics.
#[derive(Debug, Clone)]
pub struct AtomicHistogram {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    buckets: &'static Buckets,
    /// `bounds.len() + 1` counters, the last for values above every bound.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
}

/// What a scrape reads of a histogram; snapshots of one label set add up.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Per bucket (not cumulative), in the exported unit's bounds, `+Inf` last.
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

impl HistogramSnapshot {
    /// Adds another snapshot of the same buckets (two codes sharing one label set).
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            mine.1 += theirs.1;
        }
        self.sum += other.sum;
        self.count += other.count;
    }

    /// Writes this snapshot as `Histogram` would.
    pub fn encode(&self, encoder: &mut MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_histogram::<NoLabelSet>(self.sum, self.count, &self.buckets, None)
    }
}

impl AtomicHistogram {
    pub fn new(buckets: &'static Buckets) -> Self {
        AtomicHistogram {
            inner: Arc::new(Inner {
                buckets,
                counts: (0..=buckets.bounds.len())
                    .map(|_| AtomicU64::new(0))
                    .collect(),
                sum: AtomicU64::new(0),
            }),
        }
    }

    /// Records `value` (in the recorded unit): two relaxed atomic adds.
    pub fn observe(&self, value: u64) {
        let inner = &*self.inner;
        let i = inner.buckets.bounds.partition_point(|&b| b < value);
        // `i` is at most `bounds.len()`, the index of the `+Inf` counter.
        if let Some(n) = inner.counts.get(i) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        inner.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.inner
            .counts
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .sum()
    }

    /// Reads the counters, in the exported unit. The count is the sum of the buckets,
    /// so a scrape never shows a count its buckets do not add up to.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let inner = &*self.inner;
        let scale = inner.buckets.scale;
        let buckets: Vec<(f64, u64)> = inner
            .buckets
            .bounds
            .iter()
            .map(|&b| b as f64 / scale)
            .chain(std::iter::once(f64::INFINITY))
            .zip(inner.counts.iter())
            .map(|(bound, n)| (bound, n.load(Ordering::Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        HistogramSnapshot {
            buckets,
            sum: inner.sum.load(Ordering::Relaxed) as f64 / scale,
            count,
        }
    }
}

impl TypedMetric for AtomicHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for AtomicHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.snapshot().encode(&mut encoder)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    static MS: Buckets = Buckets {
        bounds: &[1_000_000, 3_000_000, 10_000_000],
        scale: 1e6,
    };

    #[test]
    fn encodes_as_the_library_histogram_does() {
        let ours = AtomicHistogram::new(&MS);
        let theirs = Histogram::new([1.0, 3.0, 10.0]);
        for ns in [
            0u64, 1_000_000, 1_500_000, 2_500_000, 10_000_000, 99_000_000,
        ] {
            ours.observe(ns);
            theirs.observe(ns as f64 / 1e6);
        }
        let render = |r: &Registry| {
            let mut s = String::new();
            prometheus_client::encoding::prometheus_text::encode(&mut s, r).unwrap();
            s
        };
        let mut a = Registry::default();
        a.register("x", "h", ours);
        let mut b = Registry::default();
        b.register("x", "h", theirs);
        assert_eq!(render(&a), render(&b));
    }

    #[test]
    fn snapshots_merge() {
        let h = AtomicHistogram::new(&MS);
        h.observe(2_000_000);
        let mut s = h.snapshot();
        s.merge(&h.snapshot());
        assert_eq!(s.count, 2);
        assert_eq!(s.buckets[1], (3.0, 2));
        assert_eq!(s.sum, 4.0);
    }
}
