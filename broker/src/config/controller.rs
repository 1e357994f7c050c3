//! Controller-mode keys of `broker.conf` (docs/controller.md#configuration),
//! with RocketMQ's names and defaults (`BrokerConfig`, `MessageStoreConfig`).

use std::time::Duration;

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

fn bad(key: &str, v: &str) -> BrokerError {
    BrokerError::Config {
        key: key.to_owned(),
        reason: format!("cannot parse {v:?}"),
    }
}

fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, BrokerError> {
    v.trim().parse().map_err(|_| bad(key, v))
}

fn ms(key: &str, v: &str) -> Result<Duration, BrokerError> {
    num(key, v).map(Duration::from_millis)
}

fn flag(key: &str, v: &str) -> Result<bool, BrokerError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, v)),
    }
}

impl ControllerModeConfig {
    /// Applies one key; false when it is not a controller-mode key.
    pub fn apply_property(&mut self, key: &str, v: &str) -> Result<bool, BrokerError> {
        match key {
            "enableControllerMode" => self.enable = flag(key, v)?,
            "controllerAddr" => {
                self.controller_addr = v
                    .split(';')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            }
            "allAckInSyncStateSet" => self.all_ack_in_sync_state_set = flag(key, v)?,
            "haMaxTimeSlaveNotCatchup" => self.ha_max_time_slave_not_catchup = ms(key, v)?,
            "controllerHeartBeatTimeoutMills" => self.controller_heartbeat_timeout = ms(key, v)?,
            "brokerHeartbeatInterval" => self.broker_heartbeat_interval = ms(key, v)?,
            "syncBrokerMetadataPeriod" => self.sync_broker_metadata_period = ms(key, v)?,
            "checkSyncStateSetPeriod" => self.check_sync_state_set_period = ms(key, v)?,
            "brokerElectionPriority" => self.broker_election_priority = num(key, v)?,
            // Apache keys with nothing to configure here.
            "fetchControllerAddrByDnsLookup"
            | "syncControllerMetadataPeriod"
            | "storePathBrokerIdentity"
            | "storePathEpochFile" => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn to_properties(&self) -> Vec<(String, String)> {
        let ms = |d: Duration| d.as_millis().to_string();
        [
            ("enableControllerMode", self.enable.to_string()),
            ("controllerAddr", self.controller_addr.join(";")),
            (
                "allAckInSyncStateSet",
                self.all_ack_in_sync_state_set.to_string(),
            ),
            (
                "haMaxTimeSlaveNotCatchup",
                ms(self.ha_max_time_slave_not_catchup),
            ),
            (
                "controllerHeartBeatTimeoutMills",
                ms(self.controller_heartbeat_timeout),
            ),
            (
                "brokerHeartbeatInterval",
                ms(self.broker_heartbeat_interval),
            ),
            (
                "syncBrokerMetadataPeriod",
                ms(self.sync_broker_metadata_period),
            ),
            (
                "checkSyncStateSetPeriod",
                ms(self.check_sync_state_set_period),
            ),
            (
                "brokerElectionPriority",
                self.broker_election_priority.to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

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
