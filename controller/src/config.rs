//! Controller settings with RocketMQ's `ControllerConfig` key names and defaults
//! (docs/controller.md#configuration). The peer keys keep their DLedger names
//! although the engine is Raft: `controllerDLegerPeers=n0-ip:port;n1-ip:port;n2-ip:port`,
//! `controllerDLegerSelfId=n0`. Each controller serves brokers, tools and its peers
//! on its own peer address, as an Apache DLedger controller does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use vostok_remoting::auth::SessionCredentials;

use vostok_remoting::config_key;
use vostok_remoting::support::keys::{
    flag, Flag, Key, Millis, Path as PathCodec, RawText, Section, Table, Text,
};

use crate::error::ControllerError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `controllerDLegerGroup`: the quorum's name (shown by GET_METADATA_INFO).
    pub group: String,
    /// `controllerDLegerPeers`: (id, address) of every controller, `n0` = Raft node 0.
    pub peers: Vec<(String, String)>,
    /// `controllerDLegerSelfId`.
    pub self_id: String,
    /// `controllerStorePath`: the Raft log, vote and snapshot (`$HOME/DLedgerController`).
    pub store_path: PathBuf,
    /// `scanNotActiveBrokerInterval`: how often the leader looks for dead masters.
    pub scan_not_active_broker_interval: Duration,
    /// `enableElectUncleanMaster`: elect a replica outside the SyncStateSet when no
    /// member is alive (may lose acknowledged messages).
    pub enable_elect_unclean_master: bool,
    /// `controllerHeartBeatTimeoutMills` (the broker key; a broker's heartbeat names
    /// its own): a broker silent this long is dead.
    pub heartbeat_timeout: Duration,
    /// `bindAddress` (Vostok): where to bind; the peer address's port is used.
    pub bind_address: String,
    /// Raft timings (Vostok keys): `raftHeartbeatIntervalMills`,
    /// `raftElectionTimeoutMills` (min; max is twice it).
    pub raft_heartbeat_interval: Duration,
    pub raft_election_timeout: Duration,
    /// `notifyBrokerRoleChanged`: after an election, tell the group's alive brokers
    /// their new roles (NOTIFY_BROKER_ROLE_CHANGED) instead of waiting for their polls.
    pub notify_broker_role_changed: bool,
    /// `aclEnable` (or `authenticationEnabled`): every request must be signed by an
    /// account of `$ROCKETMQ_HOME/conf/plain_acl.yml` (docs/controller.md#acl).
    pub acl_enable: bool,
    /// `rocketmqHome`: where `conf/plain_acl.yml` is looked for; empty means
    /// `$ROCKETMQ_HOME`, else the working directory.
    pub rocketmq_home: String,
    /// `accessKey` / `secretKey`: what this controller signs its own requests with
    /// (Raft messages to its peers, role notices to brokers).
    pub access_key: String,
    pub secret_key: String,
    /// `controllerAccessKeys` (Vostok): the access keys the quorum's controllers sign
    /// with. With ACL on, Raft messages are taken only when signed with one of them;
    /// empty means this controller's own `accessKey` (one account for the quorum).
    pub controller_access_keys: Vec<String>,
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            group: "DefaultControllerGroup".into(),
            peers: vec![("n0".into(), "127.0.0.1:9878".into())],
            self_id: "n0".into(),
            store_path: home_dir().join("DLedgerController"),
            scan_not_active_broker_interval: Duration::from_millis(5000),
            enable_elect_unclean_master: false,
            heartbeat_timeout: Duration::from_millis(10_000),
            bind_address: "0.0.0.0".into(),
            raft_heartbeat_interval: Duration::from_millis(200),
            raft_election_timeout: Duration::from_millis(1000),
            notify_broker_role_changed: true,
            acl_enable: false,
            rocketmq_home: String::new(),
            access_key: String::new(),
            secret_key: String::new(),
            controller_access_keys: Vec::new(),
        }
    }
}

/// `n0-ip:port;n1-ip:port` → [(n0, ip:port), ...].
pub fn parse_peers(value: &str) -> Result<Vec<(String, String)>, ControllerError> {
    let key = "controllerDLegerPeers";
    let mut peers = Vec::new();
    for part in value.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((id, addr)) = part.split_once('-') else {
            return Err(ControllerError::config(
                key,
                value,
                "each peer is id-ip:port",
            ));
        };
        node_number(id)
            .ok_or_else(|| ControllerError::config(key, value, "ids are n0, n1, ..."))?;
        peers.push((id.to_owned(), addr.to_owned()));
    }
    if peers.is_empty() {
        return Err(ControllerError::config(key, value, "no peer"));
    }
    Ok(peers)
}

/// `n3` → 3: the Raft node id.
pub fn node_number(id: &str) -> Option<u64> {
    id.strip_prefix('n')?.parse().ok()
}

fn comma_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every key a controller reads.
pub static KEYS: Table<ControllerConfig> = Table {
    keys: &[
        config_key!("controllerDLegerGroup", group: RawText, "the quorum's name"),
        Key::new(
            "controllerDLegerPeers",
            "every controller, `n0-ip:port;n1-ip:port;n2-ip:port`",
            |c, v| {
                c.peers = parse_peers(v).map_err(|e| match e {
                    ControllerError::InvalidConfig { reason, .. } => reason,
                    other => other.to_string(),
                })?;
                Ok(())
            },
            |c| c.peers_string(),
        ),
        config_key!("controllerDLegerSelfId", self_id: Text, "this controller's id in `controllerDLegerPeers`"),
        config_key!("controllerStorePath", store_path: PathCodec, "the Raft log, vote and snapshot", default = "`$HOME/DLedgerController`"),
        config_key!("scanNotActiveBrokerInterval", scan_not_active_broker_interval: Millis, "how often the leader looks for dead masters"),
        config_key!("enableElectUncleanMaster", enable_elect_unclean_master: Flag, "elect a replica outside the SyncStateSet when no member is alive (may lose acknowledged messages)", at_run_time),
        config_key!("controllerHeartBeatTimeoutMills", heartbeat_timeout: Millis, "a broker silent this long is dead"),
        config_key!("bindAddress", bind_address: RawText, "where to bind; the peer address's port is used"),
        config_key!("raftHeartbeatIntervalMills", raft_heartbeat_interval: Millis, "Raft heartbeat period"),
        config_key!("raftElectionTimeoutMills", raft_election_timeout: Millis, "Raft election timeout (min; max is twice it)"),
        config_key!("notifyBrokerRoleChanged", notify_broker_role_changed: Flag, "after an election, tell the group's brokers their new roles at once", at_run_time),
        Key::new(
            "aclEnable",
            "every request must be signed by an account of `$ROCKETMQ_HOME/conf/plain_acl.yml`",
            // Either switch turns the check on; `false` never turns off the other.
            |c, v| {
                c.acl_enable |= flag(v)?;
                Ok(())
            },
            |c| c.acl_enable.to_string(),
        ),
        Key::alias("authenticationEnabled", "aclEnable", |c, v| {
            c.acl_enable |= flag(v)?;
            Ok(())
        }),
        config_key!("rocketmqHome", rocketmq_home: Text, "where `conf/plain_acl.yml` is looked for; empty: `$ROCKETMQ_HOME`"),
        config_key!("accessKey", access_key: Text, "what this controller signs its own requests with"),
        Key::new(
            "controllerAccessKeys",
            "the access keys the quorum's controllers sign with, comma separated; empty: `accessKey`",
            |c, v| {
                c.controller_access_keys = comma_list(v);
                Ok(())
            },
            |c| c.controller_access_keys.join(","),
        ),
        Key::new(
            "secretKey",
            "its secret; printed as `***`",
            |c, v| {
                c.secret_key = v.trim().to_owned();
                Ok(())
            },
            |c| {
                if c.secret_key.is_empty() {
                    String::new()
                } else {
                    "***".into()
                }
            },
        ),
        Key::ignored("controllerType"),
        Key::ignored("scanInactiveMasterInterval"),
        Key::ignored("controllerThreadPoolNums"),
        Key::ignored("controllerRequestThreadPoolQueueCapacity"),
        Key::ignored("mappedFileSize"),
        Key::ignored("electMasterMaxRetryCount"),
        Key::ignored("isProcessReadEvent"),
    ],
    nested: &[],
};

impl Section for ControllerConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl ControllerConfig {
    /// Applies one key; `Ok(false)` for a key that is not a controller key.
    pub fn apply_property(&mut self, key: &str, v: &str) -> Result<bool, ControllerError> {
        self.set_key(key, v)
            .map_err(|reason| ControllerError::config(key, v, reason))
    }

    /// Loads a `.properties` file; returns the keys it did not know.
    pub fn load_properties_file(&mut self, path: &Path) -> Result<Vec<String>, ControllerError> {
        let pairs = vostok_remoting::support::properties::load(path).map_err(|source| {
            ControllerError::Io {
                action: "reading",
                path: path.to_owned(),
                source,
            }
        })?;
        let mut unknown = Vec::new();
        for (k, v) in pairs {
            if !self.apply_property(&k, &v)? {
                unknown.push(k);
            }
        }
        Ok(unknown)
    }

    pub fn validate(&self) -> Result<(), ControllerError> {
        if self.self_address().is_none() {
            return Err(ControllerError::config(
                "controllerDLegerSelfId",
                &self.self_id,
                "not one of controllerDLegerPeers",
            ));
        }
        if self.raft_heartbeat_interval * 3 > self.raft_election_timeout {
            return Err(ControllerError::config(
                "raftElectionTimeoutMills",
                &self.raft_election_timeout.as_millis().to_string(),
                "must be at least 3 Raft heartbeat intervals",
            ));
        }
        Ok(())
    }

    /// This controller's Raft node id.
    pub fn self_node(&self) -> u64 {
        node_number(&self.self_id).unwrap_or(0)
    }

    /// This controller's peer address.
    pub fn self_address(&self) -> Option<&str> {
        self.peers
            .iter()
            .find(|(id, _)| *id == self.self_id)
            .map(|(_, a)| a.as_str())
    }

    /// `controllerDLegerPeers` as written.
    pub fn peers_string(&self) -> String {
        let parts: Vec<String> = self.peers.iter().map(|(i, a)| format!("{i}-{a}")).collect();
        parts.join(";")
    }

    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        KEYS.values(self)
    }

    /// The accounts whose Raft messages this controller takes (`controllerAccessKeys`,
    /// else its own `accessKey`).
    pub fn raft_access_keys(&self) -> Vec<String> {
        if !self.controller_access_keys.is_empty() {
            return self.controller_access_keys.clone();
        }
        self.credentials()
            .map(|_| vec![self.access_key.clone()])
            .unwrap_or_default()
    }

    /// The credentials this controller signs with, when `accessKey` is set.
    pub fn credentials(&self) -> Option<SessionCredentials> {
        (!self.access_key.is_empty())
            .then(|| SessionCredentials::new(&self.access_key, &self.secret_key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_as_dledger_writes_them() {
        let mut c = ControllerConfig::default();
        c.apply_property(
            "controllerDLegerPeers",
            "n0-10.0.0.1:9878;n1-10.0.0.2:9878;n2-10.0.0.3:9878",
        )
        .unwrap();
        c.apply_property("controllerDLegerSelfId", "n1").unwrap();
        c.validate().unwrap();
        assert_eq!(c.self_node(), 1);
        assert_eq!(c.self_address(), Some("10.0.0.2:9878"));
        assert!(parse_peers("x-1:2").is_err());
        assert!(parse_peers("n0").is_err());
        c.apply_property("controllerDLegerSelfId", "n5").unwrap();
        assert!(c.validate().is_err());
    }

    /// `mqcontroller -p` prints every key it reads and nothing else; each reads back.
    #[test]
    fn every_key_is_printed_once_and_reads_back() {
        let mut c = ControllerConfig::default();
        c.apply_property("secretKey", "s").unwrap();
        c.apply_property("controllerAccessKeys", "a,b").unwrap();
        vostok_remoting::support::keys::check_printed_keys(&KEYS, &c, ControllerConfig::default())
            .unwrap();
    }

    #[test]
    fn raft_is_taken_from_the_listed_keys_else_from_this_controllers_own() {
        let mut c = ControllerConfig::default();
        assert!(c.raft_access_keys().is_empty());
        c.apply_property("accessKey", "controllers").unwrap();
        assert_eq!(c.raft_access_keys(), ["controllers"]);
        c.apply_property("controllerAccessKeys", " ctl-0, ctl-1 ,,ctl-2")
            .unwrap();
        assert_eq!(c.raft_access_keys(), ["ctl-0", "ctl-1", "ctl-2"]);
    }
}
