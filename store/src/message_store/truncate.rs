//! Controller mode: a replica cuts what its new master does not have
//! (docs/controller.md#truncation). The caller has stopped replication and the
//! store refuses local puts (it is a replica), so nothing appends meanwhile; the
//! dispatcher is let catch up first, then the consume queues are cut below the new
//! end (readers stop being sent there), then the commitlog, and every position is
//! reset as after a recovery. Index entries past the end stay; they point at
//! nothing and lookups skip them.

use std::collections::HashMap;
use std::time::Duration;

use super::MessageStore;
use crate::error::{Result, StoreError};

impl MessageStore {
    /// Cuts the commitlog at `end` (a record boundary), and the consume queues with
    /// it. Only for a replica whose replication is stopped.
    pub fn truncate_to(&self, end: i64) -> Result<()> {
        let i = self.inner();
        if !i.ha.replica.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StoreError::HaProtocol {
                reason: "only a replica truncates its commitlog".into(),
            });
        }
        // A master turned replica with the write buffer on: its appends go to the
        // files first, so that the end below is the whole log.
        i.commitlog.commit_pending()?;
        let max = i.commitlog.max_offset();
        let write_end = i.commitlog.write_end();
        if end >= write_end {
            return Ok(());
        }
        if end < i.commitlog.min_offset() {
            return Err(StoreError::HaProtocol {
                reason: format!(
                    "cannot truncate to {end}: below the first stored offset {}",
                    i.commitlog.min_offset()
                ),
            });
        }
        i.dispatch.wait_for(max, Duration::from_secs(10));
        tracing::warn!(
            from = write_end,
            to = end,
            "truncating the commitlog to the new master's log"
        );
        for cq in i.queues.all() {
            cq.truncate_beyond(end)?;
        }
        i.cut_commit_log(end)?;
        let mut table: HashMap<String, HashMap<i32, i64>> = HashMap::new();
        for cq in i.queues.all() {
            table
                .entry(cq.topic().to_owned())
                .or_default()
                .insert(cq.queue_id(), cq.max_offset());
        }
        let last_ts = i.commitlog.last_store_timestamp();
        i.commitlog.set_recovered_end(end, last_ts, table);
        if i.dispatch.reput_from() > end {
            i.dispatch.set_reput_from(end);
        }
        Ok(())
    }
}
