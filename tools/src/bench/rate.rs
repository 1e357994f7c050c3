//! `--rate`: paces one task to a fixed message rate. The timer has millisecond
//! resolution, so a task sends in short bursts and sleeps once it is a millisecond
//! ahead of its schedule; a task that falls far behind does not burst to catch up.

use std::time::Duration;

use tokio::time::Instant;

/// Ahead of schedule by more than this: sleep.
const SLACK: Duration = Duration::from_millis(1);
/// Behind schedule by more than this: forget the debt.
const MAX_DEBT: Duration = Duration::from_millis(50);

pub struct Pacer {
    interval: Duration,
    next: Option<Instant>,
}

impl Pacer {
    /// A pacer for `per_sec` messages a second (`None`: no limit).
    pub fn new(per_sec: Option<f64>) -> Option<Pacer> {
        let per_sec = per_sec.filter(|r| *r > 0.0)?;
        Some(Pacer {
            interval: Duration::from_secs_f64(1.0 / per_sec),
            next: None,
        })
    }

    /// Books `n` messages at `now` and says how long to wait before sending them.
    pub fn book(&mut self, now: Instant, n: u64) -> Option<Duration> {
        let mut next = self.next.unwrap_or(now);
        if now.saturating_duration_since(next) > MAX_DEBT {
            next = now;
        }
        let at = next;
        self.next = Some(next + self.interval * n as u32);
        let ahead = at.saturating_duration_since(now);
        (ahead > SLACK).then_some(ahead)
    }

    /// Waits until `n` more messages may go.
    pub async fn wait(&mut self, n: u64) {
        if let Some(d) = self.book(Instant::now(), n) {
            tokio::time::sleep(d).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rate_no_pacer() {
        assert!(Pacer::new(None).is_none());
        assert!(Pacer::new(Some(0.0)).is_none());
    }

    #[test]
    fn sends_in_bursts_then_waits() {
        // 10,000/s = one per 100 µs: the first ~11 go at once, then the pacer asks to wait.
        let mut p = Pacer::new(Some(10_000.0)).unwrap();
        let t0 = Instant::now();
        let mut immediate = 0;
        while p.book(t0, 1).is_none() {
            immediate += 1;
        }
        assert!((10..=12).contains(&immediate), "{immediate}");
        // Booking at the right times never waits.
        let mut p = Pacer::new(Some(10_000.0)).unwrap();
        for i in 0..1000u32 {
            assert!(p.book(t0 + Duration::from_micros(100) * i, 1).is_none());
        }
    }

    #[test]
    fn the_wait_matches_the_rate() {
        let mut p = Pacer::new(Some(1000.0)).unwrap();
        let t0 = Instant::now();
        // 100 messages at once at 1,000/s: the last may go 99 ms later.
        let mut last = None;
        for _ in 0..100 {
            last = p.book(t0, 1);
        }
        let wait = last.unwrap();
        assert!(wait >= Duration::from_millis(98) && wait <= Duration::from_millis(100));
        // A batch books its whole size.
        let mut p = Pacer::new(Some(1000.0)).unwrap();
        assert!(p.book(t0, 32).is_none());
        assert_eq!(p.book(t0, 32), Some(Duration::from_millis(32)));
    }

    #[test]
    fn a_late_task_does_not_burst_forever() {
        let mut p = Pacer::new(Some(1000.0)).unwrap();
        let t0 = Instant::now();
        p.book(t0, 1);
        // One second late: the debt is dropped, so after a few sends it waits again.
        let late = t0 + Duration::from_secs(1);
        let mut free = 0;
        while p.book(late, 1).is_none() {
            free += 1;
        }
        assert!(free <= 3, "{free}");
    }
}
