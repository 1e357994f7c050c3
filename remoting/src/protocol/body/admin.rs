//! Answers of the admin requests, as the Java broker writes them:
//! [`TopicStatsTable`] (GET_TOPIC_STATS_INFO), [`ConsumeStats`] (GET_CONSUME_STATS) and
//! [`ConsumerConnection`] (GET_CONSUMER_CONNECTION_LIST). The first two key their
//! `offsetTable` by `MessageQueue` objects (see `queue_table`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::queue_table::RawQueueTable;
use super::{
    Connection, ConsumeFromWhere, ConsumeType, MessageModel, MessageQueue, SubscriptionData,
};
use crate::error::DecodeError;

/// One queue of GET_TOPIC_STATS_INFO (`TopicOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    pub min_offset: i64,
    pub max_offset: i64,
    #[serde(default)]
    pub last_update_timestamp: i64,
}

/// GET_TOPIC_STATS_INFO body: offsets of each queue, ordered as `MessageQueue`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicStatsTable {
    pub offset_table: BTreeMap<MessageQueue, TopicOffset>,
}

impl TopicStatsTable {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        const WHAT: &str = "TopicStatsTable";
        let raw: RawQueueTable<TopicOffset> = RawQueueTable::decode(WHAT, body)?;
        Ok(TopicStatsTable {
            offset_table: raw.queues(WHAT)?,
        })
    }
}

/// One queue of GET_CONSUME_STATS (`OffsetWrapper`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    pub broker_offset: i64,
    pub consumer_offset: i64,
    #[serde(default)]
    pub pull_offset: i64,
    #[serde(default)]
    pub last_timestamp: i64,
}

/// GET_CONSUME_STATS body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumeStats {
    pub offset_table: BTreeMap<MessageQueue, OffsetWrapper>,
    pub consume_tps: f64,
}

impl ConsumeStats {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        const WHAT: &str = "ConsumeStats";
        let raw: RawQueueTable<OffsetWrapper> = RawQueueTable::decode(WHAT, body)?;
        Ok(ConsumeStats {
            consume_tps: raw.consume_tps,
            offset_table: raw.queues(WHAT)?,
        })
    }
}

/// GET_CONSUMER_CONNECTION_LIST body: who is online in a group and what it subscribes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    #[serde(default)]
    pub connection_set: Vec<Connection>,
    /// Subscriptions by topic (retry topics included).
    #[serde(default)]
    pub subscription_table: BTreeMap<String, SubscriptionData>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consume_type: Option<ConsumeType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_model: Option<MessageModel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consume_from_where: Option<ConsumeFromWhere>,
}

impl ConsumerConnection {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        crate::protocol::json::from_slice("ConsumerConnection", body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATS: &str = r#"{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":5,"minOffset":0},{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}}}"#;

    #[test]
    fn reads_fastjson_object_keys() {
        let table = TopicStatsTable::decode(STATS.as_bytes()).unwrap();
        let queues: Vec<_> = table.offset_table.iter().collect();
        assert_eq!(queues.len(), 2);
        assert_eq!(queues[0].0, &MessageQueue::new("T", "broker-a", 0));
        assert_eq!(queues[1].1.max_offset, 5);
        assert_eq!(queues[1].1.last_update_timestamp, 1_700_000_000_000);
    }

    #[test]
    fn reads_consume_stats_with_tps_and_pretty_layout() {
        let raw = "{\n\t\"consumeTps\":1.5,\n\t\"offsetTable\":{ {\"brokerName\":\"b\",\"queueId\":2,\"topic\":\"T{x}\"} : {\"brokerOffset\":9,\"consumerOffset\":4,\"lastTimestamp\":0,\"pullOffset\":4}\n\t}\n}";
        let stats = ConsumeStats::decode(raw.as_bytes()).unwrap();
        assert_eq!(stats.consume_tps, 1.5);
        let (mq, offsets) = stats.offset_table.iter().next().unwrap();
        assert_eq!(mq, &MessageQueue::new("T{x}", "b", 2));
        assert_eq!((offsets.broker_offset, offsets.consumer_offset), (9, 4));
        let empty = ConsumeStats::decode(br#"{"consumeTps":0.0,"offsetTable":{}}"#).unwrap();
        assert!(empty.offset_table.is_empty());
    }

    #[test]
    fn string_keys_in_java_text_read() {
        let java_text = r#"{"offsetTable":{"MessageQueue [topic=T, brokerName=b, queueId=3]":{"maxOffset":2,"minOffset":1}}}"#;
        let table = TopicStatsTable::decode(java_text.as_bytes()).unwrap();
        assert_eq!(
            table.offset_table.keys().next(),
            Some(&MessageQueue::new("T", "b", 3))
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for raw in [
            &b"{\"offsetTable\":{{\"topic\":"[..],
            b"{\"offsetTable\":{\"nonsense\":{\"maxOffset\":1,\"minOffset\":0}}}",
            b"\xff\xfe",
            b"{\"offsetTable\":{{}:{}}}",
            b"}}]]{{",
        ] {
            assert!(TopicStatsTable::decode(raw).is_err(), "{raw:?}");
        }
    }

    #[test]
    fn reads_a_consumer_connection() {
        let raw = br#"{"connectionSet":[{"clientAddr":"127.0.0.1:5000","clientId":"c@1","language":"JAVA","version":453}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"T"},"%RETRY%g":{"subString":"*","topic":"%RETRY%g"}}}"#;
        let c = ConsumerConnection::decode(raw).unwrap();
        assert_eq!(c.connection_set[0].client_id, "c@1");
        assert_eq!(
            c.subscription_table.keys().collect::<Vec<_>>(),
            ["%RETRY%g", "T"]
        );
        assert_eq!(c.message_model, Some(MessageModel::Clustering));
        let bare = ConsumerConnection::decode(b"{}").unwrap();
        assert!(bare.subscription_table.is_empty() && bare.consume_type.is_none());
    }
}
