//! The I/O budget of tier reads (docs/tiered-storage.md#reads-and-the-hot-tail): reads
//! of cold data run on their own threads, `store-tier-read`, never on the threads that
//! serve the hot tail, and at most `tieredStoreReadConcurrency` object-store reads at
//! once, paced to `tieredStoreReadBandwidth` bytes a second. A read over the budget
//! waits until its request's deadline (`tieredStoreReadTimeout` after the request
//! began, one for all the objects it reads), then gives up (the consumer asks again
//! at the same offset).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use vostok_remoting::support::sync::MutexExt;

use super::TierError;

/// How much reading ahead of the pace a quiet spell earns: one second's worth.
const BURST: Duration = Duration::from_secs(1);

/// Bounds the object-store reads in flight and their bytes a second.
pub(crate) struct ReadBudget {
    concurrency: usize,
    /// Bytes a second; 0: no bound.
    bandwidth: u64,
    state: Mutex<BudgetState>,
    freed: Condvar,
    /// Reads that gave up waiting for the budget.
    pub(crate) timeouts: AtomicU64,
}

struct BudgetState {
    stopped: bool,
    in_flight: usize,
    /// When the pace lets the next read start.
    next_start: Instant,
}

/// One object-store read under the budget; its slot is freed on drop.
pub(crate) struct Permit<'a> {
    budget: &'a ReadBudget,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.budget.state.locked().in_flight -= 1;
        self.budget.freed.notify_one();
    }
}

impl Permit<'_> {
    /// Charges `bytes` more to the pace: a read whose size was known only once done.
    pub(crate) fn charge(&self, bytes: u64) {
        self.budget.pace(&mut self.budget.state.locked(), bytes);
    }
}

impl ReadBudget {
    pub(crate) fn new(concurrency: usize, bandwidth: u64) -> Self {
        ReadBudget {
            concurrency: concurrency.max(1),
            bandwidth,
            state: Mutex::new(BudgetState {
                stopped: false,
                in_flight: 0,
                next_start: Instant::now(),
            }),
            freed: Condvar::new(),
            timeouts: AtomicU64::new(0),
        }
    }

    /// Waits, until `deadline`, for a slot and for the pace to allow a read of
    /// `bytes`, which is then charged. `timeout` is what the error names.
    pub(crate) fn acquire(
        &self,
        bytes: u64,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Permit<'_>, TierError> {
        let mut s = self.state.locked();
        loop {
            if s.stopped {
                return Err(TierError::Shutdown);
            }
            let now = Instant::now();
            let slot = s.in_flight < self.concurrency;
            let paced = self.bandwidth == 0 || s.next_start <= now;
            if slot && paced {
                break;
            }
            if now >= deadline {
                self.timeouts.fetch_add(1, Ordering::Relaxed);
                return Err(TierError::Busy(timeout));
            }
            // A freed slot wakes the wait; the pace is waited for by time.
            let until = if slot {
                s.next_start.min(deadline)
            } else {
                deadline
            };
            s = match self
                .freed
                .wait_timeout(s, until.saturating_duration_since(now))
            {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        s.in_flight += 1;
        self.pace(&mut s, bytes);
        Ok(Permit { budget: self })
    }

    /// Reads waiting give up, and later ones too.
    pub(crate) fn stop(&self) {
        self.state.locked().stopped = true;
        self.freed.notify_all();
    }

    fn pace(&self, s: &mut BudgetState, bytes: u64) {
        if self.bandwidth == 0 || bytes == 0 {
            return;
        }
        let cost = Duration::from_secs_f64(bytes as f64 / self.bandwidth as f64);
        let now = Instant::now();
        let from = s.next_start.max(now.checked_sub(BURST).unwrap_or(now));
        s.next_start = from + cost;
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The threads that run reads of cold data, with a bounded queue of reads waiting.
pub(crate) struct Readers {
    queue: SyncSender<(Instant, Job)>,
    /// Reads queued or running.
    pending: Arc<AtomicUsize>,
    /// Reads refused: the queue was full, or they waited past the read timeout.
    pub(crate) refused: Arc<AtomicU64>,
}

impl Readers {
    /// `threads` threads, at most `pending` reads waiting; a read that waited longer
    /// than `timeout` for a thread is dropped unrun.
    pub(crate) fn start(
        threads: usize,
        pending: usize,
        timeout: Duration,
    ) -> Result<Self, TierError> {
        let (tx, rx) = mpsc::sync_channel::<(Instant, Job)>(pending.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let count = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(AtomicU64::new(0));
        for n in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let count = Arc::clone(&count);
            let refused = Arc::clone(&refused);
            std::thread::Builder::new()
                .name(format!("store-tier-read-{n}"))
                .spawn(move || serve(&rx, &count, &refused, timeout))
                .map_err(|source| TierError::Io {
                    op: "start thread",
                    path: std::path::PathBuf::new(),
                    source,
                })?;
        }
        Ok(Readers {
            queue: tx,
            pending: count,
            refused,
        })
    }

    /// Runs `f` on a reader thread; resolves to `None` when the queue is full or `f`
    /// waited past the read timeout for a thread (then it never runs).
    pub(crate) fn run<T, F>(&self, f: F) -> impl std::future::Future<Output = Option<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        self.pending.fetch_add(1, Ordering::Relaxed);
        let queued = match self.queue.try_send((Instant::now(), job)) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.pending.fetch_sub(1, Ordering::Relaxed);
                self.refused.fetch_add(1, Ordering::Relaxed);
                false
            }
        };
        async move {
            if !queued {
                return None;
            }
            rx.await.ok()
        }
    }

    /// Reads queued or running.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }
}

fn serve(
    rx: &Mutex<Receiver<(Instant, Job)>>,
    pending: &AtomicUsize,
    refused: &AtomicU64,
    timeout: Duration,
) {
    loop {
        let next = rx.locked().recv();
        let Ok((queued, job)) = next else {
            return; // the tier is gone
        };
        if queued.elapsed() > timeout {
            // Its caller answers "not found" at the same offset.
            refused.fetch_add(1, Ordering::Relaxed);
            drop(job);
        } else {
            job();
        }
        pending.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(1);

    fn in_ms(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[test]
    fn the_budget_bounds_reads_in_flight_and_gives_up_after_the_timeout() {
        let b = ReadBudget::new(1, 0);
        let first = b.acquire(100, in_ms(0), T).unwrap();
        assert!(matches!(
            b.acquire(100, in_ms(1), T),
            Err(TierError::Busy(_))
        ));
        assert_eq!(b.timeouts.load(Ordering::Relaxed), 1);
        drop(first);
        let _again = b.acquire(100, in_ms(0), T).unwrap();
    }

    #[test]
    fn the_pace_holds_the_next_read_back() {
        // One byte a second: the first read starts at once...
        let b = ReadBudget::new(8, 1);
        let p = b.acquire(1000, in_ms(0), T).unwrap();
        drop(p);
        // ...and the next may start only 1000 seconds later: refused without waiting.
        assert!(matches!(b.acquire(1, in_ms(0), T), Err(TierError::Busy(_))));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn readers_refuse_past_their_queue_and_run_the_rest() {
        let readers = Readers::start(1, 1, Duration::from_secs(3600)).unwrap();
        let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        let running = readers.run(move || {
            let _ = started_tx.send(());
            let _ = hold_rx.recv();
            1
        });
        started_rx.recv().unwrap();
        let queued = readers.run(|| 2);
        assert_eq!(readers.run(|| 3).await, None, "the queue holds one");
        assert_eq!(readers.refused.load(Ordering::Relaxed), 1);
        hold_tx.send(()).unwrap();
        assert_eq!(running.await, Some(1));
        assert_eq!(queued.await, Some(2));
    }
}
