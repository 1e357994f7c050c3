//! Controller-mode keys of `broker.conf` (docs/controller.md#configuration),
//! with RocketMQ's names and defaults (`BrokerConfig`, `MessageStoreConfig`).

use std::time::Duration;

use vostok_remoting::config_key;
use vostok_remoting::support::keys::{Flag, Key, Millis, Num, Section, Table};

use crate::error::BrokerError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerModeConfig {
    /// `enableControllerMode`: the controller assigns this broker's id and role;
    /// `brokerId` and `brokerRole` are placeholders.
    pub enable: bool,
    /// `controllerAddr`: the controllers, `ip:port;ip:port`.
    pub controller_addr: Vec<String>,
    /// `allAckInSyncStateSet`: a send is acknowledged only once every member of the
    /// SyncStateSet holds it.
    pub all_ack_in_sync_state_set: bool,
    /// `haMaxTimeSlaveNotCatchup`: a replica behind this long leaves the SyncStateSet.
    pub ha_max_time_slave_not_catchup: Duration,
    /// `controllerHeartBeatTimeoutMills`: sent with each heartbeat; the controllers
    /// count the broker dead after this much silence. Also the master's lease: a
    /// master that reached no controller for this long stops taking sends.
    pub controller_heartbeat_timeout: Duration,
    /// `brokerHeartbeatInterval`.
    pub broker_heartbeat_interval: Duration,
    /// `syncBrokerMetadataPeriod`: how often the broker asks for its group's
    /// master and epoch.
    pub sync_broker_metadata_period: Duration,
    /// `checkSyncStateSetPeriod`: how often a master reconsiders its SyncStateSet.
    pub check_sync_state_set_period: Duration,
    /// `brokerElectionPriority`: lower wins an election among equals.
    pub broker_election_priority: i32,
}

impl Default for ControllerModeConfig {
    fn default() -> Self {
        ControllerModeConfig {
            enable: false,
            controller_addr: Vec::new(),
            all_ack_in_sync_state_set: false,
            ha_max_time_slave_not_catchup: Duration::from_millis(15_000),
            controller_heartbeat_timeout: Duration::from_millis(10_000),
            broker_heartbeat_interval: Duration::from_millis(1000),
            sync_broker_metadata_period: Duration::from_millis(5000),
            check_sync_state_set_period: Duration::from_millis(5000),
            broker_election_priority: i32::MAX,
        }
    }
}

/// The controller-mode keys.
pub static KEYS: Table<ControllerModeConfig> = Table {
    keys: &[
        config_key!("enableControllerMode", enable: Flag, "the controllers assign this broker's id and role (docs/controller.md)"),
        Key::new(
            "controllerAddr",
            "the controllers, `ip:port;ip:port`",
            |c, v| {
                c.controller_addr = v
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                Ok(())
            },
            |c| c.controller_addr.join(";"),
        ),
        config_key!("allAckInSyncStateSet", all_ack_in_sync_state_set: Flag, "a send is acknowledged once every member of the SyncStateSet holds it"),
        config_key!("haMaxTimeSlaveNotCatchup", ha_max_time_slave_not_catchup: Millis, "a replica behind this long leaves the SyncStateSet"),
        config_key!("controllerHeartBeatTimeoutMills", controller_heartbeat_timeout: Millis, "silence after which the controllers count the broker dead; also the master's lease"),
        config_key!("brokerHeartbeatInterval", broker_heartbeat_interval: Millis, "ms between heartbeats to the controllers"),
        config_key!("syncBrokerMetadataPeriod", sync_broker_metadata_period: Millis, "how often the broker asks for its group's master and epoch"),
        config_key!("checkSyncStateSetPeriod", check_sync_state_set_period: Millis, "how often a master reconsiders its SyncStateSet"),
        config_key!("brokerElectionPriority", broker_election_priority: Num, "lower wins an election among equals"),
        Key::ignored("fetchControllerAddrByDnsLookup"),
        Key::ignored("syncControllerMetadataPeriod"),
        Key::ignored("storePathBrokerIdentity"),
        Key::ignored("storePathEpochFile"),
    ],
    nested: &[],
};

impl Section for ControllerModeConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl ControllerModeConfig {
    pub(crate) fn validate(&self) -> Result<(), BrokerError> {
        if self.enable && self.controller_addr.is_empty() {
            return Err(BrokerError::Config {
                key: "controllerAddr".into(),
                reason: "enableControllerMode needs at least one controller".into(),
            });
        }
        Ok(())
    }
}
