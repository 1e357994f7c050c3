//! What replication needs from the facade: the bytes a master sends, the SYNC_MASTER
//! wait, and the replication state for the admin side.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::MessageStore;
use crate::ha::state::{HaState, MasterLinkInfo, SlaveInfo};
use crate::result::PutMessageStatus;
use crate::stats::Stats;

impl MessageStore {
    /// Controller mode (`allAckInSyncStateSet`): PUT_OK once every other member of
    /// the SyncStateSet, replicas joining it included, acknowledged `end` (at once
    /// when the master is alone in it), FLUSH_SLAVE_TIMEOUT after `syncFlushTimeout`.
    /// A master cut off from its in-sync replicas therefore never answers PUT_OK
    /// (docs/controller.md#fencing).
    async fn wait_in_sync_state_set(&self, end: i64) -> PutMessageStatus {
        let i = self.inner();
        let deadline = tokio::time::Instant::now() + i.config.sync_flush_timeout;
        loop {
            let acked = i.ha.acked.notified();
            tokio::pin!(acked);
            acked.as_mut().enable();
            if i.ha.all_in_sync_have(end) {
                return PutMessageStatus::PutOk;
            }
            if tokio::time::timeout_at(deadline, acked).await.is_err() {
                Stats::add(&i.stats.slave_timeouts, 1);
                tracing::warn!(offset = end, "the SyncStateSet did not acknowledge in time");
                return PutMessageStatus::FlushSlaveTimeout;
            }
        }
    }

    /// Controller mode: this store's role, changed at run time. A replica refuses
    /// local puts; `sync` makes puts wait for the SyncStateSet.
    pub fn set_role(&self, replica: bool, sync: bool) {
        let ha = self.ha_state();
        if replica {
            ha.in_sync.clear_joining();
        } else {
            // A master's confirm offset starts at the start of its epoch.
            ha.in_sync.restart(self.max_phy_offset());
        }
        ha.replica.store(replica, Ordering::Release);
        ha.sync_master.store(sync && !replica, Ordering::Release);
        // Waiters re-check against the new role's rules.
        ha.acked.notify_waiters();
    }

    /// Controller mode: this broker's id, sent in the replication handshake.
    pub fn set_broker_id(&self, id: i64) {
        self.ha_state().self_id.store(id, Ordering::Release);
    }

    /// Controller mode: the SyncStateSet the controller agreed to; with the
    /// replicas still joining, the members a put must reach (this broker excluded).
    pub fn set_sync_state_set(&self, members: &[i64]) {
        let ha = self.ha_state();
        let me = ha.self_id.load(Ordering::Acquire);
        ha.in_sync
            .set_agreed(members.iter().copied().filter(|id| *id != me).collect());
        ha.acked.notify_waiters();
    }

    /// Controller mode, on a master: the replicas that joined the SyncStateSet here
    /// (they held every acknowledged message) and that the controller has not (yet)
    /// agreed to. Puts wait for them already.
    pub fn sync_state_set_joining(&self) -> Vec<i64> {
        self.ha_state().in_sync.joining()
    }

    /// Controller mode: puts stop waiting for joining replicas `ids`, which the
    /// controller is known not to hold.
    pub fn forget_sync_state_set_joining(&self, ids: &[i64]) {
        let ha = self.ha_state();
        ha.in_sync.forget_joining(ids);
        ha.acked.notify_waiters();
    }

    /// Controller mode: resolves when a replica joined the SyncStateSet here (at
    /// once if one joined since the last call).
    pub async fn sync_state_set_joined(&self) {
        self.ha_state().in_sync.joined.notified().await
    }

    pub(crate) fn ha_state(&self) -> &HaState {
        &self.inner().ha
    }

    /// Raw commitlog bytes from `from` up to the end of complete records (flushed or
    /// not: a slave may hold what the master's disk does not yet), at most
    /// `max_bytes`, within one file: one transfer chunk.
    pub fn read_for_slave(&self, from: i64, max_bytes: usize) -> Option<Bytes> {
        self.inner().commitlog.read_written(from, max_bytes)
    }

    /// The slaves connected to this master, with how far behind each is.
    pub fn ha_slaves(&self) -> Vec<SlaveInfo> {
        self.ha_state()
            .slaves(self.max_phy_offset(), self.config().ha.max_gap_not_in_sync)
    }

    /// How long replication takes (docs/replication.md#observability), as
    /// `(runtime info key, cumulative histogram)`: on a slave the age of the newest
    /// record of each applied batch and the time from reading a batch to applying it,
    /// on a master how long each write to a slave's socket took and the age of
    /// the newest record of each write that reached the end.
    pub fn ha_delay_histograms(&self) -> Vec<(&'static str, String)> {
        let ha = self.ha_state();
        vec![
            ("haApplyDelayHistogram", ha.apply_delay.render()),
            ("haApplyWaitHistogram", ha.apply_wait.render()),
            ("haSendBlockHistogram", ha.send_block.render()),
            ("haSendDelayHistogram", ha.send_delay.render()),
        ]
    }

    /// Highest offset any slave acknowledged (`push2SlaveMaxOffset`).
    pub fn ha_push2slave_offset(&self) -> i64 {
        self.ha_state().group.push2slave()
    }

    /// SYNC_MASTER puts waiting for a slave right now.
    pub fn ha_waiting_puts(&self) -> usize {
        self.ha_state().group.waiting()
    }

    /// A slave's connection to its master.
    pub fn ha_master_link(&self) -> MasterLinkInfo {
        self.ha_state().master_link()
    }

    /// What a slave was told of its master's flushed offset (RESET_MASTER_FLUSH_OFFSET),
    /// kept in the checkpoint file; 0 when never told.
    pub fn master_flushed_offset(&self) -> i64 {
        self.inner().checkpoint.master_flushed_offset()
    }

    /// Records the master's flushed offset and writes the checkpoint file.
    pub fn set_master_flushed_offset(&self, offset: i64) -> crate::error::Result<()> {
        let i = self.inner();
        i.checkpoint.set_master_flushed_offset(offset);
        i.checkpoint.flush()
    }

    /// Store timestamp of the newest complete record: on a slave, the master's time
    /// of the newest record replicated, so that the two give the lag in time.
    pub fn last_store_timestamp(&self) -> i64 {
        self.inner().commitlog.last_store_timestamp()
    }

    /// The SYNC_MASTER wait (RocketMQ 4.x `handleHA`): SLAVE_NOT_AVAILABLE at once
    /// when no slave is connected within `haMaxGapNotInSync`; otherwise PUT_OK once a
    /// slave acknowledged `end`, FLUSH_SLAVE_TIMEOUT after `syncFlushTimeout`.
    pub(crate) async fn wait_replicated(&self, end: i64) -> PutMessageStatus {
        let i = self.inner();
        if i.config.ha.controller_mode {
            return self.wait_in_sync_state_set(end).await;
        }
        let gap = i.config.ha.max_gap_not_in_sync;
        if !i.ha.is_slave_ok(i.commitlog.max_offset(), gap) {
            Stats::add(&i.stats.slave_not_available, 1);
            return PutMessageStatus::SlaveNotAvailable;
        }
        let Some(acked) = i.ha.group.register(end) else {
            return PutMessageStatus::PutOk;
        };
        match tokio::time::timeout(i.config.sync_flush_timeout, acked).await {
            Ok(Ok(())) => PutMessageStatus::PutOk,
            _ => {
                Stats::add(&i.stats.slave_timeouts, 1);
                tracing::warn!(offset = end, "no slave acknowledged in time");
                PutMessageStatus::FlushSlaveTimeout
            }
        }
    }
}
