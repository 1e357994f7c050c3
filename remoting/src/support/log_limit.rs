//! Rate-limited logging for events a flood repeats thousands of times a second
//! (refused connections, replaced responses): one line a second at most, with the
//! count of the ones left out.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::support::time::uptime_millis;

const PERIOD_MS: u64 = 1000;

/// One event's limiter; a `static` beside the log line.
pub struct LogLimit {
    /// `uptime_millis() + 1` of the last line logged; 0 before the first.
    last: AtomicU64,
    suppressed: AtomicU64,
}

impl LogLimit {
    pub const fn new() -> Self {
        LogLimit {
            last: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(lines left out since the last one)` when this occurrence may be logged.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(uptime_millis() + 1)
    }

    fn allow_at(&self, now: u64) -> Option<u64> {
        let last = self.last.load(Ordering::Relaxed);
        if last != 0 && now < last + PERIOD_MS {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        if self
            .last
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

impl Default for LogLimit {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_period_and_the_count_of_the_rest() {
        let limit = LogLimit::new();
        assert_eq!(limit.allow_at(5), Some(0));
        assert_eq!(limit.allow_at(6), None);
        assert_eq!(limit.allow_at(1004), None);
        assert_eq!(limit.allow_at(1005), Some(2));
        assert_eq!(LogLimit::new().allow(), Some(0));
    }
}
