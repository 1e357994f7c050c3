//! The commitlog: every message of every topic, appended in arrival order to a run of
//! fixed-size files (docs/store.md, sections "Commitlog files", "Commitlog record
//! layout" and "End-of-file blank").
//!
//! ```text
//! commitlog/00000000000000000000   records ... | blank (int remaining, int 0xCBD43194)
//! commitlog/00000000001073741824   records ... | (zeros past the write position)
//! ```
//!
//! Offsets published to readers:
//!
//! * `max_offset`: end of the last complete record (or of a file closed by a blank).
//!   The dispatcher, pulls and lookups never read past it.
//! * `write_end`: end of the bytes written; equal to `max_offset` except while a
//!   replica holds the first part of a record received with [`CommitLog::append_raw`].
//! * `flushed_offset`: end of the bytes known to be on disk.
//!
//! Appends ([`append`]) run under the append lock and take new files from the
//! allocation thread (`allocate`); flushing ([`flush`]) runs on its own thread;
//! [`raw`] is the replication seam.

pub(crate) mod append;
pub(crate) mod flush;
pub(crate) mod pool;
pub(crate) mod prefault;
pub(crate) mod raw;
pub(crate) mod scan;
mod zero_fence;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;

use bytes::Bytes;
use vostok_remoting::protocol::message::record::{
    store_timestamp_pos, RecordKind, RecordView, SYS_FLAG_POS,
};
use vostok_remoting::support::sync::MutexExt;

use crate::allocate::AllocateService;
use crate::config::StoreConfig;
use crate::disk::DiskProbe;
use crate::error::Result;
use crate::mapped_file::{MappedFile, Prealloc, PAGE_SIZE};
use crate::mapped_file_queue::MappedFileQueue;

pub(crate) use append::Writer;
pub(crate) use flush::GroupCommit;

/// Bytes a blank takes at least; a record is written only if this much room is
/// left after it, so every full file ends with a blank.
pub(crate) const END_FILE_MIN_BLANK_LEN: usize = 8;

/// Most blocks reserved at once in a commitlog file: a file's first step at its
/// creation, then one step at a time ahead of the writer.
const MAX_RESERVE_STEP: usize = 64 << 20;

/// The reservation step of commitlog files of `file_size` bytes: a sixteenth of a
/// file, at most [`MAX_RESERVE_STEP`] (64 MiB of a 1 GiB file), at least a page.
pub(crate) fn reserve_step(file_size: usize) -> usize {
    (file_size / 16 / PAGE_SIZE * PAGE_SIZE).clamp(PAGE_SIZE, MAX_RESERVE_STEP)
}

pub(crate) struct CommitLog {
    files: MappedFileQueue,
    file_size: usize,
    pub(crate) max_message_size: usize,
    writer: Mutex<Writer>,
    max_offset: AtomicI64,
    write_end: AtomicI64,
    flushed_offset: AtomicI64,
    /// Store timestamp of the newest complete record; stored after `write_end`.
    last_store_timestamp: AtomicI64,
    /// Wall-clock ms when the current holder took the append lock; 0 = free.
    lock_begin_ms: AtomicI64,
    /// The write end at which the writer wakes the pre-fault thread (set by it when it
    /// goes idle); how often it has woken from idle (woken or timed out).
    prefault_wake_at: AtomicI64,
    pub(crate) prefault_wakeups: AtomicU64,
    prefaulter: OnceLock<Thread>,
    /// Keeps the pre-fault thread's zeros off what the writer writes (`zero_fence`).
    zero_fence: zero_fence::ZeroFence,
    pub(crate) group_commit: GroupCommit,
    /// The write buffer (`transientStorePoolEnable`), written out by the commit thread.
    pool: Option<pool::Pool>,
    /// Creates the next file ahead of the writer.
    pub(crate) allocator: AllocateService,
}

impl CommitLog {
    /// Maps the commitlog files; positions stay unknown until [`CommitLog::set_recovered_end`].
    pub(crate) fn load(config: &StoreConfig, probe: DiskProbe) -> Result<Self> {
        let files = MappedFileQueue::load(
            &config.commit_log_dir(),
            config.mapped_file_size_commit_log,
            Prealloc::Stepped(reserve_step(config.mapped_file_size_commit_log)),
        )?;
        Ok(CommitLog {
            files,
            file_size: config.mapped_file_size_commit_log,
            max_message_size: config.max_message_size,
            writer: Mutex::new(Writer::new()),
            max_offset: AtomicI64::new(0),
            write_end: AtomicI64::new(0),
            flushed_offset: AtomicI64::new(0),
            last_store_timestamp: AtomicI64::new(0),
            lock_begin_ms: AtomicI64::new(0),
            prefault_wake_at: AtomicI64::new(i64::MIN),
            prefault_wakeups: AtomicU64::new(0),
            prefaulter: OnceLock::new(),
            zero_fence: zero_fence::ZeroFence::new(),
            group_commit: GroupCommit::default(),
            pool: config.transient_store_pool_enable.then(|| {
                pool::Pool::new(match config.transient_store_buffer_bytes {
                    0 => pool::capacity_for(config.max_message_size),
                    n => n,
                })
            }),
            allocator: AllocateService::new(probe),
        })
    }

    pub(crate) fn files(&self) -> &MappedFileQueue {
        &self.files
    }

    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        // A panic under the lock leaves at most an unpublished partial record,
        // which the next append overwrites.
        self.writer.locked()
    }

    /// Sets every position after recovery: data ends at `end`, all of it on disk,
    /// and the queue offset table starts from `queue_offsets`.
    pub(crate) fn set_recovered_end(
        &self,
        end: i64,
        last_store_timestamp: i64,
        queue_offsets: HashMap<String, HashMap<i32, i64>>,
    ) {
        let mut writer = self.lock_writer();
        // Picked (and its blocks reserved) by the first append.
        writer.current = None;
        writer.write_pos = end;
        writer.last_store_timestamp = last_store_timestamp;
        writer.queue_offsets = queue_offsets;
        self.max_offset.store(end, Ordering::Release);
        self.write_end.store(end, Ordering::Release);
        // Nothing is being written now (recovery, or a replica's truncation).
        self.zero_fence.reset(end);
        self.flushed_offset.store(end, Ordering::Release);
        self.last_store_timestamp
            .store(last_store_timestamp, Ordering::Release);
        if let Some(pool) = &self.pool {
            pool.reset(end);
        }
    }

    /// First offset still stored.
    pub(crate) fn min_offset(&self) -> i64 {
        match self.files.first() {
            Some(f) => f.base(),
            None => self.max_offset(),
        }
    }

    /// End of the last complete record.
    pub(crate) fn max_offset(&self) -> i64 {
        self.max_offset.load(Ordering::Acquire)
    }

    pub(crate) fn write_end(&self) -> i64 {
        self.write_end.load(Ordering::Acquire)
    }

    pub(crate) fn flushed_offset(&self) -> i64 {
        self.flushed_offset.load(Ordering::Acquire)
    }

    pub(crate) fn last_store_timestamp(&self) -> i64 {
        self.last_store_timestamp.load(Ordering::Acquire)
    }

    /// Whether the writer has passed the middle of its file, or has no file yet: then
    /// the next file is made ready (it takes the blocks of one step when created).
    /// Until then it does not exist, so a fresh store takes the blocks of one step,
    /// not of two whole files.
    pub(crate) fn next_file_due(&self) -> bool {
        self.write_end() >= self.next_file_due_at()
    }

    /// The write end from which [`CommitLog::next_file_due`] holds.
    pub(crate) fn next_file_due_at(&self) -> i64 {
        let lead = (self.file_size / 2).max(2 * reserve_step(self.file_size)) as i64;
        self.next_file_base() - lead
    }

    /// Start of the file after the one holding `offset`.
    pub(crate) fn roll_next_file(&self, offset: i64) -> i64 {
        self.files.file_base(offset) + self.file_size as i64
    }

    /// How long the append lock has been held, if it is held. The clock is read only
    /// when it is: this is asked twice per send.
    pub(crate) fn lock_held_ms(&self) -> i64 {
        let begin = self.lock_begin_ms.load(Ordering::Relaxed);
        if begin == 0 {
            0
        } else {
            (vostok_remoting::support::time::now_millis() - begin).max(0)
        }
    }

    /// The bytes `offset..offset+size` if they lie in one file and below the max offset.
    pub(crate) fn read(&self, offset: i64, size: usize) -> Option<Bytes> {
        let (file, pos) = self.locate(offset, size)?;
        Some(file.bytes(pos, size))
    }

    /// The file and in-file position of a complete, readable range.
    fn locate(&self, offset: i64, size: usize) -> Option<(Arc<MappedFile>, usize)> {
        if offset < 0 || size == 0 || offset.checked_add(size as i64)? > self.max_offset() {
            return None;
        }
        let file = self.files.find(offset)?;
        let pos = (offset - file.base()) as usize;
        (pos + size <= file.size()).then_some((file, pos))
    }

    /// The whole record starting at `offset`, validated (magic, lengths, CRC, and its
    /// PHYSICALOFFSET field equal to `offset`), so a wrong offset yields `None`.
    pub(crate) fn read_record(&self, offset: i64) -> Option<Bytes> {
        let (file, pos) = self.locate(offset, 8)?;
        let total = usize::try_from(file.read_i32(pos)).ok()?;
        let (file, pos) = self.locate(offset, total.max(8))?;
        match RecordView::parse(file.read(pos, total), true) {
            Ok(RecordKind::Message(view)) if view.physical_offset() == offset => {
                Some(file.bytes(pos, total))
            }
            _ => None,
        }
    }

    /// STORETIMESTAMP of the record at `offset`, read in place.
    pub(crate) fn store_timestamp_at(&self, offset: i64, size: usize) -> Option<i64> {
        let (file, pos) = self.locate(offset, size)?;
        let sys_flag = file.read_i32(pos + SYS_FLAG_POS);
        let ts_pos = store_timestamp_pos(sys_flag);
        (ts_pos + 8 <= size).then(|| file.read_i64(pos + ts_pos))
    }
}
