//! Delay-level progress (`delayOffset.json`, RocketMQ's `ScheduleMessageService`
//! offset table) and the wake-ups of the level tasks.
//!
//! One entry per delay level: the queue offset in `SCHEDULE_TOPIC_XXXX` up to which
//! that level has been delivered. The file keeps RocketMQ's layout. Each level also
//! has a [`Notify`] that the store's arrival listener signals when a message is parked
//! at that level, so an idle level sleeps until there is work instead of polling.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tracing::warn;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::MutexExt;

use crate::config::BrokerConfig;

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DelayOffsets {
    #[serde(default)]
    offset_table: BTreeMap<i32, i64>,
}

/// Per-level progress, shared by the level tasks, the persister and admin requests.
pub(crate) struct DelayOffsetTable {
    file: ConfigFile,
    offsets: Mutex<BTreeMap<i32, i64>>,
    /// Index `level - 1`: signalled when a message arrives at that level.
    arrivals: Vec<Notify>,
    /// Index `level - 1`: how long that level waits (`messageDelayLevel`).
    delays: Vec<std::time::Duration>,
}

impl DelayOffsetTable {
    pub(crate) fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("delayOffset.json"));
        let stored: DelayOffsets = file
            .load(|bytes| {
                vostok_remoting::protocol::json::from_slice("delayOffset.json", bytes).ok()
            })
            .unwrap_or_default();
        let delays = config.store.delay_levels().unwrap_or_default();
        DelayOffsetTable {
            file,
            offsets: Mutex::new(stored.offset_table),
            arrivals: (0..delays.len()).map(|_| Notify::new()).collect(),
            delays,
        }
    }

    /// How long `level` waits.
    pub(crate) fn level_delay(&self, level: i32) -> Option<std::time::Duration> {
        usize::try_from(level - 1)
            .ok()
            .and_then(|i| self.delays.get(i))
            .copied()
    }

    pub(crate) fn get(&self, level: i32) -> i64 {
        *self.offsets.locked().get(&level).unwrap_or(&0)
    }

    pub(crate) fn set(&self, level: i32, offset: i64) {
        self.offsets.locked().insert(level, offset);
    }

    /// A message was parked at queue `queue_id` (level `queue_id + 1`).
    pub(crate) fn on_arrival(&self, queue_id: i32) {
        if let Some(notify) = usize::try_from(queue_id)
            .ok()
            .and_then(|i| self.arrivals.get(i))
        {
            // Stores a permit when the level task is not waiting yet: never lost.
            notify.notify_one();
        }
    }

    /// Resolves at the next arrival at `level` (or at once if one came since the last
    /// wait).
    pub(crate) async fn arrival(&self, level: i32) {
        match usize::try_from(level - 1)
            .ok()
            .and_then(|i| self.arrivals.get(i))
        {
            Some(notify) => notify.notified().await,
            None => std::future::pending().await,
        }
    }

    /// `delayOffset.json` as RocketMQ writes it (also the GET_ALL_DELAY_OFFSET body).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let offsets = self.offsets.locked().clone();
        serde_json::to_vec_pretty(&DelayOffsets {
            offset_table: offsets,
        })
        .unwrap_or_default()
    }

    /// A slave's copy of its master's `delayOffset.json` (SlaveSynchronize).
    pub(crate) fn replace_from_master(
        &self,
        body: &[u8],
    ) -> Result<(), vostok_remoting::DecodeError> {
        let master: DelayOffsets =
            vostok_remoting::protocol::json::from_slice("delayOffset.json", body)?;
        *self.offsets.locked() = master.offset_table;
        Ok(())
    }

    pub(crate) fn persist(&self) {
        if let Err(e) = self.file.persist_with(|| self.encode()) {
            warn!(file = %self.file.path().display(), error = %e, "cannot persist delay offsets");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_arrival_before_the_wait_is_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.path().to_path_buf();
        let table = DelayOffsetTable::load(&c);
        table.on_arrival(2);
        tokio::time::timeout(std::time::Duration::from_secs(5), table.arrival(3))
            .await
            .expect("the permit stored by the arrival");
        table.on_arrival(-1);
        table.on_arrival(1_000);
        table.set(3, 42);
        table.persist();
        assert_eq!(DelayOffsetTable::load(&c).get(3), 42);
    }
}
