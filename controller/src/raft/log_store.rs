//! The Raft log on disk (docs/controller.md#raft): `raft/log` is a sequence of
//! records, each `[len: u32][crc32: u32][JSON entry]` (big-endian), appended and
//! fsynced before Raft hears the append is done; `raft/meta.json` holds the vote and
//! the last purged log id (written crash-safe with a `.bak`). At open, a torn or
//! corrupt tail is cut at the first bad record. Truncating (a new leader overwrote a
//! suffix) and purging (after a snapshot) rewrite the file under a temporary name
//! and rename it. The whole log lives in memory as well: the controller's log is
//! small (purged after every snapshot) and every read is served from there.
//! File I/O runs on the blocking pool.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    AnyError, Entry, LogId, LogState, RaftLogReader, StorageError, StorageIOError, Vote,
};
use serde::{Deserialize, Serialize};
use vostok_remoting::support::config_file;
use vostok_remoting::support::sync::MutexExt;

use super::types::TypeConfig;

type NodeId = u64;

/// Records larger than this are corrupt (the controller's commands are small).
const MAX_RECORD: usize = 16 * 1024 * 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Meta {
    vote: Option<Vote<NodeId>>,
    last_purged: Option<LogId<NodeId>>,
}

struct LogInner {
    dir: PathBuf,
    file: File,
    entries: BTreeMap<u64, Entry<TypeConfig>>,
    meta: Meta,
}

/// The log store; clones share it (the reader Raft asks for is a clone).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Mutex<LogInner>>,
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("log")
}

fn meta_path(dir: &Path) -> PathBuf {
    dir.join("meta.json")
}

fn encode(entry: &Entry<TypeConfig>, out: &mut Vec<u8>) -> io::Result<()> {
    let json = serde_json::to_vec(entry).map_err(io::Error::other)?;
    let len = u32::try_from(json.len()).map_err(io::Error::other)?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&json).to_be_bytes());
    out.extend_from_slice(&json);
    Ok(())
}

/// The good records of `bytes` and the length they take; the rest is a torn tail.
fn decode_all(bytes: &[u8]) -> (Vec<Entry<TypeConfig>>, usize) {
    let mut entries = Vec::new();
    let mut pos = 0;
    while bytes.len() - pos >= 8 {
        let len = u32::from_be_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]])
            as usize;
        let crc = u32::from_be_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]);
        if len > MAX_RECORD || bytes.len() - pos - 8 < len {
            break;
        }
        let body = &bytes[pos + 8..pos + 8 + len];
        if crc32fast::hash(body) != crc {
            break;
        }
        let Ok(entry) = serde_json::from_slice::<Entry<TypeConfig>>(body) else {
            break;
        };
        entries.push(entry);
        pos += 8 + len;
    }
    (entries, pos)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl LogInner {
    fn open(dir: &Path) -> io::Result<LogInner> {
        std::fs::create_dir_all(dir)?;
        let meta: Meta = config_file::load(&meta_path(dir), |b| serde_json::from_slice(b).ok())
            .unwrap_or_default();
        let path = log_path(dir);
        let mut bytes = Vec::new();
        if path.exists() {
            File::open(&path)?.read_to_end(&mut bytes)?;
        }
        let (records, good) = decode_all(&bytes);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)?;
        if good < bytes.len() {
            tracing::warn!(
                path = %path.display(),
                kept = good,
                cut = bytes.len() - good,
                "Raft log: cutting a torn tail"
            );
            file.set_len(good as u64)?;
            file.sync_all()?;
        }
        let purged = meta.last_purged.map_or(0, |l| l.index + 1);
        let mut entries = BTreeMap::new();
        for e in records {
            if e.log_id.index >= purged {
                // A later record of the same index (after a truncate that was not
                // rewritten) replaces the earlier one.
                entries.insert(e.log_id.index, e);
            }
        }
        Ok(LogInner {
            dir: dir.to_owned(),
            file,
            entries,
            meta,
        })
    }

    fn append(&mut self, batch: Vec<Entry<TypeConfig>>) -> io::Result<()> {
        let mut buf = Vec::new();
        for e in &batch {
            encode(e, &mut buf)?;
        }
        self.file.write_all(&buf)?;
        self.file.sync_data()?;
        for e in batch {
            self.entries.insert(e.log_id.index, e);
        }
        Ok(())
    }

    /// Writes the entries kept in memory as the whole file.
    fn rewrite(&mut self) -> io::Result<()> {
        let path = log_path(&self.dir);
        let tmp = self.dir.join("log.tmp");
        let mut buf = Vec::new();
        for e in self.entries.values() {
            encode(e, &mut buf)?;
        }
        let mut f = File::create(&tmp)?;
        f.write_all(&buf)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        sync_dir(&self.dir)?;
        self.file = OpenOptions::new().append(true).read(true).open(&path)?;
        Ok(())
    }

    fn save_meta(&self) -> io::Result<()> {
        let bytes = serde_json::to_vec(&self.meta).map_err(io::Error::other)?;
        config_file::persist(&meta_path(&self.dir), &bytes)
    }
}

fn write_err(e: &io::Error) -> StorageError<NodeId> {
    StorageIOError::write_logs(AnyError::new(e)).into()
}

impl LogStore {
    /// Opens (or creates) the log in `dir`.
    pub fn open(dir: &Path) -> io::Result<LogStore> {
        Ok(LogStore {
            inner: Arc::new(Mutex::new(LogInner::open(dir)?)),
        })
    }

    /// Runs `f` on the log on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut LogInner) -> io::Result<T> + Send + 'static,
    ) -> Result<T, StorageError<NodeId>> {
        let inner = self.inner.clone();
        match tokio::task::spawn_blocking(move || f(&mut inner.locked())).await {
            Ok(r) => r.map_err(|e| write_err(&e)),
            Err(e) => Err(write_err(&io::Error::other(e))),
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        let inner = self.inner.locked();
        Ok(inner.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        let inner = self.inner.locked();
        let last_purged = inner.meta.last_purged;
        let last = inner
            .entries
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(last_purged);
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        let vote = *vote;
        self.blocking(move |inner| {
            inner.meta.vote = Some(vote);
            inner.save_meta()
        })
        .await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        Ok(self.inner.locked().meta.vote)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let batch: Vec<_> = entries.into_iter().collect();
        let result = self.blocking(move |inner| inner.append(batch)).await;
        match &result {
            Ok(()) => callback.log_io_completed(Ok(())),
            Err(e) => callback.log_io_completed(Err(io::Error::other(e.to_string()))),
        }
        result
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.blocking(move |inner| {
            inner.entries.split_off(&log_id.index);
            inner.rewrite()
        })
        .await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.blocking(move |inner| {
            inner.meta.last_purged = Some(log_id);
            inner.save_meta()?;
            inner.entries = inner.entries.split_off(&(log_id.index + 1));
            inner.rewrite()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;

    fn entry(index: u64) -> Entry<TypeConfig> {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 0), index),
            payload: EntryPayload::Blank,
        }
    }

    #[test]
    fn entries_survive_a_reopen_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut inner = LogInner::open(dir.path()).unwrap();
        inner.append((1..=5).map(entry).collect()).unwrap();
        drop(inner);
        // Half a record at the end, as a crash mid-write leaves it.
        let mut f = OpenOptions::new()
            .append(true)
            .open(log_path(dir.path()))
            .unwrap();
        f.write_all(&[0, 0, 0, 40, 1, 2]).unwrap();
        drop(f);
        let mut inner = LogInner::open(dir.path()).unwrap();
        assert_eq!(
            inner.entries.keys().copied().collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5]
        );
        // Appends after the cut are readable again.
        inner.append(vec![entry(6)]).unwrap();
        drop(inner);
        let inner = LogInner::open(dir.path()).unwrap();
        assert_eq!(inner.entries.len(), 6);
    }

    #[test]
    fn truncate_and_purge_rewrite_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut inner = LogInner::open(dir.path()).unwrap();
        inner.append((1..=6).map(entry).collect()).unwrap();
        inner.entries.split_off(&5);
        inner.rewrite().unwrap();
        inner.meta.last_purged = Some(entry(2).log_id);
        inner.save_meta().unwrap();
        inner.entries = inner.entries.split_off(&3);
        inner.rewrite().unwrap();
        inner.append(vec![entry(5)]).unwrap();
        drop(inner);
        let inner = LogInner::open(dir.path()).unwrap();
        assert_eq!(
            inner.entries.keys().copied().collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
        assert_eq!(inner.meta.last_purged.map(|l| l.index), Some(2));
    }

    #[test]
    fn a_corrupt_record_ends_the_log() {
        let mut buf = Vec::new();
        encode(&entry(1), &mut buf).unwrap();
        let first = buf.len();
        encode(&entry(2), &mut buf).unwrap();
        let last = buf.len() - 1;
        buf[last] ^= 0xff;
        let (entries, good) = decode_all(&buf);
        assert_eq!(entries.len(), 1);
        assert_eq!(good, first);
    }
}
