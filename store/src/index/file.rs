//! One index file (RocketMQ `IndexFile`, docs/store.md#index-file).
//!
//! ```text
//! header (40 bytes)
//!   0  8  beginTimestamp   8  8  endTimestamp   16  8  beginPhyOffset
//!  24  8  endPhyOffset    32  4  hashSlotCount  36  4  indexCount (starts at 1)
//! slot table: maxHashSlotNum x int = number of the newest entry of the bucket (0 = empty)
//! entries: maxIndexNum x 20 bytes, entry k at 40 + slots*4 + k*20:
//!   0  4  keyHash (abs of Java hashCode of "topic#key")
//!   4  8  commitlog offset
//!  12  4  timeDiff (seconds since beginTimestamp)
//!  16  4  previous entry in the same bucket (0 = end)
//! ```
//!
//! The header lives in memory and is written to the file only by a flush, after the
//! entries it counts are on disk; so after a crash the header on disk never counts an
//! entry that is not there. Slots may point past it (written later): recovery
//! rebuilds the slot table from the counted entries. So the periodic flush leaves the
//! slot table to the kernel's writeback ([`IndexFlush::Entries`]): syncing it every
//! second write-protected every page of it, and since keys hash all over the table,
//! the next key to land on each page faulted. A full file, and the newest one at
//! shutdown, get their table synced too ([`IndexFlush::Complete`]): only the newest
//! file is rebuilt after a crash, and none after a clean stop.
//!
//! Concurrency: one writer (the dispatcher). An entry is written, then the count is
//! published, then the slot is stored with release ordering; a reader loads the slot
//! with acquire ordering and so only follows entries that are complete.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Mutex;

use vostok_remoting::support::sync::MutexExt;

use crate::error::Result;
use crate::mapped_file::{MappedFile, Prealloc};

pub(crate) const HEADER_SIZE: usize = 40;
const ENTRY_SIZE: usize = 20;
const RESERVE_CHUNK: usize = 1024 * 1024;

/// What a flush makes durable besides the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexFlush {
    /// The entries the header counts: enough for recovery after a crash.
    Entries,
    /// The entries and the slot table: for a file that will not be rebuilt.
    Complete,
}

/// The header values, as flushed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) begin_timestamp: i64,
    pub(crate) end_timestamp: i64,
    pub(crate) begin_phy_offset: i64,
    pub(crate) end_phy_offset: i64,
    pub(crate) hash_slot_count: i32,
    pub(crate) index_count: i32,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..8].copy_from_slice(&self.begin_timestamp.to_be_bytes());
        b[8..16].copy_from_slice(&self.end_timestamp.to_be_bytes());
        b[16..24].copy_from_slice(&self.begin_phy_offset.to_be_bytes());
        b[24..32].copy_from_slice(&self.end_phy_offset.to_be_bytes());
        b[32..36].copy_from_slice(&self.hash_slot_count.to_be_bytes());
        b[36..40].copy_from_slice(&self.index_count.to_be_bytes());
        b
    }
}

pub(crate) struct IndexFile {
    file: MappedFile,
    slots: u32,
    max_index: u32,
    begin_timestamp: AtomicI64,
    end_timestamp: AtomicI64,
    begin_phy_offset: AtomicI64,
    end_phy_offset: AtomicI64,
    hash_slot_count: AtomicI32,
    index_count: AtomicI32,
    /// Entry count of the header on disk; header writes never move it backwards.
    durable_count: Mutex<i32>,
    /// Entry count whose slots were last synced with the table.
    slots_durable_count: Mutex<i32>,
}

/// The bucket hash of an index key: `abs(hashCode)`, 0 for `Integer.MIN_VALUE`.
pub(crate) fn key_hash(key: &str) -> i32 {
    vostok_remoting::protocol::filter::java_hash(key)
        .checked_abs()
        .unwrap_or(0)
}

impl IndexFile {
    pub(crate) fn file_size(slots: u32, max_index: u32) -> usize {
        HEADER_SIZE + slots as usize * 4 + max_index as usize * ENTRY_SIZE
    }

    /// A new file whose time and offset range starts where the previous one ended.
    pub(crate) fn create(
        path: PathBuf,
        slots: u32,
        max_index: u32,
        prev_end_phy: i64,
        prev_end_timestamp: i64,
    ) -> Result<Self> {
        let size = Self::file_size(slots, max_index);
        let file = MappedFile::create_at(path, 0, size, Prealloc::Chunked(RESERVE_CHUNK))?;
        // Slots are written at random: reserve the whole table now.
        file.reserve(HEADER_SIZE + slots as usize * 4)?;
        let f = IndexFile {
            file,
            slots,
            max_index,
            begin_timestamp: AtomicI64::new(prev_end_timestamp.max(0)),
            end_timestamp: AtomicI64::new(prev_end_timestamp.max(0)),
            begin_phy_offset: AtomicI64::new(prev_end_phy.max(0)),
            end_phy_offset: AtomicI64::new(prev_end_phy.max(0)),
            hash_slot_count: AtomicI32::new(0),
            index_count: AtomicI32::new(1),
            durable_count: Mutex::new(0),
            slots_durable_count: Mutex::new(1),
        };
        f.write_header(&f.header())?;
        Ok(f)
    }

    /// Maps an existing file and reads its header.
    pub(crate) fn open(path: PathBuf, slots: u32, max_index: u32) -> Result<Self> {
        let size = Self::file_size(slots, max_index);
        let file = MappedFile::open(path, 0, size, Prealloc::Chunked(RESERVE_CHUNK))?;
        // Lookups read a slot and a chain of entries, at random: no read-ahead (a new
        // file starts without it, `MappedFile::create_at`).
        file.set_read_ahead(0, size, false);
        file.set_wrote(size);
        let count = file.read_i32(36).clamp(1, max_index as i32);
        Ok(IndexFile {
            begin_timestamp: AtomicI64::new(file.read_i64(0)),
            end_timestamp: AtomicI64::new(file.read_i64(8)),
            begin_phy_offset: AtomicI64::new(file.read_i64(16)),
            end_phy_offset: AtomicI64::new(file.read_i64(24)),
            hash_slot_count: AtomicI32::new(file.read_i32(32).max(0)),
            index_count: AtomicI32::new(count),
            durable_count: Mutex::new(count),
            slots_durable_count: Mutex::new(count),
            file,
            slots,
            max_index,
        })
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        self.file.path()
    }

    pub(crate) fn header(&self) -> Header {
        Header {
            begin_timestamp: self.begin_timestamp.load(Ordering::Acquire),
            end_timestamp: self.end_timestamp.load(Ordering::Acquire),
            begin_phy_offset: self.begin_phy_offset.load(Ordering::Acquire),
            end_phy_offset: self.end_phy_offset.load(Ordering::Acquire),
            hash_slot_count: self.hash_slot_count.load(Ordering::Acquire),
            index_count: self.index_count.load(Ordering::Acquire),
        }
    }

    pub(crate) fn index_count(&self) -> i32 {
        self.index_count.load(Ordering::Acquire)
    }

    pub(crate) fn end_phy_offset(&self) -> i64 {
        self.end_phy_offset.load(Ordering::Acquire)
    }

    pub(crate) fn end_timestamp(&self) -> i64 {
        self.end_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn begin_timestamp(&self) -> i64 {
        self.begin_timestamp.load(Ordering::Acquire)
    }

    fn slot_pos(&self, hash: i32) -> usize {
        HEADER_SIZE + (hash as u32 % self.slots) as usize * 4
    }

    /// Keeps the slot table in memory while this file takes new entries
    /// ([`MappedFile::keep_resident`]). Every key reads and writes a slot at random,
    /// and the dispatcher often runs on the thread that appended the message: a slot
    /// page the kernel had reclaimed (the table is clean after writeback, and a store
    /// larger than memory evicts all day) made that thread wait for a disk read, and
    /// every connection it served with it.
    pub(crate) fn keep_slots_resident(&self) -> std::io::Result<()> {
        self.file.keep_resident(0, self.slots_end())
    }

    /// The slot table may be reclaimed again: the file is full, only lookups read it.
    pub(crate) fn release_slots(&self) {
        self.file.release_resident(0, self.slots_end());
    }

    /// Where the slot table ends and the entries begin.
    fn slots_end(&self) -> usize {
        HEADER_SIZE + self.slots as usize * 4
    }

    fn entry_pos(&self, number: i32) -> usize {
        self.slots_end() + number as usize * ENTRY_SIZE
    }

    /// Adds one key (writer only). `false` when the file is full.
    pub(crate) fn put(&self, hash: i32, phy_offset: i64, store_timestamp: i64) -> Result<bool> {
        let count = self.index_count();
        if count as u32 >= self.max_index {
            return Ok(false);
        }
        let slot = self.file.atomic_u32(self.slot_pos(hash));
        let mut prev = slot.load(Ordering::Acquire) as i32;
        if prev <= 0 || prev >= count {
            prev = 0;
        }
        let begin = self.begin_timestamp.load(Ordering::Relaxed);
        let time_diff = if begin <= 0 {
            0
        } else {
            ((store_timestamp - begin) / 1000).clamp(0, i32::MAX as i64) as i32
        };
        let pos = self.entry_pos(count);
        self.file.reserve(pos + ENTRY_SIZE)?;
        let mut entry = [0u8; ENTRY_SIZE];
        entry[0..4].copy_from_slice(&hash.to_be_bytes());
        entry[4..12].copy_from_slice(&phy_offset.to_be_bytes());
        entry[12..16].copy_from_slice(&time_diff.to_be_bytes());
        entry[16..20].copy_from_slice(&prev.to_be_bytes());
        // SAFETY: single writer; entry `count` is not reachable by readers until the
        // slot store below.
        unsafe { self.file.write_at(pos, &entry) };
        if count <= 1 {
            self.begin_phy_offset.store(phy_offset, Ordering::Relaxed);
            self.begin_timestamp
                .store(store_timestamp, Ordering::Relaxed);
        }
        if prev == 0 {
            self.hash_slot_count.fetch_add(1, Ordering::Relaxed);
        }
        self.end_phy_offset.store(phy_offset, Ordering::Relaxed);
        self.end_timestamp.store(store_timestamp, Ordering::Relaxed);
        self.index_count.store(count + 1, Ordering::Release);
        slot.store(count as u32, Ordering::Release);
        Ok(true)
    }

    /// Commitlog offsets of entries with `hash` stored within `begin..=end` (ms),
    /// newest first, at most `max` in `out`.
    pub(crate) fn select(&self, hash: i32, max: usize, begin: i64, end: i64, out: &mut Vec<i64>) {
        let mut next = self
            .file
            .atomic_u32(self.slot_pos(hash))
            .load(Ordering::Acquire) as i32;
        let count = self.index_count();
        if count <= 1 || next <= 0 || next >= count {
            return;
        }
        let begin_ts = self.begin_timestamp();
        let mut steps = 0;
        while out.len() < max && steps < count {
            steps += 1;
            let pos = self.entry_pos(next);
            let entry_hash = self.file.read_i32(pos);
            let phy = self.file.read_i64(pos + 4);
            let time_diff = self.file.read_i32(pos + 12);
            let prev = self.file.read_i32(pos + 16);
            if time_diff < 0 {
                break;
            }
            let time = begin_ts + time_diff as i64 * 1000;
            if entry_hash == hash && time >= begin && time <= end {
                out.push(phy);
            }
            if prev <= 0 || prev >= next || time < begin {
                break;
            }
            next = prev;
        }
    }

    /// Whether the file's time range overlaps `begin..=end`.
    pub(crate) fn is_time_matched(&self, begin: i64, end: i64) -> bool {
        let (b, e) = (self.begin_timestamp(), self.end_timestamp());
        (begin < b && end > e) || (begin >= b && begin <= e) || (end >= b && end <= e)
    }

    fn write_header(&self, header: &Header) -> Result<()> {
        let mut durable = self.durable_count.locked();
        if header.index_count < *durable {
            return Ok(()); // an older snapshot than the one on disk
        }
        // SAFETY: the header bytes are written only here, under `durable_count`;
        // readers use the in-memory header.
        unsafe { self.file.write_at(0, &header.encode()) };
        self.file.sync_range(0, HEADER_SIZE)?;
        *durable = header.index_count;
        Ok(())
    }

    /// Makes `header` durable: first the entries it counts (and with
    /// [`IndexFlush::Complete`] the slot table), then the header itself.
    pub(crate) fn flush(&self, header: &Header, kind: IndexFlush) -> Result<()> {
        if kind == IndexFlush::Complete {
            let mut slots = self.slots_durable_count.locked();
            if *slots < header.index_count {
                self.file.sync_range(0, self.slots_end())?;
                *slots = header.index_count;
            }
        }
        let durable = *self.durable_count.locked();
        if durable >= header.index_count {
            return Ok(()); // nothing new: keep an idle store from writing
        }
        self.file
            .sync_range(self.entry_pos(durable), self.entry_pos(header.index_count))?;
        self.write_header(header)
    }

    /// After a crash: drops entries past the header's count and rebuilds the slot
    /// table from the counted ones. Runs before any reader or writer.
    pub(crate) fn rebuild_after_crash(&self) -> Result<()> {
        let count = self.index_count();
        let slots_end = self.slots_end();
        // SAFETY: recovery owns the file exclusively.
        unsafe {
            self.file.truncate_to(self.entry_pos(count))?;
            let zeros = vec![0u8; 64 * 1024];
            let mut pos = HEADER_SIZE;
            while pos < slots_end {
                let n = zeros.len().min(slots_end - pos);
                self.file.write_at(pos, &zeros[..n]);
                pos += n;
            }
        }
        let mut used = 0;
        for k in 1..count {
            let hash = self.file.read_i32(self.entry_pos(k));
            let slot = self.file.atomic_u32(self.slot_pos(hash.max(0)));
            if slot.load(Ordering::Relaxed) == 0 {
                used += 1;
            }
            slot.store(k as u32, Ordering::Relaxed);
        }
        self.hash_slot_count.store(used, Ordering::Release);
        self.file.set_wrote(self.file.size());
        self.file.sync_range(0, slots_end)?;
        *self.slots_durable_count.locked() = count;
        Ok(())
    }

    pub(crate) fn sync_file(&self) -> Result<()> {
        self.file.sync_file()
    }

    pub(crate) fn remove(&self) -> Result<()> {
        self.file.remove()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minor page faults taken by this thread so far.
    #[cfg(target_os = "linux")]
    fn thread_minor_faults() -> i64 {
        // SAFETY: getrusage fills the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        assert_eq!(rc, 0);
        usage.ru_minflt
    }

    /// Slot-table pages: one key on each, `round` choosing a different slot of it.
    const PAGES: i32 = 64;
    const SLOTS_PER_PAGE: i32 = 1024;

    fn one_key_per_slot_page(f: &IndexFile, round: i32) {
        for page in 0..PAGES {
            let hash = page * SLOTS_PER_PAGE + 100 + round;
            assert!(f.put(hash, (page * 100 + round) as i64, 1_000).unwrap());
        }
    }

    /// Faults taken while adding a key to every slot page after `kind` of flush.
    #[cfg(target_os = "linux")]
    fn faults_after(kind: IndexFlush) -> i64 {
        let dir = tempfile::tempdir().unwrap();
        let slots = (PAGES * SLOTS_PER_PAGE) as u32;
        let f = IndexFile::create(dir.path().join("index"), slots, 10_000, 0, 0).unwrap();
        one_key_per_slot_page(&f, 0);
        f.flush(&f.header(), kind).unwrap();
        let before = thread_minor_faults();
        one_key_per_slot_page(&f, 1);
        thread_minor_faults() - before
    }

    /// The periodic flush syncs the entries, not the slot table: syncing the table
    /// write-protected every page of it, so the next key hashed to each page faulted.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_periodic_flush_leaves_the_slot_table_writable() {
        let complete = faults_after(IndexFlush::Complete);
        let entries = faults_after(IndexFlush::Entries);
        assert!(
            complete >= PAGES as i64,
            "{complete} faults after a complete flush"
        );
        // The entries written after it: the page the last flush synced, and the next.
        assert!(entries <= 2, "{entries} faults after an entries flush");
    }

    /// Either flush makes the header's entries findable from the file alone.
    #[test]
    fn both_flushes_leave_a_file_that_reopens_with_its_entries() {
        for kind in [IndexFlush::Entries, IndexFlush::Complete] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index");
            let f = IndexFile::create(path.clone(), 97, 200, 0, 0).unwrap();
            for k in 0..50 {
                assert!(f.put(k * 7, k as i64, 1_000).unwrap());
            }
            f.flush(&f.header(), kind).unwrap();
            drop(f);
            let g = IndexFile::open(path, 97, 200).unwrap();
            g.rebuild_after_crash().unwrap();
            assert_eq!(g.index_count(), 51, "{kind:?}");
            let mut found = Vec::new();
            g.select(21, 8, 0, i64::MAX, &mut found);
            assert_eq!(found, vec![3], "{kind:?}");
        }
    }
}
