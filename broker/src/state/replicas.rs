//! Controller mode's part of the shared state (RocketMQ `ReplicasManager`'s fields,
//! docs/controller.md#broker-lifecycle): the id the controller gave this broker,
//! the role it holds now, the master epoch and SyncStateSet it knows, the epoch
//! file, and when a controller last answered (the master's lease). Outside
//! controller mode the role is the configured one and none of this changes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU8, Ordering};
use std::sync::{Mutex, RwLock};

use vostok_remoting::support::sync::RwLockExt;
use vostok_store::ha::EpochFile;

/// The role a controller-mode broker holds right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaRole {
    /// No role yet (or lost): serves no sends, replicates from nobody.
    None = 0,
    Master = 1,
    Slave = 2,
}

pub struct ReplicaState {
    role: AtomicU8,
    /// The id the controller assigned (-1 until then).
    pub(crate) broker_id: AtomicI64,
    pub(crate) master_epoch: AtomicI32,
    /// The SyncStateSet and its epoch, as this broker last learned them.
    pub(crate) sync_state_set: RwLock<(BTreeSet<i64>, i32)>,
    pub(crate) epochs: Mutex<EpochFile>,
    /// When a controller last answered this broker (ms since the epoch).
    pub(crate) last_controller_ok_ms: AtomicI64,
    /// The current master's (id, main address, HA address), when known.
    pub(crate) master: RwLock<Option<(i64, String, String)>>,
    /// The master-only services start on the first promotion.
    pub(crate) master_services: std::sync::Once,
}

impl ReplicaState {
    pub(crate) fn new(epochs: EpochFile) -> Self {
        ReplicaState {
            role: AtomicU8::new(ReplicaRole::None as u8),
            broker_id: AtomicI64::new(-1),
            master_epoch: AtomicI32::new(0),
            sync_state_set: RwLock::new((BTreeSet::new(), 0)),
            epochs: Mutex::new(epochs),
            last_controller_ok_ms: AtomicI64::new(0),
            master: RwLock::new(None),
            master_services: std::sync::Once::new(),
        }
    }

    pub fn role(&self) -> ReplicaRole {
        match self.role.load(Ordering::Acquire) {
            1 => ReplicaRole::Master,
            2 => ReplicaRole::Slave,
            _ => ReplicaRole::None,
        }
    }

    pub(crate) fn set_role(&self, role: ReplicaRole) {
        self.role.store(role as u8, Ordering::Release);
    }

    pub fn broker_id(&self) -> i64 {
        self.broker_id.load(Ordering::Acquire)
    }

    pub fn master_epoch(&self) -> i32 {
        self.master_epoch.load(Ordering::Acquire)
    }

    pub fn sync_state_set(&self) -> (BTreeSet<i64>, i32) {
        self.sync_state_set.read_locked().clone()
    }
}
