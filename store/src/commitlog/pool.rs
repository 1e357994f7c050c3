//! The write buffer of `transientStorePoolEnable` (RocketMQ's transient store pool and
//! `CommitRealTimeService`).
//!
//! With it on, the writer encodes records under the append lock into a ring buffer
//! in process memory instead of the mapped file, and a commit thread writes
//! everything pending with `pwrite`, then publishes the new end. One `pwrite` covers
//! as many appends as arrived while the previous one ran, so its fixed cost (the
//! system call, the file system's per-call work) is spread over them, and no page of
//! the mapping is ever written through it: writeback has nothing to write-protect.
//!
//! ```text
//!   ring (offset % capacity):  ... committed | pending (written by the writer) | free ...
//!   files:                     ... committed = max_offset = write_end
//! ```
//!
//! * The writer never lets pending bytes exceed the capacity: when the ring is full
//!   it waits for the commit thread (back-pressure); the ring never grows.
//! * Readers (dispatch, pulls, replication, flush) go by `max_offset` / `write_end`
//!   as always; only the commit thread moves them, after the bytes are in the file.
//! * Pending bytes lie in one file: before the writer rolls to the next file it waits
//!   until everything pending is committed and writes the end-of-file blank itself.
//! * A single message's append inside a unit of work (`vostok_remoting::support::defer`:
//!   one poll of a connection's reader, every frame one socket read brought) is
//!   committed at the unit's end on the same thread, one commit for all of the unit's
//!   appends, which then dispatches there (held pulls answered right after), with no
//!   thread woken. Batches go to the commit thread (see `message_store/put.rs`).
//!   If a commit is running elsewhere then, the unit does not wait: it wakes the
//!   commit thread.
//! * Other appends wake the commit thread when it is idle (no timer); it dispatches
//!   (or wakes the dispatcher) and wakes the replication senders after each commit.
//!   While it writes, further appends gather for its next `pwrite`. A writer waiting
//!   for room or for a file roll wakes it too, never waiting for its own unit's end.
//! * Nothing is mapped in ahead of it: its `pwrite` brings the pages into the page
//!   cache, and readers fault them into the mapping as they read.
//!
//! * With SYNC_FLUSH the group commit writes what is pending itself before it flushes
//!   (`StoreInner::commit_write_buffer`), so that its flush covers every waiter.
//!
//! * A failed write (an I/O error) stops the writer: puts are refused until restart
//!   and a writer waiting for room gives up, while the commit thread keeps retrying
//!   the pending bytes, which were acknowledged; a clean shutdown tries once more.
//!
//! What is pending lives only in process memory: an acknowledged ASYNC_FLUSH message
//! still in the ring is lost if the process dies (Apache's semantics). A SYNC_FLUSH
//! message is acknowledged only once flushed (Apache ignores the pool there).

use std::cell::UnsafeCell;
use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use vostok_remoting::support::sync::{CondvarExt, MutexExt};

use super::CommitLog;
use crate::error::Result;
use crate::mapped_file::PAGE_SIZE;

/// The ring's smallest size.
const MIN_CAPACITY: usize = 8 << 20;

/// The ring's size for records of at most `max_message_size` bytes: room for two of
/// the largest batches (one being written while the other is committed), at least
/// [`MIN_CAPACITY`].
pub(crate) fn capacity_for(max_message_size: usize) -> usize {
    (2 * max_message_size + 2 * PAGE_SIZE)
        .max(MIN_CAPACITY)
        .div_ceil(PAGE_SIZE)
        * PAGE_SIZE
}

/// The end of the bytes the writer has put in the ring, and the store timestamp of
/// the newest record before it.
#[derive(Clone, Copy, Default)]
struct Pending {
    end: i64,
    store_timestamp: i64,
}

pub(crate) struct Pool {
    ring: Box<[UnsafeCell<u8>]>,
    capacity: usize,
    pending: Mutex<Pending>,
    /// End of the bytes written to the files (then published as `max_offset`).
    committed: AtomicI64,
    /// Held by whoever writes pending bytes out, so one commit runs at a time.
    commit_lock: Mutex<()>,
    committer: OnceLock<Thread>,
    /// The commit thread is (about to be) parked: an append must unpark it.
    idle: AtomicBool,
    /// The writer waits for room (or for everything to be committed).
    waiting: AtomicBool,
    /// A write to the commitlog failed: the writer appends nothing more (puts are
    /// refused until restart) and stops waiting for room; the commit thread keeps
    /// retrying what is pending, which was acknowledged.
    failed: AtomicBool,
    room: Mutex<()>,
    room_cv: Condvar,
    /// Commits done (`pwrite` rounds) and times the writer waited for room.
    pub(crate) commits: AtomicU64,
    pub(crate) full_waits: AtomicU64,
    /// Commits run at the end of a unit of work (see [`CommitLog::try_commit_pending`]),
    /// whether or not they found anything left to write.
    pub(crate) unit_commits: AtomicU64,
}

// SAFETY: the ring's bytes are written only by the writer (under the append lock),
// and only past the pending end and outside the pending range; the commit thread
// reads only the pending range, published to it through `pending` (a mutex).
unsafe impl Sync for Pool {}

impl Pool {
    pub(crate) fn new(capacity: usize) -> Self {
        Pool {
            ring: {
                // Zeroed by the allocator: pages are touched only as the ring fills.
                let zeroed = vec![0u8; capacity].into_boxed_slice();
                // SAFETY: `UnsafeCell<u8>` has the layout of `u8`.
                unsafe { Box::from_raw(Box::into_raw(zeroed) as *mut [UnsafeCell<u8>]) }
            },
            capacity,
            pending: Mutex::new(Pending::default()),
            committed: AtomicI64::new(0),
            commit_lock: Mutex::new(()),
            committer: OnceLock::new(),
            idle: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            room: Mutex::new(()),
            room_cv: Condvar::new(),
            commits: AtomicU64::new(0),
            full_waits: AtomicU64::new(0),
            unit_commits: AtomicU64::new(0),
        }
    }

    /// Holds every commit back until the guard is dropped (tests).
    pub(crate) fn hold(&self) -> std::sync::MutexGuard<'_, ()> {
        self.commit_lock.locked()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn committed(&self) -> i64 {
        self.committed.load(Ordering::Acquire)
    }

    /// Whether a write of the buffer to the commitlog has failed (see `failed`).
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    fn pending(&self) -> Pending {
        *self.pending.locked()
    }

    /// Everything pending and committed starts (again) at `end`: after recovery, a
    /// truncation, bytes received from a master, or the blank that closes a file.
    /// The caller holds the append lock and nothing is pending.
    pub(crate) fn reset(&self, end: i64) {
        let _commit = self.commit_lock.locked();
        let mut pending = self.pending.locked();
        pending.end = end;
        self.committed.store(end, Ordering::Release);
    }

    fn ptr(&self) -> *mut u8 {
        UnsafeCell::raw_get(self.ring.as_ptr())
    }

    /// Copies `data` into the ring at commitlog offset `offset`, wrapping at its end.
    ///
    /// # Safety
    /// Only the writer calls it, under the append lock, for bytes past the pending
    /// end and within `capacity` of the committed end (see [`Pool::wait_room`]).
    pub(crate) unsafe fn put(&self, offset: i64, data: &[u8]) {
        let at = offset.rem_euclid(self.capacity as i64) as usize;
        let first = data.len().min(self.capacity - at);
        // SAFETY: in bounds; the caller's contract makes the range exclusive.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr().add(at), first);
            std::ptr::copy_nonoverlapping(data.as_ptr().add(first), self.ptr(), data.len() - first);
        }
    }

    /// A mutable view of the ring at `offset` for `len` bytes, if they do not wrap.
    ///
    /// # Safety
    /// As for [`Pool::put`]; the slice must be dropped before [`Pool::append`].
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice_mut(&self, offset: i64, len: usize) -> Option<&mut [u8]> {
        let at = offset.rem_euclid(self.capacity as i64) as usize;
        // SAFETY: in bounds; exclusive per the caller's contract.
        (at + len <= self.capacity)
            .then(|| unsafe { std::slice::from_raw_parts_mut(self.ptr().add(at), len) })
    }

    /// The ring's bytes `from..to` (commitlog offsets), in at most two pieces.
    ///
    /// # Safety
    /// The range is pending (published by [`Pool::append`]) and not yet committed.
    unsafe fn pieces(&self, from: i64, to: i64) -> [&[u8]; 2] {
        let at = from.rem_euclid(self.capacity as i64) as usize;
        let len = (to - from) as usize;
        let first = len.min(self.capacity - at);
        // SAFETY: in bounds; the writer does not write there until it is committed.
        unsafe {
            [
                std::slice::from_raw_parts(self.ptr().add(at), first),
                std::slice::from_raw_parts(self.ptr(), len - first),
            ]
        }
    }

    /// Publishes `end` as the end of the pending bytes (the writer, after encoding
    /// them). The caller then wakes the commit thread ([`CommitLog::wake_committer`]),
    /// outside the append lock.
    pub(crate) fn append(&self, end: i64, store_timestamp: i64) {
        let mut pending = self.pending.locked();
        pending.end = end;
        if store_timestamp > 0 {
            pending.store_timestamp = store_timestamp;
        }
    }

    /// Whether the commit thread is parked or about to park (after an append: then it
    /// will not see the appended bytes by itself).
    fn is_idle(&self) -> bool {
        // Pairs with the fence in `run`: either the thread sees the new end, or this
        // sees it idle.
        fence(Ordering::SeqCst);
        self.idle.load(Ordering::Relaxed)
    }

    pub(crate) fn set_committer(&self, t: Thread) {
        let _ = self.committer.set(t);
    }

    /// Wakes the commit thread.
    pub(crate) fn wake(&self) {
        if let Some(t) = self.committer.get() {
            t.unpark();
        }
    }

    /// Waits until the committed end reaches `target` (the writer, holding the append
    /// lock: for room in the ring, or before it rolls to the next file); `false` if a
    /// write to the commitlog failed first, which would keep it waiting for ever.
    #[must_use]
    pub(crate) fn wait_committed(&self, target: i64) -> bool {
        if self.committed() >= target {
            return true;
        }
        self.full_waits.fetch_add(1, Ordering::Relaxed);
        let mut room = self.room.locked();
        let reached = loop {
            self.waiting.store(true, Ordering::SeqCst);
            if self.committed.load(Ordering::SeqCst) >= target {
                break true;
            }
            if self.failed.load(Ordering::SeqCst) {
                break false;
            }
            self.wake();
            // The timeout only guards against a lost wake-up; the commit thread
            // notifies after every commit while someone waits.
            room = self
                .room_cv
                .wait_timeout_locked(room, Duration::from_millis(100));
        };
        self.waiting.store(false, Ordering::Relaxed);
        reached
    }

    /// Waits until `end` fits: at most `capacity` bytes past the committed end;
    /// `false` as for [`Pool::wait_committed`].
    #[must_use]
    pub(crate) fn wait_room(&self, end: i64) -> bool {
        self.wait_committed(end - self.capacity as i64)
    }

    /// Wakes a writer waiting in [`Pool::wait_committed`].
    fn notify_waiting(&self) {
        if self.waiting.load(Ordering::SeqCst) {
            let _room = self.room.locked();
            self.room_cv.notify_all();
        }
    }
}

impl CommitLog {
    pub(crate) fn pool(&self) -> Option<&Pool> {
        self.pool.as_ref()
    }

    /// Writes every pending byte to its file and publishes the new end; the end, or
    /// `None` when nothing was pending. Called by the commit thread, and on the
    /// caller's thread where everything must be in the files now (shutdown,
    /// truncation, bytes received from a master).
    pub(crate) fn commit_pending(&self) -> Result<Option<i64>> {
        let Some(pool) = &self.pool else {
            return Ok(None);
        };
        let _commit = pool.commit_lock.locked();
        self.commit_locked(pool)
    }

    /// [`Self::commit_pending`] unless a commit is running elsewhere: `None` then (the
    /// caller wakes the commit thread rather than wait). The commit at the end of a
    /// connection's unit of work (`commit_after_append` in `message_store/put.rs`).
    pub(crate) fn try_commit_pending(&self) -> Option<Result<Option<i64>>> {
        let pool = self.pool.as_ref()?;
        let _commit = pool.commit_lock.try_lock().ok()?;
        pool.unit_commits.fetch_add(1, Ordering::Relaxed);
        Some(self.commit_locked(pool))
    }

    /// Whether the write buffer holds the bytes at `offset` still unwritten: appended
    /// (so acknowledged with ASYNC_FLUSH), not yet readable.
    pub(crate) fn holds_pending_at(&self, offset: i64) -> bool {
        self.pool
            .as_ref()
            .is_some_and(|pool| offset >= pool.committed() && offset < pool.pending().end)
    }

    /// After an append (outside the append lock): wakes the commit thread if it is
    /// idle; a busy one sees the appended bytes by itself. Committing on the
    /// appender's thread instead when the thread is idle was tried: one `pwrite` per
    /// append again at high rates (deploy/bench/results.md).
    pub(crate) fn wake_committer(&self) {
        if let Some(pool) = &self.pool {
            if pool.is_idle() {
                pool.wake();
            }
        }
    }

    fn commit_locked(&self, pool: &Pool) -> Result<Option<i64>> {
        let pending = pool.pending();
        let from = pool.committed();
        if pending.end <= from {
            return Ok(None);
        }
        if let Err(e) = self.write_pending(pool, from, pending.end) {
            if !pool.failed.swap(true, Ordering::SeqCst) {
                tracing::error!(error = %e, "could not write the write buffer to the commitlog: refusing further puts until restart, retrying the write of what is pending");
            }
            pool.notify_waiting();
            return Err(e);
        }
        self.write_end.store(pending.end, Ordering::Release);
        self.max_offset.store(pending.end, Ordering::Release);
        self.wake_prefaulter(pending.end);
        if pending.store_timestamp > 0 {
            // After the offsets: whoever sees this timestamp sees the record's end.
            self.last_store_timestamp
                .fetch_max(pending.store_timestamp, Ordering::AcqRel);
        }
        // Last: whoever waits for the committed end finds everything published.
        pool.committed.store(pending.end, Ordering::SeqCst);
        pool.commits.fetch_add(1, Ordering::Relaxed);
        pool.notify_waiting();
        Ok(Some(pending.end))
    }

    /// Writes the ring's bytes `from..end` to their files (under the commit lock).
    fn write_pending(&self, pool: &Pool, from: i64, end: i64) -> Result<()> {
        let mut off = from;
        while off < end {
            let file = self
                .files
                .find(off)
                .ok_or_else(|| crate::error::StoreError::Corrupt {
                    offset: off,
                    reason: "no commitlog file holds the bytes to commit".into(),
                })?;
            let stop = end.min(file.end());
            // SAFETY: `from..end` is pending and only this commit (under the commit
            // lock) reads it.
            let pieces = unsafe { pool.pieces(off, stop) };
            let mut pos = (off - file.base()) as usize;
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                // SAFETY: past the published end of the file; the only writer of the
                // file's bytes while the pool is on.
                unsafe { file.pwrite_at(pos, piece)? };
                pos += piece.len();
            }
            file.set_wrote(pos);
            off = stop;
        }
        Ok(())
    }
}

/// The commit thread body: commits whatever is pending, then `after` (wake the
/// dispatcher and the replication senders); parks when nothing is. Commits what is
/// left once asked to stop; retries a failed write every 100 ms until then.
pub(crate) fn run(commitlog: &CommitLog, stopped: impl Fn() -> bool, after: impl Fn()) {
    let Some(pool) = commitlog.pool() else {
        return;
    };
    loop {
        match commitlog.commit_pending() {
            Ok(Some(_)) => {
                after();
                continue;
            }
            Ok(None) => {}
            // Logged once by the commit; the store's shutdown tries once more.
            Err(_) if stopped() => break,
            Err(_) => {
                std::thread::park_timeout(Duration::from_millis(100));
                continue;
            }
        }
        if stopped() {
            break;
        }
        pool.idle.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if pool.pending().end <= pool.committed() && !stopped() {
            // No timer needed: an append unparks the thread when it sees it idle.
            std::thread::park_timeout(Duration::from_secs(1));
        }
        pool.idle.store(false, Ordering::Relaxed);
    }
}
