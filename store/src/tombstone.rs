//! Deleted topics stay deleted: a durable tombstone per deleted topic.
//!
//! Deleting a topic removes its consume queues, but its records stay in the commitlog
//! until retention removes their files. Without more, a crash recovery (which rebuilds
//! consume queues from the commitlog) or a dispatcher still behind at the moment of
//! deletion would bring the deleted messages back, and a topic re-created with the same
//! name would serve them (Apache RocketMQ has this weakness). So a deletion first writes
//! `deletedTopics.json` in the store root: topic → the commitlog offset at deletion.
//! Records of that topic below that offset are never dispatched again; records written
//! after it (the re-created topic) are. A tombstone is dropped once retention has
//! removed every file below its offset.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::RwLockExt;

use crate::error::{Result, StoreError};

pub(crate) const FILE_NAME: &str = "deletedTopics.json";

pub(crate) struct Tombstones {
    file: ConfigFile,
    table: RwLock<BTreeMap<String, i64>>,
    /// False while there is no tombstone, so dispatch pays one atomic load per record.
    any: AtomicBool,
}

impl Tombstones {
    pub(crate) fn load(root: &Path) -> Tombstones {
        let file = ConfigFile::new(root.join(FILE_NAME));
        let table: BTreeMap<String, i64> = file
            .load(|bytes| serde_json::from_slice(bytes).ok())
            .unwrap_or_default();
        Tombstones {
            any: AtomicBool::new(!table.is_empty()),
            table: RwLock::new(table),
            file,
        }
    }

    /// Records that `topic` was deleted when the commitlog ended at `end`, durably,
    /// before the caller removes anything. Blocking file I/O.
    pub(crate) fn record(&self, topic: &str, end: i64) -> Result<()> {
        {
            let mut table = self.table.write_locked();
            let at = table.entry(topic.to_owned()).or_insert(end);
            *at = (*at).max(end);
        }
        self.any.store(true, Ordering::Release);
        self.persist()
    }

    /// True when a record of `topic` at commitlog offset `phy` belongs to a deleted
    /// incarnation of the topic.
    #[inline]
    pub(crate) fn hides(&self, topic: &str, phy: i64) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        self.table
            .read_locked()
            .get(topic)
            .is_some_and(|end| phy < *end)
    }

    /// Forgets tombstones whose records are all gone (the commitlog starts at or past
    /// them). Blocking file I/O when something was dropped.
    pub(crate) fn prune(&self, commitlog_min: i64) -> Result<()> {
        let changed = {
            let mut table = self.table.write_locked();
            let before = table.len();
            table.retain(|_, end| *end > commitlog_min);
            self.any.store(!table.is_empty(), Ordering::Release);
            table.len() != before
        };
        if changed {
            self.persist()?;
        }
        Ok(())
    }

    /// Every tombstone: topic and the commitlog offset at its deletion.
    pub(crate) fn all(&self) -> Vec<(String, i64)> {
        self.table
            .read_locked()
            .iter()
            .map(|(t, end)| (t.clone(), *end))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.table.read_locked().len()
    }

    fn persist(&self) -> Result<()> {
        self.file
            .persist_with(|| {
                serde_json::to_vec_pretty(&*self.table.read_locked()).unwrap_or_default()
            })
            .map_err(|e| StoreError::io("write", self.file.path(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tombstone_hides_older_records_until_pruned_and_survives_reload() {
        let dir = tempfile::tempdir().unwrap();
        let t = Tombstones::load(dir.path());
        assert!(!t.hides("T", 0));
        t.record("T", 1000).unwrap();
        assert!(t.hides("T", 999) && !t.hides("T", 1000) && !t.hides("U", 10));
        let again = Tombstones::load(dir.path());
        assert!(again.hides("T", 5));
        again.prune(999).unwrap();
        assert_eq!(again.len(), 1, "records below 1000 may remain");
        again.prune(1000).unwrap();
        assert!(!again.hides("T", 5));
        assert_eq!(Tombstones::load(dir.path()).len(), 0);
    }
}
