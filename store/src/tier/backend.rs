//! Where tier objects live: a small blocking interface over the `object_store` crate
//! (S3-compatible stores, a local directory, memory), run on the tier's own runtime so
//! that callers on store threads, or on the broker's runtime, can wait for it.

use std::future::Future;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};

use super::config::{TierConfig, TierProvider};

/// Why a tier operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TierError {
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    #[error("object store: no answer within {0:?}")]
    Timeout(Duration),
    #[error("tier reads over their budget for {0:?}")]
    Busy(Duration),
    #[error("the tier is shut down")]
    Shutdown,
    #[error("tier {what}: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("tier {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The operations the tier needs from an object store. Blocking.
pub trait TierBackend: Send + Sync {
    /// Writes `data` as the object `key`, whole or not at all.
    fn put(&self, key: &str, data: &[u8]) -> Result<(), TierError>;
    /// The size of `key`, `None` if it does not exist.
    fn size(&self, key: &str) -> Result<Option<u64>, TierError>;
    /// The whole object `key`.
    fn get(&self, key: &str) -> Result<Bytes, TierError>;
    /// Bytes `range` of `key`.
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, TierError>;
    /// Deletes `key`; deleting a missing object is not an error.
    fn delete(&self, key: &str) -> Result<(), TierError>;
    /// Every object under the folder `dir` (`commitlog`, `index`): its key, as given to
    /// [`TierBackend::put`], and size. More than `max` objects is an error.
    fn list(&self, dir: &str, max: usize) -> Result<Vec<(String, u64)>, TierError>;
    /// A description for logs: kind and place, never credentials.
    fn describe(&self) -> String;
    /// The store is shutting down: operations waited for now, and later ones, give up
    /// with [`TierError::Shutdown`] instead of holding the shutdown up.
    fn stop(&self) {}
}

/// How often a wait for the object store checks for a shutdown.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Parts above this size are uploaded in parts of this size (S3's minimum is 5 MiB).
const PART_SIZE: usize = 8 * 1024 * 1024;

/// Objects asked of the store in one request (S3 answers at most 1,000 per page).
const LIST_PAGE: usize = 1000;

/// A [`TierBackend`] over an `object_store::ObjectStore`.
pub struct ObjectBackend {
    store: Arc<dyn ObjectStore>,
    runtime: Option<tokio::runtime::Runtime>,
    timeout: Duration,
    read_timeout: Duration,
    prefix: String,
    description: String,
    /// The file-system provider's root: objects are fsynced there after a put.
    fs_root: Option<PathBuf>,
    /// Set by [`TierBackend::stop`].
    stopped: AtomicBool,
}

impl ObjectBackend {
    /// Builds the backend the configuration names. S3 settings not given as keys come
    /// from the usual `AWS_*` environment variables.
    pub fn from_config(c: &TierConfig) -> Result<Self, TierError> {
        let (store, description, fs_root): (Arc<dyn ObjectStore>, String, Option<PathBuf>) =
            match c.provider {
                TierProvider::Memory => (
                    Arc::new(object_store::memory::InMemory::new()),
                    "memory".to_owned(),
                    None,
                ),
                TierProvider::FileSystem => {
                    std::fs::create_dir_all(&c.file_path).map_err(|source| TierError::Io {
                        op: "create directory",
                        path: c.file_path.clone(),
                        source,
                    })?;
                    remove_staged_uploads(&c.file_path);
                    let fs = object_store::local::LocalFileSystem::new_with_prefix(&c.file_path)?
                        .with_automatic_cleanup(true);
                    (
                        Arc::new(fs),
                        format!("file system {}", c.file_path.display()),
                        Some(c.file_path.clone()),
                    )
                }
                TierProvider::S3 => {
                    use object_store::aws::AmazonS3Builder;
                    let mut b = AmazonS3Builder::from_env();
                    if !c.bucket.is_empty() {
                        b = b.with_bucket_name(&c.bucket);
                    }
                    if !c.region.is_empty() {
                        b = b.with_region(&c.region);
                    }
                    if !c.endpoint.is_empty() {
                        b = b
                            .with_endpoint(&c.endpoint)
                            .with_allow_http(c.endpoint.starts_with("http://"));
                    }
                    if !c.access_key.is_empty() {
                        b = b.with_access_key_id(&c.access_key);
                    }
                    if !c.secret_key.is_empty() {
                        b = b.with_secret_access_key(&c.secret_key);
                    }
                    let retry = object_store::RetryConfig {
                        max_retries: 3,
                        retry_timeout: c.op_timeout,
                        ..Default::default()
                    };
                    let s3 = b.with_retry(retry).build()?;
                    let endpoint = if c.endpoint.is_empty() {
                        std::env::var("AWS_ENDPOINT").unwrap_or_else(|_| "AWS".to_owned())
                    } else {
                        c.endpoint.clone()
                    };
                    (
                        Arc::new(s3),
                        format!("S3 {endpoint} bucket {}", c.bucket),
                        None,
                    )
                }
            };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("store-tier-io")
            .enable_all()
            .build()
            .map_err(|source| TierError::Io {
                op: "start runtime",
                path: PathBuf::new(),
                source,
            })?;
        let prefix = if c.path_prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", c.path_prefix)
        };
        Ok(ObjectBackend {
            store,
            runtime: Some(runtime),
            timeout: c.op_timeout,
            read_timeout: c.read_timeout,
            prefix,
            description,
            fs_root,
            stopped: AtomicBool::new(false),
        })
    }

    fn path(&self, key: &str) -> ObjectPath {
        ObjectPath::from(format!("{}{key}", self.prefix))
    }

    /// Runs `f` on the tier's runtime and waits for it, at most the operation timeout.
    fn run<T, F>(&self, f: F) -> Result<T, TierError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, TierError>> + Send + 'static,
    {
        self.run_within(self.timeout, f)
    }

    fn run_within<T, F>(&self, timeout: Duration, f: F) -> Result<T, TierError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, TierError>> + Send + 'static,
    {
        let runtime = self.runtime.as_ref().ok_or(TierError::Shutdown)?;
        if self.stopped.load(Ordering::Acquire) {
            return Err(TierError::Shutdown);
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let task = runtime.spawn(async move {
            let r = match tokio::time::timeout(timeout, f).await {
                Ok(r) => r,
                Err(_) => Err(TierError::Timeout(timeout)),
            };
            let _ = tx.send(r);
        });
        // Woken every so often to notice a shutdown.
        loop {
            match rx.recv_timeout(STOP_CHECK) {
                Ok(r) => return r,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.stopped.load(Ordering::Acquire) {
                        task.abort();
                        return Err(TierError::Shutdown);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(TierError::Shutdown)
                }
            }
        }
    }

    /// Makes a file-system object durable: the file, then its directory.
    fn sync_fs(&self, key: &str) -> Result<(), TierError> {
        let Some(root) = &self.fs_root else {
            return Ok(());
        };
        let file = root.join(format!("{}{key}", self.prefix));
        let io = |op, path: &std::path::Path, source| TierError::Io {
            op,
            path: path.to_path_buf(),
            source,
        };
        std::fs::File::open(&file)
            .and_then(|f| f.sync_all())
            .map_err(|e| io("fsync", &file, e))?;
        if let Some(dir) = file.parent() {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io("fsync", dir, e))?;
        }
        Ok(())
    }
}

/// Deletes what a process killed in the middle of a write to a file-system tier left:
/// the object-store crate writes each object to `<name>#<n>` beside it and renames it
/// when whole, so such a file is never an object and is never listed, only kept. A
/// broker is the only writer of its tier directory, so at its start none is in use.
fn remove_staged_uploads(root: &Path) {
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() && is_staged_upload(&entry.file_name()) => {
                    match std::fs::remove_file(&path) {
                        Ok(()) => tracing::warn!(
                            path = %path.display(),
                            "removed a tier object left half-written by a killed process"
                        ),
                        Err(e) => tracing::warn!(
                            path = %path.display(),
                            error = %e,
                            "could not remove a half-written tier object"
                        ),
                    }
                }
                _ => {}
            }
        }
    }
}

/// `<name>#<digits>`: an object being written, as the object-store crate names it.
fn is_staged_upload(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    match name.rsplit_once('#') {
        Some((_, n)) => !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()),
        None => false,
    }
}

impl TierBackend for ObjectBackend {
    fn put(&self, key: &str, data: &[u8]) -> Result<(), TierError> {
        let path = self.path(key);
        let store = Arc::clone(&self.store);
        if data.len() <= PART_SIZE {
            let payload = PutPayload::from(Bytes::copy_from_slice(data));
            self.run(async move {
                store.put(&path, payload).await?;
                Ok(())
            })?;
        } else {
            let mut upload = {
                let store = Arc::clone(&store);
                let path = path.clone();
                self.run(async move { Ok(store.put_multipart(&path).await?) })?
            };
            for chunk in data.chunks(PART_SIZE) {
                let part = upload.put_part(PutPayload::from(Bytes::copy_from_slice(chunk)));
                if let Err(e) = self.run(async move { Ok(part.await?) }) {
                    let _ = self.run(async move { Ok(upload.abort().await?) });
                    return Err(e);
                }
            }
            self.run(async move {
                upload.complete().await?;
                Ok(())
            })?;
        }
        self.sync_fs(key)
    }

    fn size(&self, key: &str) -> Result<Option<u64>, TierError> {
        let path = self.path(key);
        let store = Arc::clone(&self.store);
        self.run(async move {
            match store.head(&path).await {
                Ok(meta) => Ok(Some(meta.size)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }

    fn get(&self, key: &str) -> Result<Bytes, TierError> {
        let path = self.path(key);
        let store = Arc::clone(&self.store);
        self.run_within(self.read_timeout, async move {
            Ok(store.get(&path).await?.bytes().await?)
        })
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, TierError> {
        let path = self.path(key);
        let store = Arc::clone(&self.store);
        self.run_within(self.read_timeout, async move {
            Ok(store.get_range(&path, range).await?)
        })
    }

    fn delete(&self, key: &str) -> Result<(), TierError> {
        let path = self.path(key);
        let store = Arc::clone(&self.store);
        self.run(async move {
            match store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            }
        })
    }

    fn list(&self, dir: &str, max: usize) -> Result<Vec<(String, u64)>, TierError> {
        use futures_util::StreamExt;
        let mut stream = Some(self.store.list(Some(&self.path(dir))));
        let mut out = Vec::new();
        // A page per wait, so that each has the operation timeout, however many pages.
        while let Some(mut s) = stream.take() {
            let (rest, page) = self.run(async move {
                let mut page = Vec::with_capacity(LIST_PAGE);
                while page.len() < LIST_PAGE {
                    match s.next().await {
                        Some(meta) => page.push(meta?),
                        None => return Ok((None, page)),
                    }
                }
                Ok((Some(s), page))
            })?;
            for meta in page {
                let key = meta.location.as_ref();
                let Some(key) = key.strip_prefix(self.prefix.as_str()) else {
                    continue;
                };
                if out.len() == max {
                    return Err(TierError::Corrupt {
                        what: self.path(dir).to_string(),
                        reason: format!("more than {max} objects"),
                    });
                }
                out.push((key.to_owned(), meta.size));
            }
            stream = rest;
        }
        Ok(out)
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }
}

impl Drop for ObjectBackend {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which is refused inside another
        // runtime (the broker's); the tier's tasks are abandoned instead.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_written_objects_of_a_killed_process_are_removed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let commitlog = dir.path().join("commitlog");
        std::fs::create_dir_all(&commitlog).unwrap();
        let kept = ["00000000000000000000", "a#b", "name#"];
        for name in kept.iter().chain(&["00000000000000065536#1", "x#12"]) {
            std::fs::write(commitlog.join(name), b"data").unwrap();
        }
        remove_staged_uploads(dir.path());
        let mut left: Vec<String> = std::fs::read_dir(&commitlog)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut kept: Vec<String> = kept.iter().map(|s| s.to_string()).collect();
        kept.sort();
        assert_eq!(left, kept);
    }
}
