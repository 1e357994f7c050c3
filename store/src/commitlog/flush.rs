//! Making the commitlog durable: the periodic flush (ASYNC_FLUSH) and group commit
//! (SYNC_FLUSH), RocketMQ `FlushRealTimeService` and `GroupCommitService`.
//!
//! Group commit: a SYNC_FLUSH put registers `(end offset, oneshot sender)` and waits.
//! The flush thread takes every registered waiter at once, syncs the commitlog up to
//! its current write end (which covers all of them: they registered after writing),
//! and answers them all, so one `msync` serves every writer waiting at that moment
//! while writers that arrive during the sync form the next group.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use vostok_remoting::support::sync::{CondvarExt, MutexExt};

/// Group commit keeps collecting writers while they arrive closer than this.
const LINGER_GAP: Duration = Duration::from_micros(40);

use tokio::sync::oneshot;

use super::CommitLog;
use crate::error::Result;

struct Waiter {
    offset: i64,
    done: oneshot::Sender<bool>,
}

#[derive(Default)]
pub(crate) struct GroupCommit {
    waiters: Mutex<Vec<Waiter>>,
    wake: Condvar,
    /// The flush thread waits on `wake` for a first writer.
    idle: AtomicBool,
    /// Duration of the last sync, which bounds how long the next group lingers.
    last_sync_nanos: AtomicU64,
    pub(crate) rounds: AtomicU64,
    pub(crate) waiters_served: AtomicU64,
    pub(crate) sync_nanos: AtomicU64,
}

impl GroupCommit {
    /// Registers a writer that needs `offset` durable; the receiver gets `true` once
    /// it is, `false` if the flush failed.
    pub(crate) fn register(&self, offset: i64) -> oneshot::Receiver<bool> {
        let (done, rx) = oneshot::channel();
        let mut waiters = self.waiters.locked();
        waiters.push(Waiter { offset, done });
        drop(waiters);
        // Only an idle flush thread needs waking; a busy one looks again by itself.
        if self.idle.load(Ordering::Acquire) {
            self.wake.notify_one();
        }
        rx
    }

    /// Wakes the flush thread (e.g. to stop).
    pub(crate) fn notify(&self) {
        self.wake.notify_all();
    }

    /// Waits up to `timeout` for a first waiter, then lingers while more keep
    /// arriving (gaps under [`LINGER_GAP`], at most `linger` in all), and takes them
    /// all. Without the linger, the first writer woken by the previous sync would
    /// start the next sync alone and the others would wait for the one after.
    fn take(&self, timeout: Duration, linger: Duration) -> Vec<Waiter> {
        let mut waiters = self.waiters.locked();
        if waiters.is_empty() {
            // Set under the lock, so a writer either sees it or is seen here.
            self.idle.store(true, Ordering::Release);
            waiters = self.wake.wait_timeout_locked(waiters, timeout);
            self.idle.store(false, Ordering::Release);
        }
        if !waiters.is_empty() && !linger.is_zero() {
            let deadline = Instant::now() + linger;
            loop {
                let seen = waiters.len();
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                drop(waiters);
                std::thread::sleep(LINGER_GAP.min(deadline - now));
                waiters = self.waiters.locked();
                if waiters.len() == seen {
                    break;
                }
            }
        }
        std::mem::take(&mut *waiters)
    }
}

/// What a flush achieved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flushed {
    pub(crate) offset: i64,
    /// Store timestamp of a record at or before `offset` (for the checkpoint).
    pub(crate) store_timestamp: i64,
}

impl CommitLog {
    /// Syncs everything written so far.
    pub(crate) fn flush(&self) -> Result<Flushed> {
        // Timestamp first: its record ends at or before the write end loaded next.
        let store_timestamp = self.last_store_timestamp();
        let target = self.write_end();
        let from = self.flushed_offset();
        if target > from {
            for file in self.files.files() {
                if file.end() > from && file.base() < target {
                    file.flush_behind_writer()?;
                }
            }
            self.flushed_offset.fetch_max(target, Ordering::AcqRel);
        }
        Ok(Flushed {
            offset: self.flushed_offset(),
            store_timestamp,
        })
    }

    /// Bytes written but not yet flushed.
    pub(crate) fn unflushed_bytes(&self) -> i64 {
        self.write_end() - self.flushed_offset()
    }

    /// One round of group commit: waits up to `idle` for writers, runs `commit` (which
    /// writes out what the write buffer still holds, so that the flush covers every
    /// waiter), flushes once, and answers them. Returns the flush result if a flush was
    /// done.
    pub(crate) fn group_commit_round(
        &self,
        idle: Duration,
        commit: impl FnOnce() -> Result<()>,
    ) -> Option<Result<Flushed>> {
        // Linger at most half as long as the last sync took.
        let linger =
            Duration::from_nanos(self.group_commit.last_sync_nanos.load(Ordering::Relaxed) / 2)
                .min(Duration::from_millis(5));
        let waiters = self.group_commit.take(idle, linger);
        if waiters.is_empty() && self.unflushed_bytes() == 0 {
            return None;
        }
        let started = Instant::now();
        let result = commit().and_then(|()| self.flush());
        let took = started.elapsed().as_nanos() as u64;
        let gc = &self.group_commit;
        gc.last_sync_nanos.store(took, Ordering::Relaxed);
        gc.rounds.fetch_add(1, Ordering::Relaxed);
        gc.sync_nanos.fetch_add(took, Ordering::Relaxed);
        gc.waiters_served
            .fetch_add(waiters.len() as u64, Ordering::Relaxed);
        let flushed = match &result {
            Ok(f) => f.offset,
            Err(_) => i64::MIN,
        };
        for w in waiters {
            // A dropped receiver (timed out) is fine.
            let _ = w.done.send(w.offset <= flushed);
        }
        Some(result)
    }

    /// Answers every waiter with the current flushed offset (shutdown).
    pub(crate) fn release_waiters(&self) {
        let waiters = std::mem::take(&mut *self.group_commit.waiters.locked());
        let flushed = self.flushed_offset();
        for w in waiters {
            let _ = w.done.send(w.offset <= flushed);
        }
    }
}
