//! Controller mode's part of the shared state (RocketMQ `ReplicasManager`'s fields,
//! docs/controller.md#broker-lifecycle): the id the controller gave this broker,
//! the role it holds now, the master epoch and SyncStateSet it knows, the epoch
//! file, when a controller last answered (the master's lease), and the controller's
//! latest role change notice not applied yet. Outside controller mode the role is
//! the configured one and none of this changes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU8, Ordering};
use std::sync::{Mutex, RwLock};

use tokio::sync::Notify;
use vostok_remoting::protocol::body::SyncStateSet;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_store::ha::EpochFile;

use super::master_services::MasterServices;

/// What the controller says about the group: its answer to GET_REPLICA_INFO, or its
/// NOTIFY_BROKER_ROLE_CHANGED.
#[derive(Debug, Clone)]
pub(crate) struct MasterInfo {
    pub(crate) id: Option<i64>,
    pub(crate) addr: Option<String>,
    pub(crate) ha_addr: Option<String>,
    pub(crate) epoch: i32,
    pub(crate) sync_state_set: SyncStateSet,
}

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
    /// The master-only services: started on each promotion, stopped on demotion.
    pub(crate) master_services: MasterServices,
    /// The newest role change notice from a controller, until the replicas manager
    /// applies it; `notice_arrived` wakes the manager.
    notice: Mutex<Option<MasterInfo>>,
    pub(crate) notice_arrived: Notify,
    /// The highest master epoch a controller's notice carried (0: none yet).
    notified_epoch: AtomicI32,
    /// A master's joining replicas named in an ALTER_SYNC_STATE_SET that got no
    /// answer, with the SyncStateSet epoch it carried: the controller may still
    /// apply it while it is at that epoch (docs/controller.md#syncstateset).
    pub(crate) unanswered_joiners: Mutex<BTreeMap<i64, i32>>,
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
            master_services: MasterServices::default(),
            notice: Mutex::new(None),
            notice_arrived: Notify::new(),
            notified_epoch: AtomicI32::new(0),
            unanswered_joiners: Mutex::default(),
        }
    }

    /// Keeps a controller's role change notice for the replicas manager; false (and
    /// nothing kept) when it is older than the master epoch known here or than a
    /// notice still waiting.
    pub(crate) fn offer_notice(&self, info: MasterInfo) -> bool {
        let key = |i: &MasterInfo| (i.epoch, i.sync_state_set.sync_state_set_epoch);
        if info.epoch < self.master_epoch() {
            return false;
        }
        let epoch = info.epoch;
        {
            let mut waiting = self.notice.locked();
            if waiting.as_ref().is_some_and(|w| key(w) > key(&info)) {
                return false;
            }
            *waiting = Some(info);
        }
        self.notified_epoch.fetch_max(epoch, Ordering::AcqRel);
        self.notice_arrived.notify_one();
        true
    }

    /// The notice waiting to be applied, if any.
    pub(crate) fn take_notice(&self) -> Option<MasterInfo> {
        self.notice.locked().take()
    }

    pub fn notified_epoch(&self) -> i32 {
        self.notified_epoch.load(Ordering::Acquire)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn info(epoch: i32, sss_epoch: i32) -> MasterInfo {
        MasterInfo {
            id: Some(1),
            addr: None,
            ha_addr: None,
            epoch,
            sync_state_set: SyncStateSet {
                sync_state_set: BTreeSet::from([1]),
                sync_state_set_epoch: sss_epoch,
            },
        }
    }

    #[test]
    fn a_notice_older_than_what_is_known_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let state = ReplicaState::new(EpochFile::load(dir.path().join("epochFileCheckpoint")));
        state.master_epoch.store(3, Ordering::Release);
        assert!(!state.offer_notice(info(2, 9)), "older master epoch");
        assert!(state.take_notice().is_none());
        assert_eq!(state.notified_epoch(), 0);
        assert!(
            state.offer_notice(info(3, 4)),
            "same epoch: applied again, harmless"
        );
        assert!(state.offer_notice(info(5, 6)));
        assert!(
            !state.offer_notice(info(4, 7)),
            "older than the one waiting"
        );
        assert!(
            !state.offer_notice(info(5, 5)),
            "older SyncStateSet than the one waiting"
        );
        let taken = state.take_notice().unwrap();
        assert_eq!(
            (taken.epoch, taken.sync_state_set.sync_state_set_epoch),
            (5, 6)
        );
        assert!(state.take_notice().is_none());
        assert_eq!(state.notified_epoch(), 5);
    }
}
