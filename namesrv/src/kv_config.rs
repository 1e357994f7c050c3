//! The name server's KV store (`KVConfigManager`): namespace → key → value, persisted to
//! `kvConfig.json` (docs/commands.md#name-server-commands, docs/flows.md#route-tables).
//!
//! Operators keep settings here that clients and brokers fetch by name; the name
//! server itself reads namespace [`NAMESPACE_ORDER_TOPIC_CONFIG`] (ordered-topic queue
//! layout, `brokerName:queueNum;...`). File layout, the same as Java's:
//!
//! ```text
//! {"configTable":{"<namespace>":{"<key>":"<value>", ...}, ...}}
//! ```
//!
//! Every change is written through before the request is answered, as Java does, so
//! an acknowledged PUT survives a crash. Writes go through
//! `vostok_remoting::support::config_file` (temp file, fsync, previous version kept as
//! `.bak`, rename); loading falls back to the `.bak`. A file that holds data but
//! cannot be read, with no readable backup either, stops the start rather than
//! starting with the operator's settings silently gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use serde::{Deserialize, Serialize};
use tracing::{debug, info};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use crate::error::NamesrvError;

/// KV namespace of ordered-topic configurations (`NamesrvUtil`).
pub const NAMESPACE_ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

type Table = BTreeMap<String, BTreeMap<String, String>>;

/// `KVConfigSerializeWrapper`: the file's JSON shape.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KvConfigFile {
    #[serde(default)]
    config_table: Table,
}

/// The KV store: owned by the name server, shared with its request processor.
#[derive(Debug)]
pub struct KvConfigManager {
    path: PathBuf,
    table: RwLock<Table>,
    /// Serialises writers of the file. A writer snapshots the table only after taking
    /// it, so whichever write lands last holds every change made before it started.
    persist_lock: Mutex<()>,
    /// Changed since the last successful write.
    dirty: AtomicBool,
}

impl KvConfigManager {
    /// An empty store that will persist to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        KvConfigManager {
            path: path.into(),
            table: RwLock::new(Table::new()),
            persist_lock: Mutex::new(()),
            dirty: AtomicBool::new(false),
        }
    }

    /// Loads the store from `path` (or its backup); a missing file is an empty store.
    /// Blocking.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, NamesrvError> {
        let manager = Self::new(path);
        if let Some(file) = load_file(&manager.path)? {
            let namespaces = file.config_table.len();
            *manager.write_table() = file.config_table;
            info!(path = %manager.path.display(), namespaces, "KV config loaded");
        }
        Ok(manager)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_table(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        // A panic while holding the lock cannot leave the map half-updated (each
        // change is one map operation), so a poisoned lock is still consistent.
        self.table.read_locked()
    }

    fn write_table(&self) -> std::sync::RwLockWriteGuard<'_, Table> {
        self.table.write_locked()
    }

    /// Sets a value in memory; returns the previous one. Call [`Self::persist`] after.
    pub fn put(&self, namespace: &str, key: &str, value: &str) -> Option<String> {
        let mut table = self.write_table();
        let previous = table
            .entry(namespace.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
        self.dirty.store(true, Ordering::Release);
        debug!(
            namespace,
            key,
            updated = previous.is_some(),
            "KV config put"
        );
        previous
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.read_table()
            .get(namespace)
            .and_then(|kv| kv.get(key))
            .cloned()
    }

    /// Removes a value in memory (and its namespace once empty); returns it.
    /// Call [`Self::persist`] after.
    pub fn delete(&self, namespace: &str, key: &str) -> Option<String> {
        let mut table = self.write_table();
        let kv = table.get_mut(namespace)?;
        let removed = kv.remove(key);
        if kv.is_empty() {
            table.remove(namespace);
        }
        if removed.is_some() {
            self.dirty.store(true, Ordering::Release);
        }
        debug!(
            namespace,
            key,
            removed = removed.is_some(),
            "KV config delete"
        );
        removed
    }

    /// Every key of a namespace, `None` when the namespace does not exist.
    pub fn list(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        self.read_table().get(namespace).cloned()
    }

    /// Writes the store to its file. Blocking.
    pub fn persist(&self) -> Result<(), NamesrvError> {
        let _writer = self.persist_lock.locked();
        let bytes = {
            let table = self.read_table();
            // Cleared under the read lock: a change made after this snapshot sets it
            // again, so a failed or later write is never mistaken for up to date.
            self.dirty.store(false, Ordering::Release);
            serde_json::to_vec_pretty(&KvConfigFileRef {
                config_table: &table,
            })
        };
        let result = match bytes {
            Ok(bytes) => vostok_remoting::support::config_file::persist(&self.path, &bytes)
                .map_err(|e| NamesrvError::io("write", &self.path, e)),
            Err(e) => Err(NamesrvError::io(
                "serialise",
                &self.path,
                std::io::Error::other(e),
            )),
        };
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        result
    }

    /// Writes the store if a change has not reached the file yet (shutdown). Blocking.
    pub fn persist_if_dirty(&self) -> Result<(), NamesrvError> {
        if self.dirty.load(Ordering::Acquire) {
            self.persist()
        } else {
            Ok(())
        }
    }
}

fn parse_file(bytes: &[u8]) -> Result<KvConfigFile, vostok_remoting::DecodeError> {
    vostok_remoting::protocol::json::from_slice("kvConfig.json", bytes)
}

fn holds_data(bytes: &[u8]) -> bool {
    !bytes.iter().all(u8::is_ascii_whitespace)
}

/// The file, else its backup; `None` on a first start (nothing, or only empty files,
/// which a crash during the very first write can leave).
fn load_file(path: &Path) -> Result<Option<KvConfigFile>, NamesrvError> {
    let parsed = vostok_remoting::support::config_file::load(path, |bytes| {
        holds_data(bytes).then(|| parse_file(bytes).ok()).flatten()
    });
    if parsed.is_some() {
        return Ok(parsed);
    }
    // Nothing readable: tell a first start from data that cannot be read.
    for candidate in [path.to_path_buf(), backup_path(path)] {
        match std::fs::read(&candidate) {
            Ok(bytes) if holds_data(&bytes) => {
                if let Err(source) = parse_file(&bytes) {
                    return Err(NamesrvError::Corrupt {
                        path: candidate,
                        source,
                    });
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(NamesrvError::io("read", candidate, e)),
        }
    }
    Ok(None)
}

/// `<file>.bak`, where the previous version of a config file is kept.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".bak");
    PathBuf::from(name)
}

/// [`KvConfigFile`] borrowing the table, so persisting copies nothing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KvConfigFileRef<'a> {
    config_table: &'a Table,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_list() {
        let kv = KvConfigManager::new("/nonexistent/kv.json");
        assert_eq!(kv.put("ns", "k", "v1"), None);
        assert_eq!(kv.put("ns", "k", "v2").as_deref(), Some("v1"));
        kv.put("ns", "k2", "x");
        assert_eq!(kv.get("ns", "k").as_deref(), Some("v2"));
        assert_eq!(kv.get("other", "k"), None);
        assert_eq!(kv.list("ns").unwrap().len(), 2);
        assert_eq!(kv.delete("ns", "k").as_deref(), Some("v2"));
        assert_eq!(kv.delete("ns", "k"), None);
        kv.delete("ns", "k2");
        assert_eq!(kv.list("ns"), None, "an emptied namespace is gone");
    }

    #[test]
    fn persists_and_reloads_including_java_written_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv").join("kvConfig.json");
        let kv = KvConfigManager::load(&path).unwrap();
        kv.put(NAMESPACE_ORDER_TOPIC_CONFIG, "T", "broker-a:4;broker-b:4");
        kv.put("ns", "k", "v \"quoted\" \u{1}");
        kv.persist().unwrap();
        assert!(kv.persist_if_dirty().is_ok());
        let again = KvConfigManager::load(&path).unwrap();
        assert_eq!(
            again.get(NAMESPACE_ORDER_TOPIC_CONFIG, "T").as_deref(),
            Some("broker-a:4;broker-b:4")
        );
        assert_eq!(again.get("ns", "k").as_deref(), Some("v \"quoted\" \u{1}"));

        // Compact output of Java's KVConfigManager.
        std::fs::write(&path, br#"{"configTable":{"a":{"b":"c"}}}"#).unwrap();
        let java = KvConfigManager::load(&path).unwrap();
        assert_eq!(java.get("a", "b").as_deref(), Some("c"));
    }

    #[test]
    fn falls_back_to_the_backup_and_refuses_unreadable_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        let kv = KvConfigManager::load(&path).unwrap();
        kv.put("ns", "k", "1");
        kv.persist().unwrap();
        kv.put("ns", "k", "2");
        kv.persist().unwrap();
        // A torn main file: the backup (one change behind) is loaded.
        std::fs::write(&path, b"{\"configTable\":{\"ns\":").unwrap();
        assert_eq!(
            KvConfigManager::load(&path)
                .unwrap()
                .get("ns", "k")
                .as_deref(),
            Some("1")
        );
        // An empty main file and no backup: a first start.
        std::fs::remove_file(backup_path(&path)).unwrap();
        std::fs::write(&path, b"").unwrap();
        assert!(KvConfigManager::load(&path).unwrap().list("ns").is_none());
        // Data that cannot be read, and no backup: refuse to start.
        std::fs::write(&path, b"not json").unwrap();
        let err = KvConfigManager::load(&path).unwrap_err();
        assert!(matches!(err, NamesrvError::Corrupt { .. }), "{err}");
    }

    #[test]
    fn a_failed_write_stays_dirty() {
        let dir = tempfile::tempdir().unwrap();
        // The parent "directory" is a file, so every write fails.
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"x").unwrap();
        let kv = KvConfigManager::new(blocker.join("kvConfig.json"));
        kv.put("ns", "k", "v");
        assert!(kv.persist().is_err());
        assert!(kv.persist_if_dirty().is_err(), "still owed a write");
    }
}
