//! The memory budget of a server process: one account for every buffer that grows
//! with load (docs/limits.md).
//!
//! Buffers *reserve* their bytes before they exist and give them back when they are
//! gone: a [`Reservation`] is the receipt, and dropping it releases the bytes. The
//! remoting layer reserves the frames it receives (from the first bytes of a frame
//! until its request is answered), the frames queued for writing and a fixed amount
//! per connection; tables that grow with load (held pulls, timers, POP checkpoints,
//! the duplication window) report their size as a *gauge*, set periodically.
//!
//! Two thresholds:
//!
//! * the **limit**: no reservation passes it. A frame that cannot be reserved is not
//!   read (the connection waits, then closes when its frame deadline passes); a
//!   response that cannot be reserved is replaced by a small SYSTEM_BUSY; a new
//!   connection that cannot be reserved is refused.
//! * the **soft limit**: above it [`MemoryBudget::is_pressed`] is true and producers
//!   get SYSTEM_BUSY (flow control), so that memory stops growing before the limit.
//!
//! Releases wake the readers waiting for room only when some are waiting, so the
//! common path is two atomic additions per frame.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// One process's account of load-driven memory.
pub struct MemoryBudget {
    limit: usize,
    soft: usize,
    /// Bytes held by live reservations.
    reserved: AtomicUsize,
    /// Bytes reported by tables (see the module docs).
    gauge: AtomicUsize,
    /// Highest `reserved + gauge` seen.
    peak: AtomicUsize,
    /// Reservations refused since start.
    refused: AtomicU64,
    /// Tasks waiting in [`MemoryBudget::reserve`].
    waiters: AtomicUsize,
    released: Notify,
}

impl fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("limit", &self.limit)
            .field("soft", &self.soft)
            .field("used", &self.used())
            .finish()
    }
}

/// Bytes taken from a [`MemoryBudget`]; dropping it gives them back.
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: usize,
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Reservation({} bytes)", self.bytes)
    }
}

impl MemoryBudget {
    /// A budget of `limit` bytes whose soft limit is `soft` (clamped to the limit).
    pub fn new(limit: usize, soft: usize) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget {
            limit,
            soft: soft.min(limit),
            reserved: AtomicUsize::new(0),
            gauge: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            released: Notify::new(),
        })
    }

    /// A budget that never refuses: clients, and tests that do not measure memory.
    pub fn unlimited() -> Arc<MemoryBudget> {
        Self::new(usize::MAX, usize::MAX)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn soft_limit(&self) -> usize {
        self.soft
    }

    /// Reserved bytes plus the tables' gauge.
    pub fn used(&self) -> usize {
        self.reserved
            .load(Ordering::Relaxed)
            .saturating_add(self.gauge.load(Ordering::Relaxed))
    }

    /// Bytes held by reservations alone.
    pub fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// The highest use seen.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Reservations refused since start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Past the soft limit: producers should be told to slow down.
    pub fn is_pressed(&self) -> bool {
        self.used() >= self.soft
    }

    /// Sets the tables' gauge (bytes they hold, estimated by their owners).
    pub fn set_gauge(&self, bytes: usize) {
        self.gauge.store(bytes, Ordering::Relaxed);
        self.note_peak(self.used());
    }

    fn note_peak(&self, used: usize) {
        self.peak.fetch_max(used, Ordering::Relaxed);
    }

    /// Takes `bytes` if the limit allows it.
    pub fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<Reservation> {
        let gauge = self.gauge.load(Ordering::Relaxed);
        let room = self.limit.saturating_sub(gauge);
        let taken = self
            .reserved
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                held.checked_add(bytes).filter(|after| *after <= room)
            });
        match taken {
            Ok(held) => {
                self.note_peak(held + bytes + gauge);
                Some(Reservation {
                    budget: self.clone(),
                    bytes,
                })
            }
            Err(_) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Takes `bytes` whatever the limit: only for amounts bounded by something
    /// reserved before them (see [`Reservation::split_off`]) and for tests.
    pub fn reserve_unchecked(self: &Arc<Self>, bytes: usize) -> Reservation {
        let held = self.reserved.fetch_add(bytes, Ordering::AcqRel);
        self.note_peak(held + bytes + self.gauge.load(Ordering::Relaxed));
        Reservation {
            budget: self.clone(),
            bytes,
        }
    }

    /// An empty reservation, to be grown or merged into.
    pub fn empty(self: &Arc<Self>) -> Reservation {
        Reservation {
            budget: self.clone(),
            bytes: 0,
        }
    }

    /// Takes `bytes`, waiting for releases until the limit allows it. Cancel-safe;
    /// callers bound the wait (a frame deadline), since it lasts as long as the
    /// memory stays taken.
    pub async fn reserve(self: &Arc<Self>, bytes: usize) -> Reservation {
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        loop {
            if let Some(r) = self.try_reserve(bytes) {
                return r;
            }
            let notified = self.released.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            self.waiters.fetch_add(1, Ordering::SeqCst);
            let _waiting = Waiting(&self.waiters);
            // A release between the first attempt and the registration saw no waiter.
            if let Some(r) = self.try_reserve(bytes) {
                return r;
            }
            notified.await;
        }
    }

    fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.reserved.fetch_sub(bytes, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.released.notify_waiters();
        }
    }
}

impl Reservation {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn budget(&self) -> &Arc<MemoryBudget> {
        &self.budget
    }

    /// Moves `other`'s bytes into this reservation (same budget).
    pub fn merge(&mut self, mut other: Reservation) {
        debug_assert!(Arc::ptr_eq(&self.budget, &other.budget));
        self.bytes += std::mem::take(&mut other.bytes);
    }

    /// Splits off up to `bytes` into a reservation of their own.
    pub fn split_off(&mut self, bytes: usize) -> Reservation {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Reservation {
            budget: self.budget.clone(),
            bytes,
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stop_at_the_limit_and_come_back_when_dropped() {
        let budget = MemoryBudget::new(1000, 800);
        let a = budget.try_reserve(600).expect("fits");
        assert!(!budget.is_pressed());
        let b = budget.try_reserve(300).expect("fits");
        assert!(budget.is_pressed(), "900 is past the soft limit");
        assert!(
            budget.try_reserve(101).is_none(),
            "nothing passes the limit"
        );
        assert_eq!(budget.refused(), 1);
        assert_eq!(budget.used(), 900);
        drop(a);
        assert_eq!(budget.used(), 300);
        assert!(budget.try_reserve(700).is_some());
        drop(b);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.peak(), 1000);
    }

    #[test]
    fn the_gauge_counts_against_the_limit() {
        let budget = MemoryBudget::new(1000, 500);
        budget.set_gauge(600);
        assert!(budget.is_pressed());
        assert!(budget.try_reserve(401).is_none());
        let r = budget.try_reserve(400).expect("fits beside the gauge");
        assert_eq!(budget.used(), 1000);
        budget.set_gauge(0);
        assert_eq!(budget.used(), 400);
        drop(r);
    }

    #[test]
    fn split_and_merge_keep_the_total() {
        let budget = MemoryBudget::new(1000, 1000);
        let mut r = budget.try_reserve(500).unwrap();
        let part = r.split_off(200);
        assert_eq!((r.bytes(), part.bytes()), (300, 200));
        let mut empty = budget.empty();
        empty.merge(part);
        assert_eq!(budget.used(), 500);
        drop(r);
        assert_eq!(budget.used(), 200);
        drop(empty);
        assert_eq!(budget.used(), 0);
        let unlimited = MemoryBudget::unlimited();
        assert!(unlimited.try_reserve(usize::MAX / 2).is_some());
    }

    #[tokio::test]
    async fn a_release_wakes_a_waiter() {
        let budget = MemoryBudget::new(100, 100);
        let held = budget.try_reserve(100).unwrap();
        let b = budget.clone();
        let waiter = tokio::spawn(async move { b.reserve(50).await.bytes() });
        tokio::task::yield_now().await;
        drop(held);
        assert_eq!(waiter.await.unwrap(), 50);
    }
}
