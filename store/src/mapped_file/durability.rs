//! Making a mapped file's bytes durable, and cutting its tail: `msync` of a range,
//! the flushes of what was written (the commitlog's behind its writer, dropping the
//! mapping of the pages it cleans first), the truncation recovery uses, `fdatasync`
//! of the whole file and of a directory entry.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;

use memmap2::UncheckedAdvice;
use vostok_remoting::support::sync::MutexExt;

use super::{last_os_error_unless_unsupported, MappedFile, PAGE_SIZE};
use crate::error::{Result, StoreError};

impl MappedFile {
    /// Writes `from..to` to disk (msync of the covering pages).
    pub(crate) fn sync_range(&self, from: usize, to: usize) -> Result<()> {
        if to <= from {
            return Ok(());
        }
        let start = from - from % PAGE_SIZE;
        self.map
            .flush_range(start, to - start)
            .map_err(|e| StoreError::io("msync", &self.path, e))
    }

    /// Flushes everything written but not yet flushed; returns the new flushed position.
    pub(crate) fn flush(&self) -> Result<usize> {
        let wrote = self.wrote();
        let flushed = self.flushed();
        if wrote > flushed {
            self.sync_range(flushed, wrote)?;
            self.set_flushed(wrote);
        }
        Ok(wrote.max(flushed))
    }

    /// [`Self::flush`] for a file written front to back (the commitlog). It first drops
    /// the process's page-table entries for the whole pages below the write position
    /// that this flush cleans; the pages stay in the page cache, dirty ones dirty.
    /// Cleaning a page mapped writable write-protects it, with a TLB shoot-down to
    /// every other core that ran one of the process's threads: an interrupt per 4 KiB
    /// page, under a hypervisor a trap on both sides. Dropped first, the whole range
    /// costs one shoot-down, and a reader that comes later faults its pages back in,
    /// read-only (nothing to write-protect at the next flush). The page the writer is
    /// in stays mapped.
    pub(crate) fn flush_behind_writer(&self) -> Result<usize> {
        let wrote = self.wrote();
        let flushed = self.flushed();
        if wrote > flushed {
            let from = flushed - flushed % PAGE_SIZE;
            let to = wrote - wrote % PAGE_SIZE;
            if to > from {
                // SAFETY: on a shared file mapping MADV_DONTNEED only drops page-table
                // entries: the bytes stay in the page cache, and any later access (a
                // reader's slice of the mapping included) faults in the same bytes.
                // The writer writes only past `wrote`. A failure costs only speed.
                let _ = unsafe {
                    self.map
                        .unchecked_advise_range(UncheckedAdvice::DontNeed, from, to - from)
                };
            }
        }
        self.flush()
    }

    /// Zeroes `pos..size` and makes the zeros durable, then sets the write and flush
    /// positions to `pos` and turns read-ahead off for the empty tail. Used to cut a
    /// torn or stale tail during recovery.
    ///
    /// # Safety
    /// No reader or other writer may access the file during the call.
    pub(crate) unsafe fn truncate_to(&self, pos: usize) -> Result<()> {
        use std::os::fd::AsRawFd;
        assert!(pos <= self.size);
        let page_end = pos
            .div_ceil(PAGE_SIZE)
            .saturating_mul(PAGE_SIZE)
            .min(self.size);
        // SAFETY: in bounds; exclusive per the caller's contract.
        unsafe {
            std::ptr::write_bytes(self.map.as_mut_ptr().add(pos), 0, page_end - pos);
        }
        self.sync_range(pos, page_end)?;
        if page_end < self.size {
            // The tail's blocks may be freed below (a punched hole): no reservation
            // may claim them meanwhile.
            let _reserving = self.reserving.locked();
            let (off, len) = (
                page_end as libc::off_t,
                (self.size - page_end) as libc::off_t,
            );
            let zeroed = self
                .with_file(|file| {
                    for mode in [
                        libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    ] {
                        // SAFETY: plain system call on a descriptor we own.
                        let rc = unsafe { libc::fallocate(file.as_raw_fd(), mode, off, len) };
                        if rc == 0 {
                            return Ok(true);
                        }
                        if let Some(e) = last_os_error_unless_unsupported(rc) {
                            return Err(e);
                        }
                    }
                    Ok(false)
                })
                .map_err(|e| StoreError::io("zero the tail of", &self.path, e))?;
            if !zeroed {
                // SAFETY: in bounds; exclusive per the caller's contract.
                unsafe {
                    std::ptr::write_bytes(
                        self.map.as_mut_ptr().add(page_end),
                        0,
                        self.size - page_end,
                    );
                }
                self.sync_range(page_end, self.size)?;
            }
            self.with_file(|f| f.sync_data())
                .map_err(|e| StoreError::io("fdatasync", &self.path, e))?;
            // The tail's blocks may be gone (a punched hole, or a file system that
            // drops zeroed ranges): whatever the file's reservation mode, they are
            // reserved again before the next write there, so that a full disk
            // refuses that write instead of a page fault on it raising SIGBUS.
            if self.reserved.load(Ordering::Relaxed) > page_end {
                self.reserved.store(page_end, Ordering::Relaxed);
            }
        }
        self.set_read_ahead(pos, self.size, false);
        self.wrote.store(pos, Ordering::Release);
        self.flushed.store(pos, Ordering::Release);
        Ok(())
    }

    /// fdatasync of the whole file: after a crash of the previous process its dirty
    /// pages may still be only in the page cache.
    pub(crate) fn sync_file(&self) -> Result<()> {
        self.with_file(|f| f.sync_data())
            .map_err(|e| StoreError::io("fdatasync", &self.path, e))
    }
}

/// Makes a directory entry change (create, remove, rename) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io("fsync directory", dir, e))
}
