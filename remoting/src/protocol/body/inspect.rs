//! Answers about a broker's own state, as the Java broker writes them
//! (docs/commands.md#broker-inspection): [`ConsumeStatsList`]
//! (GET_BROKER_CONSUME_STATS), [`QueryConsumeQueueResponseBody`]
//! (QUERY_CONSUME_QUEUE), [`HaRuntimeInfo`] (GET_BROKER_HA_STATUS),
//! [`SetMessageRequestModeRequestBody`] (SET_MESSAGE_REQUEST_MODE) and
//! [`GetConsumerStatusBody`] (GET_CONSUMER_STATUS_FROM_CLIENT). The consume stats and
//! the consumer status key maps by `MessageQueue` objects (see `queue_table`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::queue_table::{parse_message_queue, quote_object_keys, RawQueueTable};
use super::{java_enum, ConsumeStats, MessageQueue, OffsetWrapper, SubscriptionData};
use crate::error::DecodeError;
use crate::protocol::json;

impl ConsumeStats {
    /// The fastjson form, `MessageQueue` objects as keys, as Java tools read it.
    pub fn encode(&self) -> String {
        let mut out = String::from("{\"consumeTps\":");
        out.push_str(&json_f64(self.consume_tps));
        out.push_str(",\"offsetTable\":{");
        for (i, (mq, offsets)) in self.offset_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&String::from_utf8_lossy(&json::to_vec(mq)));
            out.push(':');
            out.push_str(&String::from_utf8_lossy(&json::to_vec(offsets)));
        }
        out.push_str("}}");
        out
    }

    /// Messages the group has yet to consume: broker offset minus consumer offset.
    pub fn total_diff(&self) -> i64 {
        self.offset_table
            .values()
            .map(|o| o.broker_offset - o.consumer_offset)
            .sum()
    }

    /// Messages pulled but not yet committed: pull offset minus consumer offset.
    pub fn total_inflight_diff(&self) -> i64 {
        self.offset_table
            .values()
            .map(|o| (o.pull_offset - o.consumer_offset).max(0))
            .sum()
    }
}

/// A float as JSON: finite, with a decimal point as fastjson writes doubles.
fn json_f64(v: f64) -> String {
    if !v.is_finite() {
        return "0.0".into();
    }
    let text = v.to_string();
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

/// GET_BROKER_CONSUME_STATS body: for each subscription group, the consume stats of
/// each topic it has offsets on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumeStatsList {
    pub consume_stats_list: Vec<BTreeMap<String, Vec<ConsumeStats>>>,
    pub broker_addr: String,
    pub total_diff: i64,
    pub total_inflight_diff: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConsumeStatsList {
    #[serde(default)]
    consume_stats_list: Vec<BTreeMap<String, Vec<RawQueueTable<OffsetWrapper>>>>,
    #[serde(default)]
    broker_addr: String,
    #[serde(default)]
    total_diff: i64,
    #[serde(default)]
    total_inflight_diff: i64,
}

impl ConsumeStatsList {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::from("{\"brokerAddr\":");
        out.push_str(&String::from_utf8_lossy(&json::to_vec(&self.broker_addr)));
        out.push_str(",\"consumeStatsList\":[");
        for (i, groups) in self.consume_stats_list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            for (j, (group, stats)) in groups.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push_str(&String::from_utf8_lossy(&json::to_vec(group)));
                out.push_str(":[");
                let encoded: Vec<String> = stats.iter().map(ConsumeStats::encode).collect();
                out.push_str(&encoded.join(","));
                out.push(']');
            }
            out.push('}');
        }
        out.push_str(&format!(
            "],\"totalDiff\":{},\"totalInflightDiff\":{}}}",
            self.total_diff, self.total_inflight_diff
        ));
        out.into_bytes()
    }

    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        const WHAT: &str = "ConsumeStatsList";
        let text = std::str::from_utf8(body).map_err(|e| DecodeError::Invalid {
            what: WHAT,
            reason: format!("not UTF-8: {e}"),
        })?;
        let raw: RawConsumeStatsList = json::from_slice(WHAT, quote_object_keys(text).as_bytes())?;
        let mut list = Vec::with_capacity(raw.consume_stats_list.len());
        for groups in raw.consume_stats_list {
            let mut decoded = BTreeMap::new();
            for (group, stats) in groups {
                let stats = stats
                    .into_iter()
                    .map(|s| {
                        let consume_tps = s.consume_tps;
                        Ok(ConsumeStats {
                            offset_table: s.queues(WHAT)?,
                            consume_tps,
                        })
                    })
                    .collect::<Result<Vec<_>, DecodeError>>()?;
                decoded.insert(group, stats);
            }
            list.push(decoded);
        }
        Ok(ConsumeStatsList {
            consume_stats_list: list,
            broker_addr: raw.broker_addr,
            total_diff: raw.total_diff,
            total_inflight_diff: raw.total_inflight_diff,
        })
    }
}

/// One entry of a consume queue (`ConsumeQueueData`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeQueueData {
    /// Vostok: the entry's queue offset (Java tools count from the requested index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_offset: Option<i64>,
    /// Commitlog offset of the message.
    pub physic_offset: i64,
    pub physic_size: i32,
    pub tags_code: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend_data_json: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bit_map: Option<String>,
    /// With a consumer group: whether the entry matches its subscription.
    #[serde(default)]
    pub eval: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
}

/// QUERY_CONSUME_QUEUE body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryConsumeQueueResponseBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_data: Option<SubscriptionData>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_data: Option<String>,
    #[serde(default)]
    pub queue_data: Vec<ConsumeQueueData>,
    pub max_queue_index: i64,
    pub min_queue_index: i64,
}

/// GET_BROKER_HA_STATUS body (`HARuntimeInfo`): a master's view of its slaves, or a
/// slave's of its master.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HaRuntimeInfo {
    pub master: bool,
    #[serde(default)]
    pub master_commit_log_max_offset: i64,
    #[serde(default)]
    pub in_sync_slave_nums: i32,
    #[serde(default)]
    pub ha_connection_info: Vec<HaConnectionRuntimeInfo>,
    #[serde(default)]
    pub ha_client_runtime_info: HaClientRuntimeInfo,
}

/// One slave connected to a master (`HAConnectionRuntimeInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HaConnectionRuntimeInfo {
    pub addr: String,
    pub slave_ack_offset: i64,
    /// Bytes the slave is behind the master's end.
    pub diff: i64,
    pub in_sync: bool,
    #[serde(default)]
    pub transferred_byte_in_second: i64,
    /// Where the transfer to this slave started (commitlog offset).
    #[serde(default)]
    pub transfer_from_where: i64,
}

/// A slave's connection to its master (`HAClientRuntimeInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HaClientRuntimeInfo {
    #[serde(default)]
    pub master_addr: Option<String>,
    #[serde(default)]
    pub transferred_byte_in_second: i64,
    #[serde(default)]
    pub max_offset: i64,
    #[serde(default)]
    pub last_read_timestamp: i64,
    #[serde(default)]
    pub last_write_timestamp: i64,
    #[serde(default)]
    pub master_flush_offset: i64,
    #[serde(default)]
    pub is_activated: bool,
}

java_enum! {
    /// How a group's consumers get messages of a topic (`MessageRequestMode`).
    #[derive(PartialOrd, Ord)]
    pub enum MessageRequestMode {
        Pull = "PULL",
        Pop = "POP",
    }
}

/// SET_MESSAGE_REQUEST_MODE body, and one entry of GET_ALL_MESSAGE_REQUEST_MODE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetMessageRequestModeRequestBody {
    pub topic: String,
    pub consumer_group: String,
    #[serde(default = "pull")]
    pub mode: MessageRequestMode,
    /// POP mode: how many consumers share each queue (0 or less: none).
    #[serde(default)]
    pub pop_share_queue_num: i32,
}

fn pull() -> MessageRequestMode {
    MessageRequestMode::Pull
}

/// QUERY_ASSIGNMENT body: the broker assigns a consumer its queues of a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryAssignmentRequestBody {
    pub topic: String,
    pub consumer_group: String,
    pub client_id: String,
    /// The allocation strategy's name (`AVG`, `AVG_BY_CIRCLE`).
    #[serde(default)]
    pub strategy_name: String,
    #[serde(default = "clustering")]
    pub message_model: super::MessageModel,
}

fn clustering() -> super::MessageModel {
    super::MessageModel::Clustering
}

/// One queue assigned, and how to read it (`MessageQueueAssignment`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueueAssignment {
    pub message_queue: MessageQueue,
    #[serde(default = "pull")]
    pub mode: MessageRequestMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<BTreeMap<String, String>>,
}

/// QUERY_ASSIGNMENT answer; no assignments (`null`) tells the client to keep what it has.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryAssignmentResponseBody {
    #[serde(default)]
    pub message_queue_assignments: Option<Vec<MessageQueueAssignment>>,
}

/// GET_CONSUMER_STATUS_FROM_CLIENT answer: a client's offsets of a topic's queues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetConsumerStatusBody {
    pub message_queue_table: BTreeMap<MessageQueue, i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConsumerStatusBody {
    #[serde(default)]
    message_queue_table: BTreeMap<String, i64>,
}

impl GetConsumerStatusBody {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        const WHAT: &str = "GetConsumerStatusBody";
        let text = std::str::from_utf8(body).map_err(|e| DecodeError::Invalid {
            what: WHAT,
            reason: format!("not UTF-8: {e}"),
        })?;
        let raw: RawConsumerStatusBody =
            json::from_slice(WHAT, quote_object_keys(text).as_bytes())?;
        let message_queue_table = raw
            .message_queue_table
            .into_iter()
            .map(|(k, v)| Ok((parse_message_queue(WHAT, &k)?, v)))
            .collect::<Result<_, DecodeError>>()?;
        Ok(GetConsumerStatusBody {
            message_queue_table,
        })
    }

    /// The fastjson form, `MessageQueue` objects as keys.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::from("{\"messageQueueTable\":{");
        for (i, (mq, offset)) in self.message_queue_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&String::from_utf8_lossy(&json::to_vec(mq)));
            out.push_str(&format!(":{offset}"));
        }
        out.push_str("}}");
        out.into_bytes()
    }
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS answer: each client's offsets, by client id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerStatusTable {
    pub consumer_table: BTreeMap<String, BTreeMap<MessageQueue, i64>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConsumerStatusTable {
    #[serde(default)]
    consumer_table: BTreeMap<String, BTreeMap<String, i64>>,
}

impl ConsumerStatusTable {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        const WHAT: &str = "GetConsumerStatusBody";
        let text = std::str::from_utf8(body).map_err(|e| DecodeError::Invalid {
            what: WHAT,
            reason: format!("not UTF-8: {e}"),
        })?;
        let raw: RawConsumerStatusTable =
            json::from_slice(WHAT, quote_object_keys(text).as_bytes())?;
        let mut consumer_table = BTreeMap::new();
        for (client, queues) in raw.consumer_table {
            let queues = queues
                .into_iter()
                .map(|(k, v)| Ok((parse_message_queue(WHAT, &k)?, v)))
                .collect::<Result<_, DecodeError>>()?;
            consumer_table.insert(client, queues);
        }
        Ok(ConsumerStatusTable { consumer_table })
    }

    /// The fastjson form (`{"consumerTable":{clientId:{mq:offset}},"messageQueueTable":{}}`).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::from("{\"consumerTable\":{");
        for (i, (client, queues)) in self.consumer_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&String::from_utf8_lossy(&json::to_vec(client)));
            out.push_str(":{");
            for (j, (mq, offset)) in queues.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                out.push_str(&String::from_utf8_lossy(&json::to_vec(mq)));
                out.push_str(&format!(":{offset}"));
            }
            out.push('}');
        }
        out.push_str("},\"messageQueueTable\":{}}");
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_stats_list_round_trips_in_fastjson_form() {
        let mut stats = ConsumeStats {
            consume_tps: 1.5,
            ..ConsumeStats::default()
        };
        stats.offset_table.insert(
            MessageQueue::new("T", "b", 1),
            OffsetWrapper {
                broker_offset: 9,
                consumer_offset: 4,
                pull_offset: 6,
                last_timestamp: 1_700_000_000_000,
            },
        );
        let list = ConsumeStatsList {
            consume_stats_list: vec![[("G".to_owned(), vec![stats.clone()])].into()],
            broker_addr: "127.0.0.1:10911".into(),
            total_diff: stats.total_diff(),
            total_inflight_diff: stats.total_inflight_diff(),
        };
        let bytes = list.encode();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.contains(r#"{"topic":"T","brokerName":"b","queueId":1}:{"#),
            "{text}"
        );
        assert_eq!(ConsumeStatsList::decode(&bytes).unwrap(), list);
        assert_eq!((list.total_diff, list.total_inflight_diff), (5, 2));
        assert!(ConsumeStatsList::decode(b"{\"consumeStatsList\":[{\"G\":[{").is_err());
    }

    #[test]
    fn consumer_status_tables_round_trip() {
        let mut one = GetConsumerStatusBody::default();
        one.message_queue_table
            .insert(MessageQueue::new("T", "b", 0), 7);
        assert_eq!(GetConsumerStatusBody::decode(&one.encode()).unwrap(), one);
        let table = ConsumerStatusTable {
            consumer_table: [("c@1".to_owned(), one.message_queue_table.clone())].into(),
        };
        assert_eq!(ConsumerStatusTable::decode(&table.encode()).unwrap(), table);
    }

    #[test]
    fn request_mode_reads_names_and_ordinals() {
        let body: SetMessageRequestModeRequestBody =
            serde_json::from_str(r#"{"topic":"T","consumerGroup":"G","mode":1}"#).unwrap();
        assert_eq!(body.mode, MessageRequestMode::Pop);
        let body: SetMessageRequestModeRequestBody =
            serde_json::from_str(r#"{"topic":"T","consumerGroup":"G"}"#).unwrap();
        assert_eq!(body.mode, MessageRequestMode::Pull);
    }
}
