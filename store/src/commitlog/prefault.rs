//! Mapping commitlog pages in ahead of the writer.
//!
//! The first write to each page of a mapped file faults, and the kernel zeroes the new
//! page before the copy; measured on the append path that was a third of the
//! writer's time. A helper thread asks the kernel to map the pages of the current file
//! writable ([`MADV_POPULATE_WRITE`](crate::mapped_file::MappedFile::prefault)) up to
//! [`AHEAD`] bytes past the write position, so that the writer only copies.
//!
//! Before it maps a piece in, it writes zeros over it with `pwrite`
//! ([`MappedFile::zero_fill`]): a page a write brings into the page cache costs the
//! kernel a seventh of one a fault brings in (which reads the unwritten page, zeroes
//! it and then makes it writable: 0.58 against 3.9 µs per 4 KiB page here), and the
//! mapping then only points at it. Zeros are written only [`ZERO_MARGIN`] or more
//! past every byte a writer has announced ([`CommitLog::begin_write`]), [`ZERO_CHUNK`]
//! at a time, and a writer about to write into a chunk being zero-filled waits for it
//! (the handshake is `zero_fence`).
//!
//! Pages are mapped in only where the file's blocks are reserved: the thread reserves
//! them first, a step at a time ([`MappedFile::reserve`]), so that the writer finds
//! them reserved; without room it maps nothing in, and the writer's own reservation
//! refuses the put. Once the writer has passed the middle of its file, the thread asks
//! the allocation thread for the next file.
//!
//! It maps pages in [`PIECE`] at a time and offers its core to any waiting thread
//! after each: at a core of its own the work is the same, and on a busy machine the
//! threads on the message's path do not wait behind it (e2e p99 at 50,000 msg/s
//! 0.7 times that of mapping a whole step at once, docs/performance.md).
//!
//! The writer wakes the thread only once it has used up half of the lead, or reached
//! the point where the thread has more to do (the middle of the file, its end): not
//! on every append once the file is mapped in to its end, nor while there is no room.
//!
//! The same thread turns the kernel's read-ahead off for the unwritten part of the
//! file being written and back on for a file the writer has left
//! ([`MappedFile::set_read_ahead`](crate::mapped_file::MappedFile::set_read_ahead)).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::CommitLog;
use crate::mapped_file::MappedFile;
use crate::stopper::Stopper;

/// How far ahead of the writer pages are mapped in.
pub(crate) const AHEAD: i64 = 16 << 20;
/// Pages are mapped in steps of this size.
const STEP: i64 = 1 << 20;
/// Pages are zero-filled only this far past the writer's announced end, so that it
/// does not reach a chunk while it is being filled: closer, they are only mapped in.
const ZERO_MARGIN: i64 = 1 << 20;
/// Zeros are written this much at a time, each chunk announced on its own, so that a
/// writer that comes near waits for one chunk at most.
const ZERO_CHUNK: usize = 64 << 10;
/// A step is mapped in pieces of this size, with the core offered to other threads
/// between them.
const PIECE: usize = 256 << 10;

impl CommitLog {
    /// Called by the writer before it writes bytes up to `end` (see `zero_fence`).
    pub(crate) fn begin_write(&self, end: i64) {
        self.zero_fence.announce(end);
    }

    /// Zero-fills `from..to` of `file` (whole pages), a [`ZERO_CHUNK`] at a time, up to
    /// the first chunk that a writer's announced write comes within [`ZERO_MARGIN`]
    /// of; see the module doc.
    fn zero_ahead(&self, file: &MappedFile, from: usize, to: usize) {
        let mut at = from.next_multiple_of(crate::mapped_file::PAGE_SIZE);
        while at < to {
            let end = (at + ZERO_CHUNK).min(to);
            let start = file.base() + at as i64;
            // SAFETY (of `zero_fill`): no writer writes past `start` while the fence
            // runs the fill, and readers read only below the published end, which a
            // writer's announced end is at or past.
            let filled = self
                .zero_fence
                .fill_if_clear(start, ZERO_MARGIN, || unsafe { file.zero_fill(at, end) });
            match filled {
                Some(Ok(())) => at = end,
                Some(Err(e)) => {
                    tracing::debug!(file = %file.path().display(), from = at, to = end, error = %e, "could not zero-fill commitlog pages ahead of the writer");
                    return;
                }
                None => return,
            }
        }
    }

    pub(crate) fn set_prefaulter(&self, t: std::thread::Thread) {
        let _ = self.prefaulter.set(t);
    }

    /// Wakes the helper so that it sees a stop request.
    pub(crate) fn unpark_prefaulter(&self) {
        if let Some(t) = self.prefaulter.get() {
            t.unpark();
        }
    }

    /// Called by the writer with its new end: wakes the helper once the end reaches
    /// the point the helper asked to be woken at.
    pub(crate) fn wake_prefaulter(&self, end: i64) {
        if end >= self.prefault_wake_at.load(Ordering::Relaxed) {
            if let Some(t) = self.prefaulter.get() {
                t.unpark();
            }
        }
    }

    /// Maps in one step ahead of the writer.
    fn prefault_step(&self, progress: &mut Progress) -> Step {
        let end = self.write_end();
        let next = self.next_file_base();
        let mut next_asked = progress.asked == Some(next) || self.files.ready_base() == Some(next);
        if !next_asked && self.next_file_due() {
            self.allocator.request();
            progress.asked = Some(next);
            next_asked = true;
        }
        // Idle until the writer's end reaches `at` (always past its end now), or the
        // point where the next file is due while it is still to be asked for.
        let idle = |at: i64| match next_asked {
            true => Step::Idle(at),
            false => Step::Idle(at.min(self.next_file_due_at())),
        };
        let Some(file) = self.files.last() else {
            return idle(end + 1);
        };
        if progress.frontier != Some(file.base()) {
            // Every file the writer has left since (several, if they are small), or
            // every earlier file on the first look: the writer may have passed files
            // the allocator made without read-ahead before this thread first ran.
            let from = progress.frontier.unwrap_or(i64::MIN);
            for f in self.files.files() {
                if f.base() >= from && f.base() < file.base() {
                    f.set_read_ahead(0, f.size(), true);
                }
            }
            // What it held before the writer took it (after a restart, say) keeps
            // read-ahead; the rest goes without until the writer leaves the file.
            let written = (end - file.base()).clamp(0, file.size() as i64) as usize;
            file.set_read_ahead(0, written, true);
            file.set_read_ahead(written, file.size(), false);
            progress.frontier = Some(file.base());
        }
        // At the writer's heels no zeros are written (`zero_ahead`) and a page would
        // cost a fault's full price: a thread that fell behind (its core taken, it runs
        // at a lower priority) starts well past them, twice the margin so that the
        // writer does not reach it at once, and leaves the writer those few pages,
        // rather than stay behind on the dear path.
        let heels = self.zero_fence.announced() + 2 * ZERO_MARGIN;
        let from = progress
            .prefaulted
            .max(end)
            .max(file.base())
            .max(heels.min(file.end()));
        let to = (end + AHEAD).min(file.end()).min(from + STEP);
        if to <= from {
            return if from >= file.end() {
                // Mapped in to the end: nothing to do until the writer is in the next file.
                idle(file.end() + 1)
            } else {
                idle(from - AHEAD / 2)
            };
        }
        if !reserved(&file, (to - file.base()) as usize) {
            // No room: tried again after a step's worth of writes or the idle period.
            return idle(end + STEP);
        }
        let (from_pos, to_pos) = ((from - file.base()) as usize, (to - file.base()) as usize);
        if self.pool().is_none() {
            // In pieces, offering the core to any thread waiting for it after each:
            // a wake-up maps in up to half the lead, milliseconds of page zeroing, and
            // a thread woken meanwhile (a connection's reader, the consumer's pull)
            // waited for the scheduler to take the core from this one.
            let mut at = from_pos;
            while at < to_pos {
                let piece_end = (at + PIECE).min(to_pos);
                self.zero_ahead(&file, at, piece_end);
                file.prefault(at, piece_end);
                at = piece_end;
                std::thread::yield_now();
            }
        }
        // With the write buffer nothing is mapped in: the commit thread's `pwrite`
        // brings the pages into the page cache, many appends at a time, and readers
        // map them as they come (`MADV_POPULATE_READ` ahead cost more than it saved).
        progress.prefaulted = to;
        Step::More
    }
}

/// What [`CommitLog::prefault_step`] leaves to do.
enum Step {
    More,
    /// Nothing until the writer's end reaches this offset (or the idle period ends).
    Idle(i64),
}

/// Reserves the blocks of `file` up to `upto` (rounded up to its step); `false`
/// without room (the writer's own reservation then refuses the put that needs them).
fn reserved(file: &MappedFile, upto: usize) -> bool {
    match file.reserve(upto) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(file = %file.path().display(), upto, error = %e, "cannot reserve commitlog blocks ahead of the writer");
            false
        }
    }
}

/// What the helper thread keeps between steps (only it reads or writes them).
#[derive(Default)]
struct Progress {
    /// Offset up to which pages are mapped in.
    prefaulted: i64,
    /// The base of the file whose read-ahead is off.
    frontier: Option<i64>,
    /// The start of the next file last asked for.
    asked: Option<i64>,
}

/// The helper thread body.
pub(crate) fn run(commitlog: &CommitLog, stopper: &Stopper) {
    let mut progress = Progress::default();
    while !stopper.is_stopped() {
        if let Step::Idle(at) = commitlog.prefault_step(&mut progress) {
            commitlog.prefault_wake_at.store(at, Ordering::Relaxed);
            // A writer that passed `at` before it was published found no reason to wake
            // this thread: look again rather than sleep through it.
            if commitlog.write_end() < at {
                std::thread::park_timeout(Duration::from_millis(200));
                commitlog.prefault_wakeups.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
