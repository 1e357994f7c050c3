//! Counters the tasks bump and the progress line reads: one cache-line-sized slot per
//! task (or per queue shard on the consumer side), summed when read, so that tasks on
//! different cores never write the same line.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Default)]
#[repr(align(128))]
struct Slot {
    msgs: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
}

/// Message, byte and error counts at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub msgs: u64,
    pub bytes: u64,
    pub errors: u64,
}

impl std::ops::Sub for Totals {
    type Output = Totals;
    fn sub(self, rhs: Totals) -> Totals {
        Totals {
            msgs: self.msgs.saturating_sub(rhs.msgs),
            bytes: self.bytes.saturating_sub(rhs.bytes),
            errors: self.errors.saturating_sub(rhs.errors),
        }
    }
}

pub struct Meter {
    slots: Box<[Slot]>,
}

impl Meter {
    pub fn new(slots: usize) -> Meter {
        Meter {
            slots: (0..slots.max(1)).map(|_| Slot::default()).collect(),
        }
    }

    fn slot(&self, i: usize) -> &Slot {
        &self.slots[i % self.slots.len()]
    }

    pub fn add(&self, slot: usize, msgs: u64, bytes: u64) {
        let s = self.slot(slot);
        s.msgs.fetch_add(msgs, Ordering::Relaxed);
        s.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn error(&self, slot: usize, msgs: u64) {
        self.slot(slot).errors.fetch_add(msgs, Ordering::Relaxed);
    }

    pub fn totals(&self) -> Totals {
        self.slots.iter().fold(Totals::default(), |t, s| Totals {
            msgs: t.msgs + s.msgs.load(Ordering::Relaxed),
            bytes: t.bytes + s.bytes.load(Ordering::Relaxed),
            errors: t.errors + s.errors.load(Ordering::Relaxed),
        })
    }
}

/// The phase of a run, shared by the coordinator and the producer tasks.
pub struct RunState {
    /// Producers stop starting sends.
    pub stop: AtomicBool,
    /// Warm-up is over: latencies are recorded and `-c` counts.
    pub measuring: AtomicBool,
    claimed: AtomicU64,
    count: Option<u64>,
}

impl RunState {
    pub fn new(count: Option<u64>) -> RunState {
        RunState {
            stop: AtomicBool::new(false),
            measuring: AtomicBool::new(false),
            claimed: AtomicU64::new(0),
            count,
        }
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn measuring(&self) -> bool {
        self.measuring.load(Ordering::Relaxed)
    }

    /// How many of the `n` messages a task wants to send it may send: all during the
    /// warm-up, what is left of `-c` afterwards, 0 once stopped.
    pub fn claim(&self, n: u64) -> u64 {
        if self.stopped() {
            return 0;
        }
        let (Some(count), true) = (self.count, self.measuring()) else {
            return n;
        };
        let before = self.claimed.fetch_add(n, Ordering::Relaxed);
        count.saturating_sub(before).min(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_sum_up() {
        let m = Meter::new(3);
        m.add(0, 1, 100);
        m.add(1, 2, 200);
        m.add(7, 3, 300); // wraps onto slot 1
        m.error(2, 5);
        assert_eq!(
            m.totals(),
            Totals {
                msgs: 6,
                bytes: 600,
                errors: 5
            }
        );
        let later = Totals {
            msgs: 10,
            bytes: 1000,
            errors: 5,
        };
        assert_eq!(
            later - m.totals(),
            Totals {
                msgs: 4,
                bytes: 400,
                errors: 0
            }
        );
    }

    #[test]
    fn claims_stop_at_the_count_after_warm_up() {
        let s = RunState::new(Some(100));
        // Warm-up sends do not count.
        assert_eq!(s.claim(32), 32);
        s.measuring.store(true, Ordering::Relaxed);
        assert_eq!(s.claim(32), 32);
        assert_eq!(s.claim(32), 32);
        assert_eq!(s.claim(32), 32);
        assert_eq!(s.claim(32), 4);
        assert_eq!(s.claim(1), 0);
        let unlimited = RunState::new(None);
        unlimited.measuring.store(true, Ordering::Relaxed);
        assert_eq!(unlimited.claim(1000), 1000);
        unlimited.stop.store(true, Ordering::Relaxed);
        assert_eq!(unlimited.claim(1), 0);
    }
}
