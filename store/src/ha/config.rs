//! Replication keys (RocketMQ `MessageStoreConfig`'s `ha*` keys and defaults).
//! `brokerRole` and `haListenPort` are the broker's keys; the broker tells the store
//! whether it is a SYNC_MASTER through [`HaConfig::sync_master`].

use std::time::Duration;

use vostok_remoting::config_key;
use vostok_remoting::support::keys::{Key, Millis, Num, Table};

use crate::error::{Result, StoreError};

#[derive(Debug, Clone)]
pub struct HaConfig {
    /// `haSendHeartbeatInterval`: an idle side sends a heartbeat after this.
    pub send_heartbeat_interval: Duration,
    /// `haHousekeepingInterval`: either side drops a connection silent this long.
    pub housekeeping_interval: Duration,
    /// `haTransferBatchSize`: the largest transfer body the master sends.
    pub transfer_batch_size: usize,
    /// `haMaxGapNotInSync`: a slave whose acknowledged offset is this far behind the
    /// master's end is not in sync (a SYNC_MASTER then answers SLAVE_NOT_AVAILABLE).
    pub max_gap_not_in_sync: i64,
    /// `haMasterAddress`: a slave's fixed master HA address (`ip:port`); otherwise the
    /// name server's REGISTER_BROKER answer says where the master is.
    pub master_address: Option<String>,
    /// Not a key: set from `brokerRole=SYNC_MASTER`. A put is acknowledged only once a
    /// slave holds it.
    pub sync_master: bool,
    /// Not a key: set from `brokerRole=SLAVE`. The commitlog is written only by
    /// replication; local puts are refused (SERVICE_NOT_AVAILABLE).
    pub replica: bool,
    /// Not a key: set from `enableControllerMode` (docs/controller.md#replication):
    /// a slave opens its connection with a handshake naming its broker id, a new
    /// slave is sent the whole commitlog, and a SYNC put waits for every member of
    /// the SyncStateSet instead of any slave. The role changes at run time
    /// ([`crate::MessageStore::set_role`]).
    pub controller_mode: bool,
}

impl Default for HaConfig {
    fn default() -> Self {
        HaConfig {
            send_heartbeat_interval: Duration::from_millis(5000),
            housekeeping_interval: Duration::from_millis(20_000),
            transfer_batch_size: 32 * 1024,
            max_gap_not_in_sync: 256 * 1024 * 1024,
            master_address: None,
            sync_master: false,
            replica: false,
            controller_mode: false,
        }
    }
}

/// The replication keys.
pub static KEYS: Table<HaConfig> = Table {
    keys: &[
        config_key!("haSendHeartbeatInterval", send_heartbeat_interval: Millis, "an idle replication connection sends a heartbeat after this"),
        config_key!("haHousekeepingInterval", housekeeping_interval: Millis, "either side drops a replication connection silent this long"),
        config_key!("haTransferBatchSize", transfer_batch_size: Num, "the largest transfer a master sends"),
        config_key!("haMaxGapNotInSync", max_gap_not_in_sync: Num, "a SYNC_MASTER answers SLAVE_NOT_AVAILABLE when no slave is within this many bytes"),
        Key::new(
            "haMasterAddress",
            "a slave's fixed master HA address; otherwise the name servers say where the master is",
            |c, v| {
                // RocketMQ ignores addresses shorter than 6 characters (`HA_ADDRESS_MIN_LENGTH`).
                let v = v.trim();
                c.master_address = (v.len() >= 6).then(|| v.to_owned());
                Ok(())
            },
            |c| c.master_address.clone().unwrap_or_default(),
        ),
    ],
    nested: &[],
};

impl HaConfig {
    pub fn validate(&self) -> Result<()> {
        let max = super::wire::MAX_TRANSFER_BODY;
        if self.transfer_batch_size == 0 || self.transfer_batch_size > max {
            return Err(StoreError::config(
                "haTransferBatchSize",
                &self.transfer_batch_size.to_string(),
                format!("must be between 1 and {max} (below the slave's read buffer)"),
            ));
        }
        for (key, d) in [
            ("haSendHeartbeatInterval", self.send_heartbeat_interval),
            ("haHousekeepingInterval", self.housekeeping_interval),
        ] {
            if d.is_zero() {
                return Err(StoreError::config(key, "0", "must be greater than 0"));
            }
        }
        if self.max_gap_not_in_sync <= 0 {
            return Err(StoreError::config(
                "haMaxGapNotInSync",
                &self.max_gap_not_in_sync.to_string(),
                "must be positive",
            ));
        }
        Ok(())
    }
}
