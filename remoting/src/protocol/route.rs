//! Route data: what the name server answers about topics and clusters
//! (docs/bodies.md#topicroutedata, #clusterinfo).
//!
//! Field order follows fastjson's alphabetical order; maps are sorted so that the
//! output is deterministic. Serialised compactly with quoted keys (see [`super::json`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::topic::{perm, MASTER_ID};

/// `GET_ROUTEINFO_BY_TOPIC` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicRouteData {
    #[serde(default)]
    pub broker_datas: Vec<BrokerData>,
    #[serde(default)]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    #[serde(default)]
    pub queue_datas: Vec<QueueData>,
}

/// Queues one broker name serves for a topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    pub broker_name: String,
    pub perm: i32,
    pub read_queue_nums: i32,
    #[serde(default)]
    pub topic_sys_flag: i32,
    pub write_queue_nums: i32,
}

/// One broker name: its cluster and the address of each broker id (0 = master).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerData {
    #[serde(default)]
    pub broker_addrs: BTreeMap<i64, String>,
    pub broker_name: String,
    #[serde(default)]
    pub cluster: String,
    #[serde(default)]
    pub enable_acting_master: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

impl BrokerData {
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&MASTER_ID).map(String::as_str)
    }

    /// The master, else the lowest-numbered slave (where a consumer may still read).
    pub fn select_addr(&self) -> Option<&str> {
        self.master_addr()
            .or_else(|| self.broker_addrs.values().next().map(String::as_str))
    }
}

impl TopicRouteData {
    /// Parses a route body, in standard JSON or with fastjson's bare integer keys.
    pub fn decode(body: &[u8]) -> Result<Self, crate::error::DecodeError> {
        super::json::from_slice("TopicRouteData", body)
    }

    pub fn encode(&self) -> Vec<u8> {
        super::json::to_vec(self)
    }

    pub fn broker(&self, broker_name: &str) -> Option<&BrokerData> {
        self.broker_datas
            .iter()
            .find(|b| b.broker_name == broker_name)
    }

    /// Writable queues of brokers that have a master, as the Java producer builds its
    /// publish list: `(broker name, queue id)` in broker order.
    pub fn write_queues(&self) -> Vec<(String, i32)> {
        let mut queue_datas: Vec<&QueueData> = self.queue_datas.iter().collect();
        queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        let mut out = Vec::new();
        for qd in queue_datas {
            if !perm::is_writeable(qd.perm) {
                continue;
            }
            if self
                .broker(&qd.broker_name)
                .and_then(BrokerData::master_addr)
                .is_none()
            {
                continue;
            }
            out.extend((0..qd.write_queue_nums).map(|q| (qd.broker_name.clone(), q)));
        }
        out
    }

    /// Readable queues, as the Java consumer builds its subscribe list.
    pub fn read_queues(&self) -> Vec<(String, i32)> {
        let mut out = Vec::new();
        for qd in &self.queue_datas {
            if perm::is_readable(qd.perm) {
                out.extend((0..qd.read_queue_nums).map(|q| (qd.broker_name.clone(), q)));
            }
        }
        out
    }
}

/// `GET_BROKER_CLUSTER_INFO` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    #[serde(default)]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    #[serde(default)]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

impl ClusterInfo {
    pub fn decode(body: &[u8]) -> Result<Self, crate::error::DecodeError> {
        super::json::from_slice("ClusterInfo", body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STANDARD: &str = r#"{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;

    #[test]
    fn encodes_compact_standard_json_byte_for_byte() {
        let route = TopicRouteData {
            broker_datas: vec![BrokerData {
                broker_addrs: [(0, "10.0.0.1:10911".to_owned())].into(),
                broker_name: "broker-a".into(),
                cluster: "DefaultCluster".into(),
                enable_acting_master: false,
                zone_name: None,
            }],
            filter_server_table: BTreeMap::new(),
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                perm: 6,
                read_queue_nums: 8,
                topic_sys_flag: 0,
                write_queue_nums: 8,
            }],
        };
        assert_eq!(String::from_utf8(route.encode()).unwrap(), STANDARD);
        assert_eq!(TopicRouteData::decode(STANDARD.as_bytes()).unwrap(), route);
    }

    #[test]
    fn decodes_the_old_bare_key_form() {
        let old = STANDARD.replace("{\"0\":", "{0:");
        let route = TopicRouteData::decode(old.as_bytes()).unwrap();
        assert_eq!(route.broker_datas[0].master_addr(), Some("10.0.0.1:10911"));
        assert_eq!(route.write_queues().len(), 8);
    }

    #[test]
    fn queues_skip_brokers_without_master_or_permission() {
        let mut route = TopicRouteData::decode(STANDARD.as_bytes()).unwrap();
        route.queue_datas[0].perm = perm::READ;
        assert!(route.write_queues().is_empty());
        assert_eq!(route.read_queues().len(), 8);
        route.queue_datas[0].perm = 6;
        route.broker_datas[0].broker_addrs = [(1, "x:1".to_owned())].into();
        assert!(route.write_queues().is_empty());
    }
}
