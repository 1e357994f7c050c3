//! One consume queue: the index of one (topic, queue id) into the commitlog
//! (docs/store.md#consume-queue).
//!
//! ```text
//! consumequeue/<topic>/<queueId>/<20-digit logical byte offset>
//! entry n at logical byte n*20:
//!   0   8  commitlog offset (long)
//!   8   4  record size (int)
//!  12   8  tag hash code (long); delivery time for SCHEDULE_TOPIC_XXXX
//! ```
//!
//! Written only by the dispatcher, in queue-offset order; readers see entries below
//! the published max offset. Blank entries `(0, i32::MAX, 0)` fill the part of a
//! first file before the queue's first real entry and are skipped by readers.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use vostok_remoting::support::sync::MutexExt;

use crate::config::CQ_UNIT_SIZE;
use crate::error::Result;
use crate::mapped_file::{MappedFile, Prealloc};
use crate::mapped_file_queue::MappedFileQueue;

/// Sparse consume-queue files reserve disk ahead of the writer in chunks of this size.
const RESERVE_CHUNK: usize = 64 * 1024;

/// One consume-queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CqEntry {
    pub(crate) phy: i64,
    pub(crate) size: i32,
    pub(crate) tags_code: i64,
}

impl CqEntry {
    pub(crate) const BLANK: CqEntry = CqEntry {
        phy: 0,
        size: i32::MAX,
        tags_code: 0,
    };

    /// RocketMQ's validity rule during recovery.
    fn is_valid(&self) -> bool {
        self.phy >= 0 && self.size > 0
    }

    pub(crate) fn is_blank(&self) -> bool {
        self.size == i32::MAX
    }

    fn encode(&self) -> [u8; CQ_UNIT_SIZE] {
        let mut b = [0u8; CQ_UNIT_SIZE];
        b[..8].copy_from_slice(&self.phy.to_be_bytes());
        b[8..12].copy_from_slice(&self.size.to_be_bytes());
        b[12..].copy_from_slice(&self.tags_code.to_be_bytes());
        b
    }

    pub(crate) fn read(file: &MappedFile, pos: usize) -> CqEntry {
        CqEntry {
            phy: file.read_i64(pos),
            size: file.read_i32(pos + 8),
            tags_code: file.read_i64(pos + 12),
        }
    }
}

/// Entries readable in one file, from a queue offset on.
pub(crate) struct EntrySpan {
    pub(crate) file: Arc<MappedFile>,
    pub(crate) pos: usize,
    pub(crate) count: usize,
}

impl EntrySpan {
    pub(crate) fn get(&self, i: usize) -> CqEntry {
        CqEntry::read(&self.file, self.pos + i * CQ_UNIT_SIZE)
    }
}

pub(crate) struct ConsumeQueue {
    topic: String,
    queue_id: i32,
    files: MappedFileQueue,
    /// Number of entries = next queue offset to dispatch.
    max_offset: AtomicI64,
    /// First queue offset whose commitlog data still exists.
    min_offset: AtomicI64,
    /// End (offset + size) of the last real entry's record.
    max_phy_end: AtomicI64,
    /// Serialises the writer with `destroy`.
    write_lock: Mutex<()>,
    deleted: AtomicBool,
}

impl ConsumeQueue {
    /// Maps the queue's files under `dir`; positions are set by [`ConsumeQueue::recover`].
    pub(crate) fn load(dir: &Path, topic: &str, queue_id: i32, file_size: usize) -> Result<Self> {
        let files = MappedFileQueue::load(dir, file_size, Prealloc::Chunked(RESERVE_CHUNK))?;
        Ok(ConsumeQueue {
            topic: topic.to_owned(),
            queue_id,
            files,
            max_offset: AtomicI64::new(0),
            min_offset: AtomicI64::new(0),
            max_phy_end: AtomicI64::new(0),
            write_lock: Mutex::new(()),
            deleted: AtomicBool::new(false),
        })
    }

    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    pub(crate) fn queue_id(&self) -> i32 {
        self.queue_id
    }

    pub(crate) fn max_offset(&self) -> i64 {
        self.max_offset.load(Ordering::Acquire)
    }

    pub(crate) fn min_offset(&self) -> i64 {
        self.min_offset.load(Ordering::Acquire)
    }

    pub(crate) fn max_phy_end(&self) -> i64 {
        self.max_phy_end.load(Ordering::Acquire)
    }

    fn unit_pos(offset: i64) -> i64 {
        offset * CQ_UNIT_SIZE as i64
    }

    /// Finds the end of valid entries (RocketMQ `ConsumeQueue.recover`): scans from
    /// the third-last file; the first entry with a negative offset or a non-positive
    /// size ends the queue, and everything after it is cut.
    pub(crate) fn recover(&self) -> Result<()> {
        let files = self.files.files();
        let Some(first) = files.first() else {
            return Ok(());
        };
        let start = files.len().saturating_sub(3);
        let mut end = files[start].base();
        let mut max_phy_end = 0;
        for file in &files[start..] {
            let mut pos = 0;
            while pos + CQ_UNIT_SIZE <= file.size() {
                let e = CqEntry::read(file, pos);
                if !e.is_valid() {
                    break;
                }
                if !e.is_blank() {
                    max_phy_end = e.phy + e.size as i64;
                }
                pos += CQ_UNIT_SIZE;
            }
            end = file.base() + pos as i64;
            if pos + CQ_UNIT_SIZE <= file.size() {
                break;
            }
        }
        if max_phy_end == 0 && start > 0 {
            // The scanned files hold only blanks; use the last entry before them.
            let prev = &files[start - 1];
            let e = CqEntry::read(prev, prev.size() - CQ_UNIT_SIZE);
            if e.is_valid() && !e.is_blank() {
                max_phy_end = e.phy + e.size as i64;
            }
        }
        self.cut(end)?;
        self.max_phy_end.store(max_phy_end, Ordering::Release);
        self.min_offset
            .store(first.base() / CQ_UNIT_SIZE as i64, Ordering::Release);
        Ok(())
    }

    /// Cuts the queue at logical byte `end`: zeroes the rest of that file, removes
    /// later files, publishes the new max offset. Recovery only.
    fn cut(&self, end: i64) -> Result<()> {
        self.files
            .remove_from(self.files.file_base(end) + self.files.file_size() as i64)?;
        if let Some(file) = self.files.find(end) {
            // SAFETY: recovery runs before any reader or writer of this queue.
            unsafe { file.truncate_to((end - file.base()) as usize)? };
        }
        self.max_offset
            .store(end / CQ_UNIT_SIZE as i64, Ordering::Release);
        Ok(())
    }

    /// Drops the entries whose record ends past `commitlog_end` (recovery).
    pub(crate) fn truncate_beyond(&self, commitlog_end: i64) -> Result<()> {
        let min_logical = self.files.min_offset() / CQ_UNIT_SIZE as i64;
        let mut cut = self.max_offset();
        let mut max_phy_end = None;
        while cut > min_logical {
            let Some(e) = self.entry_unchecked(cut - 1) else {
                break;
            };
            if !e.is_blank() && e.phy + e.size as i64 > commitlog_end {
                cut -= 1;
            } else {
                if !e.is_blank() {
                    max_phy_end = Some(e.phy + e.size as i64);
                }
                break;
            }
        }
        if cut < self.max_offset() {
            tracing::info!(
                topic = %self.topic, queue_id = self.queue_id,
                from = cut, to = self.max_offset(),
                "dropping consume-queue entries past the commitlog end"
            );
            self.cut(Self::unit_pos(cut))?;
            self.max_phy_end
                .store(max_phy_end.unwrap_or(0), Ordering::Release);
        }
        Ok(())
    }

    fn entry_unchecked(&self, offset: i64) -> Option<CqEntry> {
        let pos = Self::unit_pos(offset);
        let file = self.files.find(pos)?;
        Some(CqEntry::read(&file, (pos - file.base()) as usize))
    }

    /// The entry at `offset`, if it is in the queue.
    pub(crate) fn entry(&self, offset: i64) -> Option<CqEntry> {
        if offset < self.min_offset() || offset >= self.max_offset() {
            return None;
        }
        self.entry_unchecked(offset)
    }

    /// The readable entries of the file holding `offset`, from `offset` on; `None`
    /// when that file is gone.
    pub(crate) fn span(&self, offset: i64) -> Option<EntrySpan> {
        let max = self.max_offset();
        if offset < 0 || offset >= max {
            return None;
        }
        let pos = Self::unit_pos(offset);
        let file = self.files.find(pos)?;
        let in_file = (pos - file.base()) as usize;
        let end = (Self::unit_pos(max) - file.base()).min(file.size() as i64) as usize;
        Some(EntrySpan {
            file,
            pos: in_file,
            count: (end - in_file) / CQ_UNIT_SIZE,
        })
    }

    /// First queue offset of the file after the one holding `offset`.
    pub(crate) fn roll_next_file(&self, offset: i64) -> i64 {
        let per_file = (self.files.file_size() / CQ_UNIT_SIZE) as i64;
        offset + per_file - offset.rem_euclid(per_file)
    }

    /// Writes the entry for queue offset `offset` (dispatcher only). An offset below
    /// the max is a duplicate and ignored; one above it leaves blank entries between.
    ///
    /// With `repair` (recovery, before any reader exists) an existing entry that
    /// differs from `entry` is rewritten: an entry straddling a page boundary can be
    /// torn by a crash and still look valid.
    pub(crate) fn put(&self, offset: i64, entry: CqEntry, repair: bool) -> Result<bool> {
        let _guard = self.write_lock.locked();
        if self.deleted.load(Ordering::Acquire) {
            return Ok(false);
        }
        let max = self.max_offset();
        if !(0..i64::MAX / (2 * CQ_UNIT_SIZE as i64)).contains(&offset) {
            tracing::error!(topic = %self.topic, queue_id = self.queue_id, offset, "queue offset out of range; entry skipped");
            return Ok(false);
        }
        if offset < max {
            if repair && self.entry_unchecked(offset).is_some_and(|e| e != entry) {
                tracing::warn!(
                    topic = %self.topic, queue_id = self.queue_id, offset,
                    "repairing a torn consume-queue entry"
                );
                self.rewrite_entry(offset, entry)?;
            }
            return Ok(false);
        }
        if offset > max {
            let from = if self.files.is_empty() {
                // A queue that starts late: blanks from the start of its first file.
                (self.files.file_base(Self::unit_pos(offset)) / CQ_UNIT_SIZE as i64).max(0)
            } else {
                let per_file = (self.files.file_size() / CQ_UNIT_SIZE) as i64;
                if offset - max > per_file {
                    tracing::error!(
                        topic = %self.topic, queue_id = self.queue_id, expected = max, offset,
                        "queue offset far past the queue's end; entry skipped"
                    );
                    return Ok(false);
                }
                tracing::warn!(
                    topic = %self.topic, queue_id = self.queue_id, expected = max, offset,
                    "consume-queue gap; filling with blank entries"
                );
                max
            };
            if self.files.is_empty() {
                // The blanks before it are no messages (a restart finds the same min:
                // `correct_min_offset` passes blanks).
                self.min_offset.store(offset, Ordering::Release);
            }
            for blank in from..offset {
                self.write_entry(blank, CqEntry::BLANK)?;
            }
        }
        self.write_entry(offset, entry)?;
        self.max_phy_end
            .store(entry.phy + entry.size as i64, Ordering::Release);
        Ok(true)
    }

    fn write_entry(&self, offset: i64, entry: CqEntry) -> Result<()> {
        let pos = Self::unit_pos(offset);
        let base = self.files.file_base(pos);
        let file = match self.files.last() {
            Some(f) if f.base() == base => f,
            Some(f) if f.base() > base => {
                // Only reachable for blanks below an existing file; nothing to write.
                return Ok(());
            }
            _ => self.files.create(base)?,
        };
        let in_file = (pos - base) as usize;
        file.reserve(in_file + CQ_UNIT_SIZE)?;
        // SAFETY: the dispatcher is the only writer (serialised by `write_lock`) and
        // writes past the published max offset.
        unsafe { file.write_at(in_file, &entry.encode()) };
        file.set_wrote(in_file + CQ_UNIT_SIZE);
        self.max_offset.store(offset + 1, Ordering::Release);
        Ok(())
    }

    /// Overwrites an entry below the max offset (recovery only).
    fn rewrite_entry(&self, offset: i64, entry: CqEntry) -> Result<()> {
        let pos = Self::unit_pos(offset);
        if let Some(file) = self.files.find(pos) {
            // SAFETY: recovery runs before any reader of this queue exists, and the
            // dispatcher is the only writer.
            unsafe { file.write_at((pos - file.base()) as usize, &entry.encode()) };
        }
        Ok(())
    }

    /// The first queue offset whose record is at or after commitlog offset `phy`
    /// (the max offset if there is none).
    pub(crate) fn offset_of_phy(&self, phy: i64) -> i64 {
        let first_file_offset = self.files.min_offset() / CQ_UNIT_SIZE as i64;
        let (mut lo, mut hi) = (self.min_offset().max(first_file_offset), self.max_offset());
        // Entries are in commitlog order (blanks, at offset 0, only come first).
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.entry_unchecked(mid) {
                Some(e) if e.is_blank() || e.phy < phy => lo = mid + 1,
                Some(_) => hi = mid,
                None => lo = mid + 1,
            }
        }
        lo
    }

    /// Moves the min offset to the first entry whose record is at or after
    /// `commitlog_min` (RocketMQ `correctMinOffset`).
    pub(crate) fn correct_min_offset(&self, commitlog_min: i64) {
        let lo = self.offset_of_phy(commitlog_min);
        if lo != self.min_offset() {
            tracing::debug!(topic = %self.topic, queue_id = self.queue_id, min = lo, "consume-queue min offset moved");
        }
        self.min_offset.store(lo, Ordering::Release);
    }

    /// Removes leading files whose last entry's record lies before `commitlog_min`;
    /// the newest file always stays.
    pub(crate) fn delete_expired_files(&self, commitlog_min: i64) -> Result<usize> {
        let files = self.files.files();
        let mut n = 0;
        for file in files.iter().take(files.len().saturating_sub(1)) {
            let last = CqEntry::read(file, file.size() - CQ_UNIT_SIZE);
            if last.is_valid() && !last.is_blank() && last.phy < commitlog_min {
                n += 1;
            } else {
                break;
            }
        }
        if n > 0 {
            self.files.remove_first(n)?;
            let first = self.files.min_offset() / CQ_UNIT_SIZE as i64;
            self.min_offset.fetch_max(first, Ordering::AcqRel);
        }
        Ok(n)
    }

    pub(crate) fn flush(&self) -> Result<()> {
        self.files.flush()
    }

    /// fdatasync of every file (recovery after a crash).
    pub(crate) fn sync_all(&self) -> Result<()> {
        self.files.sync_files_from(i64::MIN)
    }

    /// Deletes the queue's files; later puts on this instance are ignored.
    pub(crate) fn destroy(&self) -> Result<()> {
        let _guard = self.write_lock.locked();
        self.deleted.store(true, Ordering::Release);
        self.files.destroy()
    }
}
