//! Creating the next commitlog file ahead of time (RocketMQ
//! `AllocateMappedFileService`).
//!
//! Creating a commitlog file means `open`, `fallocate` of its first step, `mmap` and
//! an `fsync` of the directory: milliseconds, more on a busy disk. Done by the writer
//! it would run under the append lock on an async worker and stall every put behind
//! it. Instead the `store-allocate` thread creates the file after the current one
//! once the writer has passed the middle of the current one
//! ([`CommitLog::next_file_due`](crate::commitlog::CommitLog::next_file_due); the
//! pre-fault thread asks for it then), maps its first pages in, and keeps it aside as
//! the queue's *ready* file (at most one: the next); the writer that reaches it takes
//! it without any I/O. Should the ready file not be there (the writer outran the
//! thread), the writer creates it itself, and that fallback is counted and logged.
//!
//! A full disk: before reserving a file's blocks the thread checks that the file
//! system has room for it. Without room it does not try; the writer then refuses the
//! put with DISK_FULL at once (no I/O, no false success), the thread tries again
//! every [`RETRY_INTERVAL`], and puts are accepted again as soon as the file exists.
//! Disk-usage readings ([`AllocateService::used_ratio`]) are taken under the same
//! lock as allocations, so they never count the blocks of an allocation in flight or
//! of one that failed and is being removed: a failed allocation can never make
//! retention believe the disk is fuller than it is.

use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use vostok_remoting::support::sync::{CondvarExt, MutexExt};

use crate::disk::DiskProbe;
use crate::error::{Result, StoreError};
use crate::mapped_file::MappedFile;
use crate::mapped_file_queue::MappedFileQueue;

/// How often the thread tries again while the disk has no room for the next file.
const RETRY_INTERVAL: Duration = Duration::from_millis(200);
/// How often the thread checks that the next file is ready when nobody asks.
const IDLE_INTERVAL: Duration = Duration::from_secs(1);
/// How much of a new file is mapped in ahead of its first writer.
const WARM_BYTES: usize = 16 << 20;
/// `blocked_base` when the last attempt found room.
const NONE: i64 = -1;

#[derive(Default)]
struct Signal {
    wanted: bool,
    stopped: bool,
}

/// What a writer gets when the next file cannot be had.
#[derive(Debug)]
pub(crate) enum TakeError {
    /// The file system has no room for it; puts answer DISK_FULL.
    NoSpace(StoreError),
    /// Anything else (I/O error); puts answer CREATE_MAPPED_FILE_FAILED.
    Failed(StoreError),
}

impl TakeError {
    pub(crate) fn classify(e: StoreError) -> TakeError {
        if e.is_no_space() {
            TakeError::NoSpace(e)
        } else {
            TakeError::Failed(e)
        }
    }

    pub(crate) fn into_error(self) -> StoreError {
        match self {
            TakeError::NoSpace(e) | TakeError::Failed(e) => e,
        }
    }
}

pub(crate) struct AllocateService {
    probe: DiskProbe,
    /// Held while a file is created and while disk usage is read.
    space: Mutex<()>,
    signal: Mutex<Signal>,
    wake: Condvar,
    /// Notified (under `signal`) after every attempt.
    attempted: Condvar,
    /// Start of the file the last attempt found no room for; [`NONE`] when none.
    blocked_base: AtomicI64,
    /// Files created ahead by the thread.
    pub(crate) ahead: AtomicU64,
    /// Files the writer had to create itself.
    pub(crate) fallbacks: AtomicU64,
    /// Attempts that found no room.
    pub(crate) no_space: AtomicU64,
}

impl AllocateService {
    pub(crate) fn new(probe: DiskProbe) -> Self {
        AllocateService {
            probe,
            space: Mutex::new(()),
            signal: Mutex::new(Signal::default()),
            wake: Condvar::new(),
            attempted: Condvar::new(),
            blocked_base: AtomicI64::new(NONE),
            ahead: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
            no_space: AtomicU64::new(0),
        }
    }

    /// Asks the thread to make the next file ready (cheap: a flag and a notify).
    pub(crate) fn request(&self) {
        self.signal.locked().wanted = true;
        self.wake.notify_one();
    }

    pub(crate) fn stop(&self) {
        self.signal.locked().stopped = true;
        self.wake.notify_all();
    }

    /// Whether the last attempt found no room for the next file.
    pub(crate) fn is_blocked(&self) -> bool {
        self.blocked_base.load(Ordering::Acquire) != NONE
    }

    /// The used fraction (0.0–1.0) of the fullest file system holding `paths`, read
    /// while no allocation is in flight; 0.0 if none can be read.
    pub(crate) fn used_ratio(&self, paths: &[&Path]) -> f64 {
        let _space = self.space.locked();
        paths
            .iter()
            .filter_map(|p| self.probe.read(p))
            .map(|s| s.used_ratio())
            .fold(0.0f64, f64::max)
    }

    /// Fails with `NoSpace` unless the file system of `queue` can hold one more file.
    fn check_room(&self, queue: &MappedFileQueue) -> Result<(), TakeError> {
        let needed = queue.file_size() as u64;
        match self.probe.read(queue.dir()) {
            Some(space) if space.available < needed => {
                Err(TakeError::NoSpace(StoreError::NoSpace {
                    path: queue.dir().to_path_buf(),
                    needed,
                    available: space.available,
                }))
            }
            _ => Ok(()),
        }
    }

    /// Creates the file at `base` under the space lock (caller holds it).
    fn create_locked(
        &self,
        queue: &MappedFileQueue,
        base: i64,
    ) -> Result<Arc<MappedFile>, TakeError> {
        self.check_room(queue)?;
        queue.create_ready(base).map_err(TakeError::classify)
    }

    /// Records the outcome of an attempt at `base` (`None`: success).
    fn note(&self, base: i64, failure: Option<&TakeError>) {
        match failure {
            None => {
                if self.blocked_base.swap(NONE, Ordering::AcqRel) != NONE {
                    tracing::info!(
                        base,
                        "room for the next commitlog file again: accepting puts"
                    );
                }
            }
            Some(TakeError::NoSpace(e)) => {
                self.no_space.fetch_add(1, Ordering::Relaxed);
                if self.blocked_base.swap(base, Ordering::AcqRel) == NONE {
                    tracing::error!(base, error = %e, "no room for the next commitlog file: refusing puts that need it (DISK_FULL) until space is freed");
                }
            }
            Some(TakeError::Failed(e)) => {
                tracing::error!(base, error = %e, "could not create the next commitlog file");
            }
        }
    }

    /// Makes the file at `base` the ready file of `queue` unless it already is.
    pub(crate) fn prepare(&self, queue: &MappedFileQueue, base: i64) {
        let space = self.space.locked();
        if queue.ready_base() == Some(base) || queue.last().is_some_and(|f| f.end() > base) {
            return;
        }
        let result = self.create_locked(queue, base).and_then(|file| {
            queue
                .set_ready(Arc::clone(&file))
                .map_err(TakeError::Failed)?;
            Ok(file)
        });
        self.note(base, result.as_ref().err());
        drop(space);
        {
            let _signal = self.signal.locked();
            self.attempted.notify_all();
        }
        if let Ok(file) = result {
            self.ahead.fetch_add(1, Ordering::Relaxed);
            // After the lock: a writer that came for the file early waits only for its
            // creation. Mapping pages in does not touch their contents, so it may
            // overlap the writer's first appends.
            file.prefault(0, WARM_BYTES);
        }
    }

    /// Waits until `ready()` holds, checking after every attempt; `false` on timeout.
    pub(crate) fn wait_ready(&self, timeout: Duration, ready: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut signal = self.signal.locked();
        loop {
            if ready() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            signal = self.attempted.wait_timeout_locked(signal, deadline - now);
        }
    }

    /// The writer's way to the file at `base`: the ready file if it is there (no
    /// I/O), DISK_FULL at once if the thread found no room for it, else the file
    /// created here (the counted fallback).
    pub(crate) fn take(
        &self,
        queue: &MappedFileQueue,
        base: i64,
    ) -> Result<Arc<MappedFile>, TakeError> {
        if let Some(file) = queue.take_ready(base) {
            self.request();
            return Ok(file);
        }
        if self.blocked_base.load(Ordering::Acquire) == base {
            self.request();
            return Err(TakeError::NoSpace(StoreError::NoSpace {
                path: queue.dir().to_path_buf(),
                needed: queue.file_size() as u64,
                available: 0,
            }));
        }
        let n = self.fallbacks.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                base,
                fallbacks = n,
                "the next commitlog file was not ready: creating it on the append path"
            );
        }
        // Waits for an allocation in flight (most likely of this very file).
        let _space = self.space.locked();
        if let Some(file) = queue.take_ready(base) {
            self.request();
            return Ok(file);
        }
        let result = queue
            .discard_ready()
            .map_err(TakeError::Failed)
            .and_then(|()| self.create_locked(queue, base))
            .and_then(|file| queue.set_ready(file).map_err(TakeError::Failed))
            .and_then(|()| {
                queue.take_ready(base).ok_or_else(|| {
                    TakeError::Failed(StoreError::FileGap {
                        path: queue.dir().to_path_buf(),
                        expected: base,
                    })
                })
            });
        self.note(base, result.as_ref().err());
        self.request();
        result
    }

    /// Waits until asked, stopped, or `timeout`; `false` once stopped.
    fn wait(&self, timeout: Duration) -> bool {
        let mut signal = self.signal.locked();
        if !signal.wanted && !signal.stopped {
            signal = self.wake.wait_timeout_locked(signal, timeout);
        }
        signal.wanted = false;
        !signal.stopped
    }

    /// The thread body: keeps `next()`'s file ready. `next` names the queue and the
    /// start of the file its writer will need next, once that file is due.
    pub(crate) fn run<'a>(&self, next: impl Fn() -> Option<(&'a MappedFileQueue, i64)>) {
        loop {
            if let Some((queue, base)) = next() {
                self.prepare(queue, base);
            }
            let interval = if self.is_blocked() {
                RETRY_INTERVAL
            } else {
                IDLE_INTERVAL
            };
            if !self.wait(interval) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::DiskSpace;
    use crate::mapped_file::Prealloc;

    const SIZE: usize = 64 * 1024;

    fn space(available: u64) -> DiskSpace {
        DiskSpace {
            total: 1 << 30,
            free: available,
            available,
        }
    }

    #[test]
    fn the_writer_takes_the_ready_file_and_no_room_refuses_without_io() {
        let dir = tempfile::tempdir().unwrap();
        let queue = MappedFileQueue::load(dir.path(), SIZE, Prealloc::Stepped(SIZE)).unwrap();
        let probe = DiskProbe::simulated(space(1 << 29));
        let alloc = AllocateService::new(probe.clone());

        alloc.prepare(&queue, 0);
        assert_eq!(queue.ready_base(), Some(0));
        assert!(queue.is_empty(), "a ready file is not in the list");
        let first = alloc.take(&queue, 0).unwrap();
        assert_eq!((first.base(), queue.len()), (0, 1));
        assert_eq!(alloc.fallbacks.load(Ordering::Relaxed), 0);

        // No room for the next file: nothing is created, the writer is refused at once.
        probe.set(space(SIZE as u64 - 1));
        alloc.prepare(&queue, SIZE as i64);
        assert!(alloc.is_blocked());
        assert_eq!(queue.ready_base(), None);
        assert!(matches!(
            alloc.take(&queue, SIZE as i64),
            Err(TakeError::NoSpace(_))
        ));
        assert_eq!(alloc.fallbacks.load(Ordering::Relaxed), 0);
        let on_disk = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(on_disk, 1, "no file was created for lack of room");
        assert!(alloc.used_ratio(&[dir.path()]) > 0.99);

        // Room again: the next attempt creates it.
        probe.set(space(1 << 29));
        alloc.prepare(&queue, SIZE as i64);
        assert!(!alloc.is_blocked());
        assert_eq!(alloc.take(&queue, SIZE as i64).unwrap().base(), SIZE as i64);
        assert_eq!(alloc.ahead.load(Ordering::Relaxed), 2);

        // Not ready: the writer creates the file itself, and that is counted.
        assert_eq!(
            alloc.take(&queue, 2 * SIZE as i64).unwrap().base(),
            2 * SIZE as i64
        );
        assert_eq!(alloc.fallbacks.load(Ordering::Relaxed), 1);
        assert_eq!(queue.len(), 3);
    }

    #[test]
    fn a_ready_file_that_no_longer_follows_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let queue = MappedFileQueue::load(dir.path(), SIZE, Prealloc::Stepped(SIZE)).unwrap();
        let alloc = AllocateService::new(DiskProbe::simulated(space(1 << 29)));
        alloc.prepare(&queue, 0);
        // A replica starting further on: the file at 0 must not stay on disk.
        let file = alloc.take(&queue, 4 * SIZE as i64).unwrap();
        assert_eq!(file.base(), 4 * SIZE as i64);
        assert_eq!(queue.ready_base(), None);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
