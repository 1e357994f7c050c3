//! Controller-mode bodies (docs/controller.md#requests; RocketMQ
//! `remoting/protocol/body/{SyncStateSet, ElectMasterResponseBody, BrokerMemberGroup,
//! BrokerReplicasInfo, EpochEntryCache}.java`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The in-sync replicas of a broker group and the epoch of that set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncStateSet {
    #[serde(default)]
    pub sync_state_set: BTreeSet<i64>,
    #[serde(default)]
    pub sync_state_set_epoch: i32,
}

/// The brokers of one group: id → address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerMemberGroup {
    #[serde(default)]
    pub cluster: String,
    #[serde(default)]
    pub broker_name: String,
    #[serde(default)]
    pub broker_addrs: BTreeMap<i64, String>,
}

/// The body of CONTROLLER_ELECT_MASTER's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElectMasterResponseBody {
    #[serde(default)]
    pub broker_member_group: Option<BrokerMemberGroup>,
    #[serde(default)]
    pub sync_state_set: BTreeSet<i64>,
}

/// One replica as CONTROLLER_GET_SYNC_STATE_DATA shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaIdentity {
    pub broker_name: String,
    pub broker_id: i64,
    pub broker_address: String,
    #[serde(default)]
    pub alive: bool,
}

/// One group in CONTROLLER_GET_SYNC_STATE_DATA's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicasInfo {
    #[serde(default)]
    pub master_broker_id: Option<i64>,
    #[serde(default)]
    pub master_address: Option<String>,
    #[serde(default)]
    pub master_epoch: i32,
    #[serde(default)]
    pub sync_state_set_epoch: i32,
    #[serde(default)]
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    #[serde(default)]
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
}

/// CONTROLLER_GET_SYNC_STATE_DATA's answer: broker name → its replicas.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerReplicasInfo {
    #[serde(default)]
    pub replicas_info_table: BTreeMap<String, ReplicasInfo>,
}

/// One line of a broker's epoch file: from `startOffset` on, the commitlog was
/// written under `epoch`; `endOffset` is where the next epoch starts (or the log's end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
    #[serde(default = "open_end")]
    pub end_offset: i64,
}

fn open_end() -> i64 {
    i64::MAX
}

/// GET_BROKER_EPOCH_CACHE's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochEntryCache {
    #[serde(default)]
    pub cluster_name: String,
    #[serde(default)]
    pub broker_name: String,
    #[serde(default)]
    pub broker_id: i64,
    #[serde(default)]
    pub epoch_list: Vec<EpochEntry>,
    #[serde(default)]
    pub max_offset: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::json;

    #[test]
    fn reads_what_java_writes() {
        // fastjson: unquoted integer keys, sets as arrays.
        let body = br#"{"brokerMemberGroup":{"brokerAddrs":{1:"10.0.0.1:10911",2:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"c"},"syncStateSet":[1,2]}"#;
        let b: ElectMasterResponseBody = json::from_slice("elect", body).unwrap();
        let g = b.broker_member_group.unwrap();
        assert_eq!(g.broker_addrs[&2], "10.0.0.2:10911");
        assert_eq!(b.sync_state_set, BTreeSet::from([1, 2]));
        let s: SyncStateSet =
            json::from_slice("sss", br#"{"syncStateSet":[3],"syncStateSetEpoch":4}"#).unwrap();
        assert_eq!(s.sync_state_set_epoch, 4);
        let round: SyncStateSet = json::from_slice("sss", &json::to_vec(&s)).unwrap();
        assert_eq!(round, s);
    }
}
