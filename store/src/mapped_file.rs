//! One fixed-size, memory-mapped store file (RocketMQ `MappedFile`).
//!
//! A file is named by the 20-digit offset of its first byte and is created at full
//! size. It has exactly one writer at a time (the commitlog append lock, the
//! dispatcher for consume queues and index) which writes only past the published
//! `wrote` position and then publishes the new position with release ordering;
//! readers only read below a position they loaded with acquire ordering. That
//! discipline is what makes the shared mapping sound; the few writes that break it
//! (truncation during recovery) run before any reader exists.
//!
//! Space is reserved with `fallocate` before it is written so that a full disk is an
//! error from a system call, never a SIGBUS from a page fault: commitlog files reserve
//! in steps ahead of the writer (a fresh store does not take a whole file's blocks
//! before its first message), sparse files (consume queues, index) in small chunks.
//! Nothing writes, or maps in writable, a page whose blocks are not reserved.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use memmap2::{MmapOptions, MmapRaw};
use vostok_remoting::support::sync::MutexExt;

use crate::error::{Result, StoreError};

mod durability;

pub(crate) use durability::sync_dir;

/// How a new file's blocks are reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prealloc {
    /// Commitlog: the descriptor stays open; the first step is reserved at creation,
    /// the rest in steps of this many bytes as the writer (or the pre-fault thread
    /// ahead of it) reaches them.
    Stepped(usize),
    /// Sparse file; reserve ahead of the writer in chunks of this many bytes.
    Chunked(usize),
}

pub(crate) const PAGE_SIZE: usize = 4096;

/// What [`MappedFile::zero_fill`] writes from: the pre-fault thread fills a 64 KiB
/// chunk per call, one `pwrite`.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// The 20-digit zero-padded file name of a start offset.
pub(crate) fn offset_file_name(offset: i64) -> String {
    format!("{offset:020}")
}

/// The start offset encoded in a file name, if it is one.
pub(crate) fn parse_offset_file_name(name: &str) -> Option<i64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

pub(crate) struct MappedFile {
    path: PathBuf,
    base: i64,
    size: usize,
    /// Kept open for commitlog files only: consume queues and index files can be
    /// thousands, and the mapping does not need the descriptor; the rare operations
    /// that do (reserving space, truncating, fdatasync) reopen the path.
    file: Option<File>,
    map: MmapRaw,
    /// Bytes written and visible to readers.
    wrote: AtomicUsize,
    /// Bytes known to be on disk.
    flushed: AtomicUsize,
    /// Bytes whose blocks are reserved.
    reserved: AtomicUsize,
    /// Held while blocks are reserved or a truncation frees them, so that the mark
    /// above never claims blocks a concurrent truncation punched out.
    reserving: Mutex<()>,
    prealloc: Prealloc,
}

fn last_os_error_unless_unsupported(rc: libc::c_int) -> Option<io::Error> {
    if rc == 0 {
        return None;
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::EINVAL) => None,
        _ => Some(err),
    }
}

/// `fallocate(mode = 0)`: reserve blocks; a file system without it is not an error.
fn reserve_blocks(file: &File, offset: usize, len: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return Ok(());
    }
    loop {
        // SAFETY: plain system call on a descriptor we own.
        let rc = unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                0,
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        if rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return match last_os_error_unless_unsupported(rc) {
            Some(e) => Err(e),
            None => Ok(()),
        };
    }
}

impl MappedFile {
    /// Creates the file at `path` (which must not exist) at full size and maps it.
    pub(crate) fn create_at(
        path: PathBuf,
        base: i64,
        size: usize,
        prealloc: Prealloc,
    ) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| StoreError::io("create", &path, e))?;
        let reserved = match prealloc {
            Prealloc::Stepped(step) => step.min(size),
            Prealloc::Chunked(_) => 0,
        };
        let sized = (|| {
            reserve_blocks(&file, 0, reserved)?;
            file.set_len(size as u64)
        })();
        if let Err(e) = sized {
            let _ = std::fs::remove_file(&path);
            return Err(StoreError::io("allocate", &path, e));
        }
        let mapped = Self::map(path, file, base, size, prealloc, reserved)?;
        // Nothing is written yet: a fault would only read zeros ahead.
        mapped.set_read_ahead(0, size, false);
        Ok(mapped)
    }

    /// Maps an existing file. A file shorter than `size` is extended with zeros (a
    /// crash while creating it); a longer one is an error.
    pub(crate) fn open(path: PathBuf, base: i64, size: usize, prealloc: Prealloc) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| StoreError::io("open", &path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", &path, e))?
            .len();
        if len > size as u64 {
            return Err(StoreError::FileSize {
                path,
                expected: size as u64,
                actual: len,
            });
        }
        if len < size as u64 {
            tracing::warn!(path = %path.display(), len, size, "extending a short store file");
            file.set_len(size as u64)
                .map_err(|e| StoreError::io("extend", &path, e))?;
        }
        // Existing data is reserved; the tail is reserved again lazily when written.
        Self::map(path, file, base, size, prealloc, 0)
    }

    fn map(
        path: PathBuf,
        file: File,
        base: i64,
        size: usize,
        prealloc: Prealloc,
        reserved: usize,
    ) -> Result<Self> {
        let map = MmapOptions::new()
            .len(size)
            .map_raw(&file)
            .map_err(|e| StoreError::io("mmap", &path, e))?;
        let file = (!matches!(prealloc, Prealloc::Chunked(_))).then_some(file);
        Ok(MappedFile {
            path,
            base,
            size,
            file,
            map,
            wrote: AtomicUsize::new(0),
            flushed: AtomicUsize::new(0),
            reserved: AtomicUsize::new(reserved),
            reserving: Mutex::new(()),
            prealloc,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Global offset of the file's first byte.
    pub(crate) fn base(&self) -> i64 {
        self.base
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Global offset just past the file.
    pub(crate) fn end(&self) -> i64 {
        self.base + self.size as i64
    }

    pub(crate) fn wrote(&self) -> usize {
        self.wrote.load(Ordering::Acquire)
    }

    /// Publishes `pos` as written: everything below it is readable.
    pub(crate) fn set_wrote(&self, pos: usize) {
        debug_assert!(pos <= self.size);
        self.wrote.store(pos, Ordering::Release);
    }

    pub(crate) fn flushed(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }

    pub(crate) fn set_flushed(&self, pos: usize) {
        self.flushed.store(pos, Ordering::Release);
    }

    /// Makes sure blocks up to `upto` are reserved, rounded up to the next step or
    /// chunk. Cheap when they are (one atomic load). The commitlog's writer and its
    /// pre-fault thread may both call it; one reserves at a time.
    pub(crate) fn reserve(&self, upto: usize) -> Result<()> {
        if upto <= self.reserved.load(Ordering::Acquire) {
            return Ok(());
        }
        let _reserving = self.reserving.locked();
        let reserved = self.reserved.load(Ordering::Acquire);
        if upto <= reserved {
            return Ok(());
        }
        let chunk = match self.prealloc {
            Prealloc::Stepped(step) | Prealloc::Chunked(step) => step.max(PAGE_SIZE),
        };
        let end = upto.div_ceil(chunk).saturating_mul(chunk).min(self.size);
        self.with_file(|f| reserve_blocks(f, reserved, end - reserved))
            .map_err(|e| StoreError::io("reserve space in", &self.path, e))?;
        self.reserved.store(end, Ordering::Release);
        Ok(())
    }

    /// Bytes from the start of the file whose blocks are reserved.
    pub(crate) fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Acquire)
    }

    /// Maps `from..to` in writable ahead of the writer (`MADV_POPULATE_WRITE`), so
    /// that the writer does not take the page faults (and the zeroing of new pages)
    /// itself. Contents are not touched. Kernels without it just skip this. Stops at
    /// the reserved blocks: a page mapped in writable past them could be one the file
    /// system has no room for.
    pub(crate) fn prefault(&self, from: usize, to: usize) {
        if let Some((start, len)) = self.page_range(from, to.min(self.reserved())) {
            let _ = self
                .map
                .advise_range(memmap2::Advice::PopulateWrite, start, len);
        }
    }

    /// Writes zeros over the whole pages of `from..to` that lie within the reserved
    /// blocks with `pwrite`, [`ZEROS`] at a time: the cheapest way to bring new pages
    /// into the page cache (see `commitlog::prefault`).
    ///
    /// # Safety
    /// Nothing is written to `from..to` meanwhile and nothing there is read as data:
    /// it lies past every byte written.
    pub(crate) unsafe fn zero_fill(&self, from: usize, to: usize) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let to = to.min(self.size).min(self.reserved()) / PAGE_SIZE * PAGE_SIZE;
        let mut at = from.next_multiple_of(PAGE_SIZE);
        while at < to {
            let n = (to - at).min(ZEROS.len());
            self.with_file(|f| f.write_all_at(&ZEROS[..n], at as u64))
                .map_err(|e| StoreError::io("zero-fill", &self.path, e))?;
            at += n;
        }
        Ok(())
    }

    /// Writes `data` at `pos` with `pwrite` (through the page cache the mapping
    /// shares), retrying short writes.
    ///
    /// # Safety
    /// As for [`MappedFile::write_at`].
    pub(crate) unsafe fn pwrite_at(&self, pos: usize, data: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        assert!(
            pos + data.len() <= self.size,
            "write past the end of {:?}",
            self.path
        );
        self.with_file(|f| f.write_all_at(data, pos as u64))
            .map_err(|e| StoreError::io("pwrite", &self.path, e))
    }

    /// Turns the kernel's read-ahead off (`MADV_RANDOM`) or back on (`MADV_NORMAL`)
    /// for the pages holding `from..to` of the mapping.
    ///
    /// Off for the part of a file not yet written (from its creation, and past a cut
    /// tail): a fault on a page not yet written otherwise reads around it
    /// (`read_ahead_kb`, 8 MiB on some disks) in large folios, and once one such
    /// read-ahead happened, every later fault continues it ahead of the writer.
    /// Zero-filling those cost the commitlog's pre-fault thread 2–4× the CPU per byte
    /// on a 1 GiB file, with stalls of tens of milliseconds, and the dispatcher, which
    /// writes consume-queue and index entries on the thread that read the request, one
    /// of 20 ms at a time (deploy/bench/README.md, "The read-ahead stalls"); one page
    /// at a time it is cheap and even. Back on once the writer has moved to the next
    /// file, for consumers reading old messages back from disk. A failure only costs
    /// speed.
    pub(crate) fn set_read_ahead(&self, from: usize, to: usize, on: bool) {
        if let Some((start, len)) = self.page_range(from, to) {
            let advice = if on {
                memmap2::Advice::Normal
            } else {
                memmap2::Advice::Random
            };
            let _ = self.map.advise_range(advice, start, len);
        }
    }

    /// Keeps the pages of `from..to` in memory once they are touched
    /// (`mlock2(MLOCK_ONFAULT)`): the kernel writes them back as usual but no longer
    /// reclaims them, so a hot region read and written at random never has to be read
    /// back from disk by the thread that needs it. Fails when the process may not lock
    /// that much (`RLIMIT_MEMLOCK`, without `CAP_IPC_LOCK`).
    pub(crate) fn keep_resident(&self, from: usize, to: usize) -> io::Result<()> {
        let Some((start, len)) = self.page_range(from, to) else {
            return Ok(());
        };
        // SAFETY: a range inside our own mapping; locking changes no contents.
        let rc = unsafe {
            libc::mlock2(
                self.map.as_ptr().add(start) as *const libc::c_void,
                len,
                libc::MLOCK_ONFAULT,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Undoes [`MappedFile::keep_resident`]: the pages are reclaimable again.
    pub(crate) fn release_resident(&self, from: usize, to: usize) {
        if let Some((start, len)) = self.page_range(from, to) {
            // SAFETY: as above. It can only fail for a range that was never mapped.
            unsafe { libc::munlock(self.map.as_ptr().add(start) as *const libc::c_void, len) };
        }
    }

    /// `from..to` widened to whole pages and cut at the file's end, as a start and a
    /// length; `None` when empty.
    fn page_range(&self, from: usize, to: usize) -> Option<(usize, usize)> {
        let start = from - from % PAGE_SIZE;
        let end = to.min(self.size);
        (start < end).then(|| (start, end - start))
    }

    /// Runs `f` on the file's descriptor, reopening the file if it is not kept open.
    fn with_file<T>(&self, f: impl FnOnce(&File) -> io::Result<T>) -> io::Result<T> {
        match &self.file {
            Some(file) => f(file),
            None => f(&OpenOptions::new().read(true).write(true).open(&self.path)?),
        }
    }

    /// Copies `data` to `pos`.
    ///
    /// # Safety
    /// The caller is the file's single writer and no reader reads `pos..pos+len`
    /// (it lies at or past the published `wrote` position).
    pub(crate) unsafe fn write_at(&self, pos: usize, data: &[u8]) {
        assert!(
            pos + data.len() <= self.size,
            "write past the end of {:?}",
            self.path
        );
        // SAFETY: in bounds (checked above); exclusive per the caller's contract.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.map.as_mut_ptr().add(pos),
                data.len(),
            );
        }
    }

    /// A mutable view of `pos..pos+len` for encoding in place.
    ///
    /// # Safety
    /// As for [`MappedFile::write_at`]; the slice must be dropped before the range is
    /// published.
    #[allow(clippy::mut_from_ref)] // exclusivity comes from the single-writer contract
    pub(crate) unsafe fn slice_mut(&self, pos: usize, len: usize) -> &mut [u8] {
        assert!(
            pos + len <= self.size,
            "slice past the end of {:?}",
            self.path
        );
        // SAFETY: in bounds; exclusive per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(pos), len) }
    }

    /// Reads `pos..pos+len`, which must be below a published `wrote` position (or
    /// otherwise not concurrently written).
    pub(crate) fn read(&self, pos: usize, len: usize) -> &[u8] {
        assert!(
            pos + len <= self.size,
            "read past the end of {:?}",
            self.path
        );
        // SAFETY: in bounds; published bytes are never written again while the file
        // is shared (module docs).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(pos), len) }
    }

    /// Reads a big-endian i32 at `pos`.
    pub(crate) fn read_i32(&self, pos: usize) -> i32 {
        let b = self.read(pos, 4);
        i32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Reads a big-endian i64 at `pos`.
    pub(crate) fn read_i64(&self, pos: usize) -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.read(pos, 8));
        i64::from_be_bytes(b)
    }

    /// The aligned 4-byte word at `pos`, accessed atomically (index hash slots,
    /// which the writer updates while readers walk them).
    pub(crate) fn atomic_u32(&self, pos: usize) -> &AtomicU32 {
        assert!(
            pos % 4 == 0 && pos + 4 <= self.size,
            "unaligned atomic in {:?}",
            self.path
        );
        // SAFETY: in bounds and 4-byte aligned (the mapping is page aligned);
        // `AtomicU32` has the layout of `u32`, and every concurrent access to these
        // words goes through atomics.
        unsafe { &*(self.map.as_ptr().add(pos) as *const AtomicU32) }
    }

    /// `pos..pos+len` as shared bytes without copying; they keep the mapping alive.
    pub(crate) fn bytes(self: &Arc<Self>, pos: usize, len: usize) -> Bytes {
        assert!(
            pos + len <= self.size,
            "slice past the end of {:?}",
            self.path
        );
        Bytes::from_owner(MappedSlice {
            file: Arc::clone(self),
            pos,
            len,
        })
    }

    /// Last modification time of the file.
    pub(crate) fn modified(&self) -> Option<std::time::SystemTime> {
        std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()
    }

    /// Removes the file from disk; the mapping stays valid for outstanding readers.
    pub(crate) fn remove(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove", &self.path, e)),
        }
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("path", &self.path)
            .field("wrote", &self.wrote())
            .field("flushed", &self.flushed())
            .finish()
    }
}

/// Owner of a zero-copy [`Bytes`] over a mapped file.
struct MappedSlice {
    file: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl AsRef<[u8]> for MappedSlice {
    fn as_ref(&self) -> &[u8] {
        self.file.read(self.pos, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_twenty_digit_offsets() {
        assert_eq!(offset_file_name(1_073_741_824), "00000000001073741824");
        assert_eq!(
            parse_offset_file_name("00000000001073741824"),
            Some(1_073_741_824)
        );
        assert_eq!(parse_offset_file_name("0000000000107374182"), None);
        assert_eq!(parse_offset_file_name("0000000000107374182x"), None);
    }

    #[test]
    fn write_read_truncate_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let f = Arc::new(
            MappedFile::create_at(
                dir.path().join(offset_file_name(8192)),
                8192,
                3 * PAGE_SIZE,
                Prealloc::Chunked(4096),
            )
            .unwrap(),
        );
        f.reserve(5000).unwrap();
        unsafe { f.write_at(0, &[1u8; 5000]) };
        f.set_wrote(5000);
        assert_eq!(f.read(4999, 1), &[1]);
        let b = f.bytes(10, 4);
        assert_eq!(&b[..], &[1, 1, 1, 1]);
        assert_eq!(f.flush().unwrap(), 5000);
        unsafe { f.truncate_to(100).unwrap() };
        assert_eq!(f.wrote(), 100);
        assert_eq!(f.read(100, 4900), &vec![0u8; 4900][..]);
        assert_eq!(&b[..], &[1, 1, 1, 1], "a slice before the cut is unchanged");
        drop(f);
        let path = dir.path().join(offset_file_name(8192));
        let g =
            MappedFile::open(path, 8192, 3 * PAGE_SIZE, Prealloc::Stepped(3 * PAGE_SIZE)).unwrap();
        assert_eq!(g.read(0, 100), &[1u8; 100][..]);
        assert_eq!(g.read(100, 1), &[0]);
        assert!(MappedFile::open(
            dir.path().join(offset_file_name(8192)),
            8192,
            4096,
            Prealloc::Stepped(4096)
        )
        .is_err());
    }

    #[test]
    fn a_stepped_file_takes_blocks_a_step_at_a_time_and_maps_in_only_those() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(offset_file_name(0));
        let step = 16 * PAGE_SIZE;
        let f = MappedFile::create_at(path.clone(), 0, 64 * PAGE_SIZE, Prealloc::Stepped(step))
            .unwrap();
        let blocks = || std::fs::metadata(&path).unwrap().blocks() as usize * 512;
        assert_eq!(
            (f.reserved(), blocks()),
            (step, step),
            "the first step only"
        );
        // The pre-fault stops at the reserved blocks: nothing past them is allocated.
        f.prefault(0, 64 * PAGE_SIZE);
        assert_eq!(blocks(), step);
        f.reserve(step + 1).unwrap();
        assert_eq!((f.reserved(), blocks()), (2 * step, 2 * step));
        f.reserve(10).unwrap();
        assert_eq!(f.reserved(), 2 * step, "the mark never goes back");
        f.reserve(usize::MAX / 2).unwrap();
        assert_eq!((f.reserved(), blocks()), (64 * PAGE_SIZE, 64 * PAGE_SIZE));
    }

    /// Which of the pages `from..to` of `f`'s mapping have a page-table entry in this
    /// process (`/proc/self/pagemap`, bit 63).
    #[cfg(target_os = "linux")]
    fn mapped_pages(f: &MappedFile, from: usize, to: usize) -> Vec<bool> {
        use std::io::{Read, Seek, SeekFrom};
        let first = (f.map.as_ptr() as usize + from) / PAGE_SIZE;
        let mut pagemap = File::open("/proc/self/pagemap").unwrap();
        pagemap.seek(SeekFrom::Start(first as u64 * 8)).unwrap();
        let mut raw = vec![0u8; (to - from) / PAGE_SIZE * 8];
        pagemap.read_exact(&mut raw).unwrap();
        raw.chunks(8)
            .map(|e| u64::from_le_bytes(e.try_into().unwrap()) >> 63 == 1)
            .collect()
    }

    /// The commitlog's flush leaves no page-table entry behind the writer for the
    /// writeback to write-protect (and shoot down page by page); the page the writer
    /// is in stays mapped, and a reader afterwards finds the same bytes.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_flush_behind_the_writer_unmaps_the_pages_it_cleans() {
        let dir = tempfile::tempdir().unwrap();
        let size = 64 * PAGE_SIZE;
        let f = Arc::new(
            MappedFile::create_at(
                dir.path().join(offset_file_name(0)),
                0,
                size,
                Prealloc::Stepped(size),
            )
            .unwrap(),
        );
        let data: Vec<u8> = (0..20 * PAGE_SIZE + 100).map(|k| (k % 251) as u8).collect();
        unsafe { f.write_at(0, &data[..10 * PAGE_SIZE + 7]) };
        f.set_wrote(10 * PAGE_SIZE + 7);
        let kept = f.bytes(PAGE_SIZE, 64);
        assert!(mapped_pages(&f, 0, 11 * PAGE_SIZE).iter().all(|&m| m));
        assert_eq!(f.flush_behind_writer().unwrap(), 10 * PAGE_SIZE + 7);
        let after = mapped_pages(&f, 0, 11 * PAGE_SIZE);
        assert!(after[..10].iter().all(|&m| !m), "{after:?}");
        assert!(after[10], "the writer's page stays mapped");

        // The writer goes on in its page and past it; the next flush starts with the
        // page the last one left mapped.
        unsafe { f.write_at(10 * PAGE_SIZE + 7, &data[10 * PAGE_SIZE + 7..]) };
        f.set_wrote(data.len());
        f.flush_behind_writer().unwrap();
        let after = mapped_pages(&f, 0, 21 * PAGE_SIZE);
        assert!(after[..20].iter().all(|&m| !m), "{after:?}");
        assert!(after[20]);

        // Readers find the bytes, a slice taken before the flush included.
        assert_eq!(&kept[..], &data[PAGE_SIZE..PAGE_SIZE + 64]);
        assert_eq!(f.read(0, data.len()), &data[..]);
        drop(f);
        let g = MappedFile::open(
            dir.path().join(offset_file_name(0)),
            0,
            size,
            Prealloc::Stepped(size),
        )
        .unwrap();
        assert_eq!(g.read(0, data.len()), &data[..]);
    }

    /// A truncation may free the tail's blocks (a punched hole where the file system
    /// cannot zero a range in place): the reserved mark drops with it, so that the
    /// next write reserves them again instead of faulting on a full disk.
    #[test]
    fn a_truncated_stepped_file_reserves_its_tail_again() {
        let dir = tempfile::tempdir().unwrap();
        let step = 4 * PAGE_SIZE;
        let f = MappedFile::create_at(
            dir.path().join(offset_file_name(0)),
            0,
            16 * PAGE_SIZE,
            Prealloc::Stepped(step),
        )
        .unwrap();
        f.reserve(3 * step).unwrap();
        unsafe { f.write_at(0, &[7u8; 100]) };
        f.set_wrote(100);
        unsafe { f.truncate_to(10).unwrap() };
        assert_eq!(f.reserved(), PAGE_SIZE, "the mark is cut with the data");
        f.reserve(2 * step).unwrap();
        assert_eq!(f.reserved(), 2 * step);
    }

    /// The mappings (start, end, random read advised) of `/proc/self/smaps` that
    /// overlap `from..to`.
    #[cfg(target_os = "linux")]
    fn advised_ranges(from: usize, to: usize) -> Vec<(usize, usize, bool)> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut out = Vec::new();
        let mut current = None;
        for line in smaps.lines() {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                if let Some((start, end)) = current.take() {
                    out.push((start, end, flags.split_whitespace().any(|f| f == "rr")));
                }
            } else if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        current = (a < to && b > from).then_some((a, b));
                    }
                }
            }
        }
        out
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn read_ahead_is_off_past_the_written_part_until_turned_back_on() {
        let dir = tempfile::tempdir().unwrap();
        let f = MappedFile::create_at(
            dir.path().join(offset_file_name(0)),
            0,
            4 * PAGE_SIZE,
            Prealloc::Stepped(4 * PAGE_SIZE),
        )
        .unwrap();
        let start = f.map.as_ptr() as usize;
        let end = start + 4 * PAGE_SIZE;
        // A new file holds nothing to read ahead.
        assert_eq!(advised_ranges(start, end), vec![(start, end, true)]);

        // Written up to the middle of the second page: from that page on, no read-ahead.
        f.set_read_ahead(0, PAGE_SIZE + 100, true);
        f.set_read_ahead(PAGE_SIZE + 100, 4 * PAGE_SIZE, false);
        assert_eq!(
            advised_ranges(start, end),
            vec![
                (start, start + PAGE_SIZE, false),
                (start + PAGE_SIZE, end, true)
            ]
        );

        f.set_read_ahead(0, 4 * PAGE_SIZE, true);
        assert_eq!(advised_ranges(start, end), vec![(start, end, false)]);

        // A cut tail is empty again.
        // SAFETY: nothing else uses the file.
        unsafe { f.truncate_to(2 * PAGE_SIZE + 1).unwrap() };
        assert_eq!(
            advised_ranges(start, end),
            vec![
                (start, start + 2 * PAGE_SIZE, false),
                (start + 2 * PAGE_SIZE, end, true)
            ]
        );
    }
}
