//! The Raft state machine: [`ReplicasInfo`] with the last applied log id and
//! membership. Applied commands change it in memory; a snapshot is the whole of it
//! as JSON, kept in `raft/snapshot.json` (crash-safe write with a `.bak`) so that a
//! restarted controller starts from its last snapshot and replays the log after it.
//! The request processor reads the same [`Applied`] through [`StateMachine::shared`].

use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    AnyError, BasicNode, Entry, EntryPayload, LogId, RaftSnapshotBuilder, SnapshotMeta,
    StorageError, StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use vostok_remoting::support::config_file;
use vostok_remoting::support::sync::RwLockExt;

use super::types::TypeConfig;
use crate::replicas::{Outcome, ReplicasInfo};

type NodeId = u64;

/// What the state machine holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Applied {
    pub last_applied: Option<LogId<NodeId>>,
    pub last_membership: StoredMembership<NodeId, BasicNode>,
    pub info: ReplicasInfo,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredSnapshot {
    meta: SnapshotMeta<NodeId, BasicNode>,
    data: Vec<u8>,
}

/// The state machine; clones share it (the snapshot builder is a clone).
#[derive(Clone)]
pub struct StateMachine {
    shared: Arc<RwLock<Applied>>,
    dir: PathBuf,
}

fn snapshot_path(dir: &Path) -> PathBuf {
    dir.join("snapshot.json")
}

fn sm_err(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write_state_machine(AnyError::new(&e)).into()
}

impl StateMachine {
    /// Opens the state machine in `dir`, from its snapshot if there is one.
    pub fn open(dir: &Path) -> io::Result<StateMachine> {
        std::fs::create_dir_all(dir)?;
        let applied = load_snapshot(dir)
            .and_then(|s| serde_json::from_slice::<Applied>(&s.data).ok())
            .unwrap_or_default();
        Ok(StateMachine {
            shared: Arc::new(RwLock::new(applied)),
            dir: dir.to_owned(),
        })
    }

    /// The applied state, for reads.
    pub fn shared(&self) -> Arc<RwLock<Applied>> {
        self.shared.clone()
    }

    async fn save(&self, snapshot: StoredSnapshot) -> Result<(), StorageError<NodeId>> {
        let path = snapshot_path(&self.dir);
        let bytes = serde_json::to_vec(&snapshot).map_err(sm_err)?;
        tokio::task::spawn_blocking(move || config_file::persist(&path, &bytes))
            .await
            .map_err(sm_err)?
            .map_err(sm_err)
    }
}

fn load_snapshot(dir: &Path) -> Option<StoredSnapshot> {
    config_file::load(&snapshot_path(dir), |b| serde_json::from_slice(b).ok())
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<NodeId>> {
        let (data, last_log_id, last_membership) = {
            let a = self.shared.read_locked();
            let data = serde_json::to_vec(&*a).map_err(sm_err)?;
            (data, a.last_applied, a.last_membership.clone())
        };
        let snapshot_id = last_log_id.map_or_else(|| "0".to_owned(), |l| l.to_string());
        let meta = SnapshotMeta {
            last_log_id,
            last_membership,
            snapshot_id,
        };
        self.save(StoredSnapshot {
            meta: meta.clone(),
            data: data.clone(),
        })
        .await?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>), StorageError<NodeId>>
    {
        let a = self.shared.read_locked();
        Ok((a.last_applied, a.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Outcome>, StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut a = self.shared.write_locked();
        let mut out = Vec::new();
        for entry in entries {
            a.last_applied = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => out.push(Outcome::default()),
                EntryPayload::Normal(command) => {
                    tracing::debug!(?command, "applying");
                    out.push(a.info.apply(command));
                }
                EntryPayload::Membership(m) => {
                    a.last_membership = StoredMembership::new(Some(entry.log_id), m);
                    out.push(Outcome::default());
                }
            }
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<NodeId>> {
        let data = snapshot.into_inner();
        let mut applied: Applied = serde_json::from_slice(&data).map_err(sm_err)?;
        applied.last_applied = meta.last_log_id;
        applied.last_membership = meta.last_membership.clone();
        self.save(StoredSnapshot {
            meta: meta.clone(),
            data,
        })
        .await?;
        *self.shared.write_locked() = applied;
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<NodeId>> {
        let dir = self.dir.clone();
        let stored = tokio::task::spawn_blocking(move || load_snapshot(&dir))
            .await
            .map_err(sm_err)?;
        Ok(stored.map(|s| Snapshot {
            meta: s.meta,
            snapshot: Box::new(Cursor::new(s.data)),
        }))
    }
}
