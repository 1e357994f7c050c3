//! Latency histograms: HdrHistogram in microseconds, one per task, merged at the end
//! (recording never takes a lock shared between tasks).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Largest latency a histogram holds: one hour, in microseconds. Longer values are
/// clamped to it.
const MAX_MICROS: u64 = 3_600_000_000;

/// An empty histogram of microseconds, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("bounds 1..1h with 3 digits are valid")
}

/// Records `d`, clamped into the histogram's range.
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    record_micros(h, d.as_micros().min(u128::from(MAX_MICROS)) as u64);
}

/// Records a value in microseconds, clamped into the histogram's range (0 counts as 1).
pub fn record_micros(h: &mut Histogram<u64>, micros: u64) {
    h.saturating_record(micros.clamp(1, MAX_MICROS));
}

/// Adds `from` into `into`; both have the same bounds, so this cannot fail.
pub fn merge(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    into.add(from)
        .expect("histograms made by new_histogram share their bounds");
}

/// The percentiles a summary shows, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl LatencySummary {
    /// `None` for an empty histogram: no latency was measured.
    pub fn of(h: &Histogram<u64>) -> Option<LatencySummary> {
        if h.is_empty() {
            return None;
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        Some(LatencySummary {
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "count": self.count,
            "mean": round3(self.mean_ms),
            "p50": round3(self.p50_ms),
            "p90": round3(self.p90_ms),
            "p99": round3(self.p99_ms),
            "p999": round3(self.p999_ms),
            "max": round3(self.max_ms),
        })
    }

    /// `p50 0.081 p90 0.120 p99 0.410 p99.9 1.200 max 5.100 ms`.
    pub fn line(&self) -> String {
        format!(
            "p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3} ms  (mean {:.3}, n {})",
            self.p50_ms,
            self.p90_ms,
            self.p99_ms,
            self.p999_ms,
            self.max_ms,
            self.mean_ms,
            self.count
        )
    }
}

/// Rounds to microsecond precision for JSON.
pub fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_histogram_has_no_summary() {
        assert!(LatencySummary::of(&new_histogram()).is_none());
    }

    #[test]
    fn percentiles_come_out_in_milliseconds() {
        let mut h = new_histogram();
        // 1..=1000 µs: p50 ≈ 0.5 ms, p99 ≈ 0.99 ms, max 1 ms.
        for us in 1..=1000u64 {
            record_micros(&mut h, us);
        }
        let s = LatencySummary::of(&h).unwrap();
        assert_eq!(s.count, 1000);
        assert!((s.p50_ms - 0.5).abs() < 0.002, "{s:?}");
        assert!((s.p90_ms - 0.9).abs() < 0.002, "{s:?}");
        assert!((s.p99_ms - 0.99).abs() < 0.002, "{s:?}");
        assert!((s.p999_ms - 0.999).abs() < 0.002, "{s:?}");
        assert!((s.max_ms - 1.0).abs() < 0.002, "{s:?}");
        assert!((s.mean_ms - 0.5005).abs() < 0.002, "{s:?}");
    }

    #[test]
    fn merged_task_histograms_equal_one_histogram() {
        let mut a = new_histogram();
        let mut b = new_histogram();
        let mut all = new_histogram();
        for us in 0..5000u64 {
            let v = us * 7 % 3000 + 1;
            if us % 2 == 0 {
                record_micros(&mut a, v);
            } else {
                record_micros(&mut b, v);
            }
            record_micros(&mut all, v);
        }
        merge(&mut a, &b);
        assert_eq!(LatencySummary::of(&a), LatencySummary::of(&all));
    }

    #[test]
    fn out_of_range_values_are_clamped() {
        let mut h = new_histogram();
        record_micros(&mut h, 0);
        record(&mut h, Duration::from_secs(10 * 3600));
        let s = LatencySummary::of(&h).unwrap();
        assert_eq!(s.count, 2);
        assert!(s.max_ms >= 3_599_000.0);
    }

    #[test]
    fn json_has_the_percentile_fields() {
        let mut h = new_histogram();
        record(&mut h, Duration::from_micros(1234));
        let v = LatencySummary::of(&h).unwrap().to_json();
        for k in ["p50", "p90", "p99", "p999", "max", "mean", "count"] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        assert!((v["max"].as_f64().unwrap() - 1.234).abs() < 0.002);
    }
}
