//! Index files: find messages by key (RocketMQ `IndexService`, docs/store.md#index-file).
//!
//! Files live in `index/`, named by their creation time `yyyyMMddHHmmssSSS` (local
//! time). The dispatcher adds `topic#UNIQ_KEY` and `topic#key` for every
//! space-separated `KEYS` value of each record except rollback records; a new file
//! starts when the current one holds `maxIndexNum` entries. A query walks the files
//! whose time range overlaps the request, newest first.

mod file;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use vostok_remoting::protocol::message::property::KEY_SEPARATOR;
use vostok_remoting::protocol::message::sysflag::{transaction_type, TRANSACTION_ROLLBACK_TYPE};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::LocalTime;

use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::mapped_file::sync_dir;
pub(crate) use file::IndexFlush;
use file::{key_hash, IndexFile};

struct IndexWriter {
    /// Reused buffer for `topic#key`.
    key: String,
    /// Commitlog offset of the newest indexed record; records at or before it are
    /// already in the index (re-dispatch after a restart skips them).
    last_indexed_phy: Option<i64>,
}

/// Result of a key lookup.
#[derive(Debug, Default)]
pub(crate) struct IndexQuery {
    pub(crate) phy_offsets: Vec<i64>,
    pub(crate) last_update_timestamp: i64,
    pub(crate) last_update_phy_offset: i64,
}

pub(crate) struct IndexService {
    dir: PathBuf,
    slots: u32,
    max_index: u32,
    files: RwLock<Vec<Arc<IndexFile>>>,
    writer: Mutex<IndexWriter>,
    /// Set once keeping a slot table in memory was refused (warned about once).
    resident_refused: AtomicBool,
}

/// `yyyyMMddHHmmssSSS` in local time.
pub(crate) fn local_time_name(ms: i64) -> String {
    LocalTime::of_millis(ms).map_or_else(|| format!("{ms:017}"), |t| t.compact_millis())
}

impl IndexService {
    /// Loads the index files. After a crash (`last_exit_ok` false) the newest file is
    /// repaired: entries past its flushed header are dropped and its slots rebuilt.
    pub(crate) fn load(config: &StoreConfig, last_exit_ok: bool) -> Result<Self> {
        let dir = config.index_dir();
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io("create directory", &dir, e))?;
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| StoreError::io("list", &dir, e))? {
            let entry = entry.map_err(|e| StoreError::io("list", &dir, e))?;
            let name = entry.file_name();
            match name.to_str() {
                Some(n) if n.len() == 17 && n.bytes().all(|b| b.is_ascii_digit()) => {
                    names.push(entry.path())
                }
                _ => {
                    tracing::warn!(path = %entry.path().display(), "ignoring a file that is not an index file")
                }
            }
        }
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        for path in names {
            files.push(Arc::new(IndexFile::open(
                path,
                config.max_hash_slot_num,
                config.max_index_num,
            )?));
        }
        if !last_exit_ok {
            if let Some(last) = files.last() {
                tracing::info!(path = %last.path().display(), entries = last.index_count() - 1, "repairing the newest index file");
                last.rebuild_after_crash()?;
            }
        }
        let last_indexed_phy = files
            .iter()
            .filter(|f| f.index_count() > 1)
            .map(|f| f.end_phy_offset())
            .max();
        let service = IndexService {
            dir,
            slots: config.max_hash_slot_num,
            max_index: config.max_index_num,
            files: RwLock::new(files),
            writer: Mutex::new(IndexWriter {
                key: String::new(),
                last_indexed_phy,
            }),
            resident_refused: AtomicBool::new(false),
        };
        if let Some(newest) = service.files().last() {
            service.keep_slots_resident(newest);
        }
        Ok(service)
    }

    /// Keeps the slot table of the file that takes new entries in memory
    /// ([`IndexFile::keep_slots_resident`]); without the permission, warns once for
    /// this store and goes on as before.
    fn keep_slots_resident(&self, file: &IndexFile) {
        if let Err(e) = file.keep_slots_resident() {
            if !self.resident_refused.swap(true, Ordering::Relaxed) {
                let bytes = IndexFile::file_size(self.slots, 0);
                tracing::warn!(
                    error = %e,
                    path = %file.path().display(),
                    bytes,
                    "cannot keep the index's slot table in memory: under memory pressure the kernel may evict it, and dispatching a message then waits for a disk read; let the broker lock that many bytes (ulimit -l {} in KiB, systemd LimitMEMLOCK=, docker --ulimit memlock=, or CAP_IPC_LOCK) or lower maxHashSlotNum",
                    bytes.div_ceil(1024)
                );
            }
        }
    }

    fn files(&self) -> Vec<Arc<IndexFile>> {
        self.files.read_locked().clone()
    }

    pub(crate) fn last_indexed_phy(&self) -> Option<i64> {
        self.writer.locked().last_indexed_phy
    }

    /// Indexes one record (dispatcher) under its `KEYS` values and `UNIQ_KEY`.
    pub(crate) fn build(
        &self,
        topic: &str,
        sys_flag: i32,
        keys: Option<&str>,
        uniq: Option<&str>,
        phy_offset: i64,
        store_timestamp: i64,
    ) -> Result<()> {
        if transaction_type(sys_flag) == TRANSACTION_ROLLBACK_TYPE {
            return Ok(());
        }
        let uniq = uniq.filter(|k| !k.is_empty());
        if uniq.is_none() && keys.is_none_or(|k| k.trim().is_empty()) {
            return Ok(());
        }
        let mut writer = self.writer.locked();
        if writer
            .last_indexed_phy
            .is_some_and(|last| phy_offset <= last)
        {
            return Ok(());
        }
        // Walked twice (counted, then written) rather than collected: a record has a
        // key or two, and a list of them would be an allocation per message.
        let keys = || {
            uniq.into_iter()
                .chain(
                    keys.into_iter()
                        .flat_map(|k| k.split(KEY_SEPARATOR))
                        .filter(|k| !k.is_empty()),
                )
                .take(self.max_index as usize - 1)
        };
        let count = keys().count();
        // All entries of a record go to one file, so that a file's header always
        // ends between records (recovery relies on it).
        let current = self.files.read_locked().last().cloned();
        let file = match current {
            Some(f) if f.index_count() as usize + count <= self.max_index as usize => f,
            previous => self.roll(previous.as_deref(), store_timestamp)?,
        };
        for key in keys() {
            writer.key.clear();
            writer.key.push_str(topic);
            writer.key.push('#');
            writer.key.push_str(key);
            let hash = key_hash(&writer.key);
            let added = file.put(hash, phy_offset, store_timestamp)?;
            debug_assert!(added, "room was checked above");
        }
        writer.last_indexed_phy = Some(phy_offset);
        Ok(())
    }

    fn roll(&self, previous: Option<&IndexFile>, now_ms: i64) -> Result<Arc<IndexFile>> {
        let (end_phy, end_ts) = match previous {
            Some(p) => {
                // The full file is done: make it durable with its final header.
                p.flush(&p.header(), IndexFlush::Complete)?;
                (p.end_phy_offset(), p.end_timestamp())
            }
            None => (0, 0),
        };
        let ms = now_ms.max(vostok_remoting::support::time::now_millis());
        // Names sort in creation order. When the newest file's name is ahead of the
        // clock (the clock was set back, or a record's store time is wrong) the next
        // name follows it, as a number, rather than waiting for the clock to get there.
        let mut name: u64 = local_time_name(ms).parse().unwrap_or(0);
        if let Some(newest) = self.files().last() {
            let newest: u64 = newest
                .path()
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            name = name.max(newest + 1);
        }
        let path = loop {
            let path = self.dir.join(format!("{name:017}"));
            if !path.exists() {
                break path;
            }
            name += 1;
        };
        let file = Arc::new(IndexFile::create(
            path,
            self.slots,
            self.max_index,
            end_phy,
            end_ts,
        )?);
        sync_dir(&self.dir)?;
        // The full file's table first, so that one table's worth of locked memory is
        // always enough.
        if let Some(p) = previous {
            p.release_slots();
        }
        self.keep_slots_resident(&file);
        self.files.write_locked().push(Arc::clone(&file));
        Ok(file)
    }

    /// Commitlog offsets of records indexed under `topic#key` within `begin..=end`.
    pub(crate) fn query(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin: i64,
        end: i64,
    ) -> IndexQuery {
        let mut out = IndexQuery::default();
        let files = self.files();
        if let Some(last) = files.last() {
            out.last_update_timestamp = last.end_timestamp();
            out.last_update_phy_offset = last.end_phy_offset();
        }
        let hash = key_hash(&format!("{topic}#{key}"));
        for f in files.iter().rev() {
            if out.phy_offsets.len() >= max {
                break;
            }
            if f.is_time_matched(begin, end) {
                f.select(hash, max, begin, end, &mut out.phy_offsets);
            }
            if f.begin_timestamp() < begin {
                break;
            }
        }
        out
    }

    /// Flushes the newest file with a header snapshot taken between records; returns
    /// the end timestamp now durable (for the checkpoint), if any.
    pub(crate) fn flush(&self, kind: IndexFlush) -> Result<Option<i64>> {
        let (last, header) = {
            // Holding the writer lock makes the snapshot fall between two records.
            let _writer = self.writer.locked();
            let Some(last) = self.files().last().cloned() else {
                return Ok(None);
            };
            let header = last.header();
            (last, header)
        };
        last.flush(&header, kind)?;
        Ok(Some(header.end_timestamp))
    }

    /// fdatasync of every index file (recovery after a crash).
    pub(crate) fn sync_all(&self) -> Result<()> {
        for f in self.files() {
            f.sync_file()?;
        }
        Ok(())
    }

    /// Deletes files whose records all lie before `commitlog_min` (not the newest).
    pub(crate) fn delete_expired(&self, commitlog_min: i64) -> Result<usize> {
        let removed: Vec<Arc<IndexFile>> = {
            let mut files = self.files.write_locked();
            let keep_from = files
                .iter()
                .take(files.len().saturating_sub(1))
                .take_while(|f| f.end_phy_offset() < commitlog_min)
                .count();
            files.drain(..keep_from).collect()
        };
        for f in &removed {
            tracing::info!(path = %f.path().display(), "removing an expired index file");
            f.remove()?;
        }
        if !removed.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(removed.len())
    }

    pub(crate) fn file_count(&self) -> usize {
        self.files.read_locked().len()
    }
}
