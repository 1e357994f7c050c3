//! An ordered run of equally sized mapped files covering one offset space
//! (RocketMQ `MappedFileQueue`): the commitlog, or one consume queue.
//!
//! Files are contiguous: file *k* starts where file *k − 1* ends. Old files are
//! removed from the front, new ones appended at the back; the list sits behind a
//! `RwLock` held only to clone an `Arc`, so readers never wait for I/O.
//!
//! The next file may be created ahead of time (RocketMQ `AllocateMappedFileService`)
//! and kept aside as the *ready* file: on disk, but not in the list, so readers,
//! retention and recovery bookkeeping do not see it. The writer that reaches its
//! start takes it with [`MappedFileQueue::take_ready`], which does no I/O.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use crate::error::{Result, StoreError};
use crate::mapped_file::{parse_offset_file_name, sync_dir, MappedFile, Prealloc};

pub(crate) struct MappedFileQueue {
    dir: PathBuf,
    file_size: usize,
    prealloc: Prealloc,
    files: RwLock<Vec<Arc<MappedFile>>>,
    /// The next file, created ahead of the writer and not yet in `files`. Locked
    /// before `files` when both are taken.
    ready: Mutex<Option<Arc<MappedFile>>>,
    /// A file was created by [`MappedFileQueue::create`] and the directory not synced
    /// since: [`MappedFileQueue::flush`] syncs it first.
    dir_unsynced: AtomicBool,
}

impl MappedFileQueue {
    /// Loads the files of `dir` (created if missing). Names that are not 20-digit
    /// offsets are ignored; a gap between files or a misaligned name is an error.
    pub(crate) fn load(dir: &Path, file_size: usize, prealloc: Prealloc) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("create directory", dir, e))?;
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| StoreError::io("list", dir, e))? {
            let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
            let name = entry.file_name();
            match name.to_str().and_then(parse_offset_file_name) {
                Some(base) => found.push((base, entry.path())),
                None => {
                    tracing::warn!(path = %entry.path().display(), "ignoring a file that is not a store file")
                }
            }
        }
        found.sort();
        let mut files: Vec<Arc<MappedFile>> = Vec::with_capacity(found.len());
        for (base, path) in found {
            if let Some(prev) = files.last() {
                if base != prev.end() {
                    return Err(StoreError::FileGap {
                        path,
                        expected: prev.end(),
                    });
                }
            } else if base % file_size as i64 != 0 {
                return Err(StoreError::FileGap {
                    path,
                    expected: base - base % file_size as i64,
                });
            }
            let file = MappedFile::open(path, base, file_size, prealloc)?;
            // Until recovery says otherwise, loaded files count as fully written.
            file.set_wrote(file_size);
            file.set_flushed(file_size);
            files.push(Arc::new(file));
        }
        Ok(MappedFileQueue {
            dir: dir.to_path_buf(),
            file_size,
            prealloc,
            files: RwLock::new(files),
            ready: Mutex::new(None),
            dir_unsynced: AtomicBool::new(false),
        })
    }

    pub(crate) fn file_size(&self) -> usize {
        self.file_size
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<Arc<MappedFile>>> {
        // A panic while holding the lock cannot leave the Vec inconsistent.
        self.files.read_locked()
    }

    fn write(&self) -> RwLockWriteGuard<'_, Vec<Arc<MappedFile>>> {
        self.files.write_locked()
    }

    /// A snapshot of the file list.
    pub(crate) fn files(&self) -> Vec<Arc<MappedFile>> {
        self.read().clone()
    }

    pub(crate) fn len(&self) -> usize {
        self.read().len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    pub(crate) fn first(&self) -> Option<Arc<MappedFile>> {
        self.read().first().cloned()
    }

    pub(crate) fn last(&self) -> Option<Arc<MappedFile>> {
        self.read().last().cloned()
    }

    /// Start of the first file (0 when empty).
    pub(crate) fn min_offset(&self) -> i64 {
        self.read().first().map_or(0, |f| f.base())
    }

    /// The file holding `offset`.
    pub(crate) fn find(&self, offset: i64) -> Option<Arc<MappedFile>> {
        let files = self.read();
        let first = files.first()?;
        if offset < first.base() {
            return None;
        }
        let index = ((offset - first.base()) / self.file_size as i64) as usize;
        files.get(index).cloned()
    }

    /// Start offset of the file that holds `offset`.
    pub(crate) fn file_base(&self, offset: i64) -> i64 {
        offset - offset.rem_euclid(self.file_size as i64)
    }

    /// Creates and appends the file starting at `base`, which must follow the last
    /// file (or be aligned, for the first one).
    /// The file is created before the list is locked, so that readers never wait
    /// for its I/O; each queue has one writer, which is the only one to call this.
    /// The directory is synced by the next [`MappedFileQueue::flush`], not here: the
    /// writer is the dispatcher, and a directory fsync per new consume-queue file held
    /// it for seconds when a topic's many queues started at once (docs/store.md).
    ///
    /// The file it follows is complete from then on: it gets read-ahead back for its
    /// readers (a new file starts without, [`MappedFile::set_read_ahead`]).
    pub(crate) fn create(&self, base: i64) -> Result<Arc<MappedFile>> {
        let last = self.last();
        if let Some(last) = &last {
            assert_eq!(base, last.end(), "new store file must follow the last one");
        }
        let file = self.create_file(base)?;
        self.dir_unsynced.store(true, Ordering::Release);
        self.write().push(Arc::clone(&file));
        if let Some(last) = last {
            last.set_read_ahead(0, last.size(), true);
        }
        Ok(file)
    }

    fn create_file(&self, base: i64) -> Result<Arc<MappedFile>> {
        debug_assert_eq!(base % self.file_size as i64, 0);
        let path = self.dir.join(crate::mapped_file::offset_file_name(base));
        if path.exists() {
            // A leftover from a crash between creation and recovery bookkeeping.
            std::fs::remove_file(&path).map_err(|e| StoreError::io("remove", &path, e))?;
        }
        Ok(Arc::new(MappedFile::create_at(
            path,
            base,
            self.file_size,
            self.prealloc,
        )?))
    }

    /// Creates the file starting at `base` on disk, durably, without adding it to
    /// the list: the allocation thread's half of [`MappedFileQueue::take_ready`].
    pub(crate) fn create_ready(&self, base: i64) -> Result<Arc<MappedFile>> {
        let file = self.create_file(base)?;
        if let Err(e) = sync_dir(&self.dir) {
            let _ = file.remove();
            return Err(e);
        }
        Ok(file)
    }

    /// Start of the ready file, if there is one.
    pub(crate) fn ready_base(&self) -> Option<i64> {
        self.ready.locked().as_ref().map(|f| f.base())
    }

    /// Keeps `file` (from [`MappedFileQueue::create_ready`]) as the ready file; one
    /// kept before is removed from disk.
    pub(crate) fn set_ready(&self, file: Arc<MappedFile>) -> Result<()> {
        let old = self.ready.locked().replace(file);
        match old {
            Some(old) => old.remove(),
            None => Ok(()),
        }
    }

    /// Appends the ready file if it starts at `base` and follows the last file. No
    /// I/O: this is what the writer does under its lock.
    pub(crate) fn take_ready(&self, base: i64) -> Option<Arc<MappedFile>> {
        let mut ready = self.ready.locked();
        if ready.as_ref().map(|f| f.base()) != Some(base) {
            return None;
        }
        let mut files = self.write();
        if files.last().is_some_and(|last| last.end() != base) {
            return None;
        }
        let file = ready.take()?;
        files.push(Arc::clone(&file));
        Some(file)
    }

    /// Removes the ready file from disk (shutdown, or one that no longer follows).
    pub(crate) fn discard_ready(&self) -> Result<()> {
        let old = self.ready.locked().take();
        match old {
            Some(old) => old.remove(),
            None => Ok(()),
        }
    }

    /// Removes every file starting at or after `offset` (recovery of a torn tail).
    pub(crate) fn remove_from(&self, offset: i64) -> Result<()> {
        let mut files = self.write();
        while files.last().is_some_and(|f| f.base() >= offset) {
            if let Some(f) = files.pop() {
                tracing::info!(path = %f.path().display(), "removing a file past the recovered end");
                f.remove()?;
            }
        }
        drop(files);
        sync_dir(&self.dir)
    }

    /// Removes the first `n` files from the list and from disk.
    pub(crate) fn remove_first(&self, n: usize) -> Result<Vec<Arc<MappedFile>>> {
        let removed: Vec<_> = {
            let mut files = self.write();
            let n = n.min(files.len());
            files.drain(..n).collect()
        };
        for f in &removed {
            f.remove()?;
        }
        if !removed.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(removed)
    }

    /// Flushes every file with unflushed data, after the directory when a file was
    /// created since the last flush.
    pub(crate) fn flush(&self) -> Result<()> {
        self.sync_dir_if_needed()?;
        for f in self.files() {
            if f.wrote() > f.flushed() {
                f.flush()?;
            }
        }
        Ok(())
    }

    fn sync_dir_if_needed(&self) -> Result<()> {
        if self.dir_unsynced.swap(false, Ordering::AcqRel) {
            if let Err(e) = sync_dir(&self.dir) {
                self.dir_unsynced.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }

    /// fdatasync of every file starting at or after `from` (and of the directory when
    /// a file was created since it was last synced).
    pub(crate) fn sync_files_from(&self, from: i64) -> Result<()> {
        self.sync_dir_if_needed()?;
        for f in self.files() {
            if f.end() > from {
                f.sync_file()?;
            }
        }
        Ok(())
    }

    /// Removes every file and the directory itself.
    pub(crate) fn destroy(&self) -> Result<()> {
        self.discard_ready()?;
        let n = self.len();
        self.remove_first(n)?;
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove directory", &self.dir, e)),
        }
    }
}
