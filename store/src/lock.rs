//! The `lock` file (one store per directory) and the `abort` marker
//! (docs/store.md#abort-and-lock-files).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::mapped_file::sync_dir;

/// An exclusive `flock` on `<root>/lock`, held for the store's lifetime. `flock`
/// locks belong to the open file, so a second store in the same process is refused
/// too.
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: File,
}

impl StoreLock {
    pub(crate) fn acquire(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io("open", path, e))?;
        // SAFETY: plain system call on a descriptor we own.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return Err(if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                StoreError::Locked {
                    path: path.to_path_buf(),
                }
            } else {
                StoreError::io("lock", path, err)
            });
        }
        Ok(StoreLock { _file: file })
    }
}

/// The abort marker: present while a store runs, so its presence at start-up means
/// the previous run did not shut down cleanly.
#[derive(Debug)]
pub(crate) struct AbortFile {
    path: PathBuf,
}

impl AbortFile {
    pub(crate) fn new(path: PathBuf) -> Self {
        AbortFile { path }
    }

    pub(crate) fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Creates the marker (with the pid, as 5.x does) durably.
    pub(crate) fn create(&self) -> Result<()> {
        let mut f =
            File::create(&self.path).map_err(|e| StoreError::io("create", &self.path, e))?;
        write!(f, "{}", std::process::id())
            .and_then(|()| f.sync_all())
            .map_err(|e| StoreError::io("write", &self.path, e))?;
        self.sync_parent()
    }

    pub(crate) fn remove(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => self.sync_parent(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("remove", &self.path, e)),
        }
    }

    fn sync_parent(&self) -> Result<()> {
        match self.path.parent() {
            Some(dir) => sync_dir(dir),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_on_the_same_file_fails() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = StoreLock::acquire(&path).unwrap();
        assert!(matches!(
            StoreLock::acquire(&path),
            Err(StoreError::Locked { .. })
        ));
        drop(first);
        StoreLock::acquire(&path).unwrap();
    }
}
