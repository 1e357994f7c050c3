//! Crash-safe JSON config files (`topics.json`, `consumerOffset.json`, `kvConfig.json`, ...),
//! kept as RocketMQ keeps them: the previous version survives as `<file>.bak`, and
//! loading falls back to it when the main file is missing or unreadable.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::support::sync::MutexExt;

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `content` to `path` so that a crash at any moment leaves either the old or the
/// new file (plus the old one as `.bak`): write a temp file, fsync it, copy the current
/// file to `.bak`, rename the temp file over the original, fsync the directory.
///
/// Each call uses its own temp file, so concurrent calls cannot write into each other's;
/// callers that snapshot state concurrently should go through [`ConfigFile`], which also
/// orders the snapshots.
pub fn persist(path: &Path, content: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let tmp = with_suffix(
        path,
        &format!(
            ".tmp.{}.{}",
            std::process::id(),
            TMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ),
    );
    {
        let mut file = File::create(&tmp)?;
        file.write_all(content)?;
        file.sync_all()?;
    }
    if path.exists() {
        let bak = with_suffix(path, ".bak");
        fs::copy(path, &bak)?;
        File::open(&bak)?.sync_all()?;
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Some(dir) = path.parent() {
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// One config file with one writer at a time: the snapshot is taken under the same lock
/// as the write, so a newer snapshot can never be overwritten by an older one.
///
/// Tables that change on requests mark the file dirty ([`ConfigFile::mark_dirty`]) and
/// a writer persists it later ([`ConfigFile::persist_if_dirty`]): any number of changes
/// cost one write, so a request that changes many entries cannot cause many writes.
pub struct ConfigFile {
    path: PathBuf,
    lock: Mutex<()>,
    dirty: AtomicBool,
}

impl ConfigFile {
    pub fn new(path: PathBuf) -> Self {
        ConfigFile {
            path,
            lock: Mutex::new(()),
            dirty: AtomicBool::new(false),
        }
    }

    /// Records that the state behind this file changed and needs writing.
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    /// Writes `snapshot()` if the file was marked dirty since the last write; true when
    /// it wrote. The mark is cleared before the snapshot is taken, so a change made
    /// during the write marks the file again; a failed write leaves it marked.
    pub fn persist_if_dirty(&self, snapshot: impl FnOnce() -> Vec<u8>) -> io::Result<bool> {
        let _writer = self.lock.locked();
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(false);
        }
        persist(&self.path, &snapshot()).inspect_err(|_| self.mark_dirty())?;
        Ok(true)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes `snapshot()` and writes it, serialised with every other write of this file.
    pub fn persist_with(&self, snapshot: impl FnOnce() -> Vec<u8>) -> io::Result<()> {
        let _writer = self.lock.locked();
        self.dirty.store(false, Ordering::Release);
        persist(&self.path, &snapshot()).inspect_err(|_| self.mark_dirty())
    }

    /// [`load`] of this file.
    pub fn load<T>(&self, parse: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
        load(&self.path, parse)
    }
}

/// Reads `path`, or `<path>.bak` when `path` is missing or `parse` rejects it. `None` when
/// neither yields a value (a first start).
pub fn load<T>(path: &Path, mut parse: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
    for candidate in [path.to_path_buf(), with_suffix(path, ".bak")] {
        match fs::read(&candidate) {
            Ok(bytes) => match parse(&bytes) {
                Some(value) => return Some(value),
                None => {
                    tracing::warn!(file = %candidate.display(), "config file unreadable; trying its backup")
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(file = %candidate.display(), error = %e, "cannot read config file")
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "vostok-config-file-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn concurrent_writers_never_tear_the_file() {
        let dir = temp_dir();
        let file = std::sync::Arc::new(ConfigFile::new(dir.join("topics.json")));
        let counter = std::sync::Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let file = file.clone();
                let counter = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        file.persist_with(|| {
                            let n = counter.fetch_add(1, Ordering::SeqCst);
                            // Lengths differ per writer, so a torn write would not parse.
                            serde_json::to_vec(&vec![n; (t + 1) * 10]).unwrap()
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let last: Vec<u64> = file
            .load(|b| serde_json::from_slice(b).ok())
            .expect("a whole file");
        assert!(
            last.iter().all(|n| *n == 199),
            "the newest snapshot is on disk: {last:?}"
        );
        let leftovers = fs::read_dir(&dir).unwrap().filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".tmp")
        });
        assert_eq!(leftovers.count(), 0);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn many_changes_cost_one_write() {
        let dir = temp_dir();
        let file = ConfigFile::new(dir.join("groups.json"));
        let mut writes = 0;
        assert!(!file.persist_if_dirty(|| unreachable!()).unwrap());
        for n in 0..100u32 {
            file.mark_dirty();
            let _ = n;
        }
        assert!(file
            .persist_if_dirty(|| {
                writes += 1;
                b"100".to_vec()
            })
            .unwrap());
        assert!(!file.persist_if_dirty(|| unreachable!()).unwrap());
        assert_eq!(writes, 1);
        assert_eq!(fs::read(file.path()).unwrap(), b"100");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn keeps_a_backup_and_falls_back_to_it() {
        let dir = temp_dir();
        let path = dir.join("config").join("topics.json");
        let parse = |b: &[u8]| serde_json::from_slice::<u32>(b).ok();
        assert_eq!(load(&path, parse), None);
        persist(&path, b"1").unwrap();
        persist(&path, b"2").unwrap();
        assert_eq!(load(&path, parse), Some(2));
        assert_eq!(fs::read(with_suffix(&path, ".bak")).unwrap(), b"1");
        fs::write(&path, b"{torn").unwrap();
        assert_eq!(load(&path, parse), Some(1), "falls back to .bak");
        fs::remove_file(&path).unwrap();
        assert_eq!(load(&path, parse), Some(1));
        fs::remove_dir_all(dir).unwrap();
    }
}
