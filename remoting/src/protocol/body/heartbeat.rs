//! HEART_BEAT body (docs/commands.md#heartbeat).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{java_enum, lenient_i64};

java_enum! {
    /// How a consumer gets messages.
    pub enum ConsumeType {
        ConsumeActively = "CONSUME_ACTIVELY",
        ConsumePassively = "CONSUME_PASSIVELY",
        ConsumePop = "CONSUME_POP",
    }
}

java_enum! {
    /// Java enum order: BROADCASTING first.
    pub enum MessageModel {
        Broadcasting = "BROADCASTING",
        Clustering = "CLUSTERING",
    }
}

java_enum! {
    /// Where a group without a committed offset starts.
    pub enum ConsumeFromWhere {
        ConsumeFromLastOffset = "CONSUME_FROM_LAST_OFFSET",
        ConsumeFromLastOffsetAndFromMinWhenBootFirst = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        ConsumeFromMinOffset = "CONSUME_FROM_MIN_OFFSET",
        ConsumeFromMaxOffset = "CONSUME_FROM_MAX_OFFSET",
        ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET",
        ConsumeFromTimestamp = "CONSUME_FROM_TIMESTAMP",
    }
}

/// `HeartbeatData`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatData {
    #[serde(rename = "clientID")]
    pub client_id: String,
    #[serde(default)]
    pub consumer_data_set: Vec<ConsumerData>,
    #[serde(default)]
    pub heartbeat_fingerprint: i32,
    #[serde(default)]
    pub producer_data_set: Vec<ProducerData>,
    #[serde(default)]
    pub without_sub: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerData {
    pub group_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerData {
    #[serde(default = "default_consume_from_where")]
    pub consume_from_where: ConsumeFromWhere,
    #[serde(default = "default_consume_type")]
    pub consume_type: ConsumeType,
    pub group_name: String,
    #[serde(default = "default_message_model")]
    pub message_model: MessageModel,
    #[serde(default)]
    pub subscription_data_set: Vec<SubscriptionData>,
    #[serde(default)]
    pub unit_mode: bool,
}

fn default_consume_from_where() -> ConsumeFromWhere {
    ConsumeFromWhere::ConsumeFromLastOffset
}
fn default_consume_type() -> ConsumeType {
    ConsumeType::ConsumePassively
}
fn default_message_model() -> MessageModel {
    MessageModel::Clustering
}

/// Expression type of a subscription.
pub const EXPRESSION_TYPE_TAG: &str = "TAG";
pub const EXPRESSION_TYPE_SQL92: &str = "SQL92";
/// AMQP-style binding keys over the message's routing key (docs/amqp.md); a Vostok
/// expression type that Apache RocketMQ brokers refuse.
pub const EXPRESSION_TYPE_ROUTING: &str = "ROUTING";
/// The subscription expression that matches every message.
pub const SUB_ALL: &str = "*";

/// One topic subscription of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    #[serde(default)]
    pub class_filter_mode: bool,
    #[serde(default)]
    pub code_set: BTreeSet<i32>,
    #[serde(default = "default_expression_type")]
    pub expression_type: String,
    #[serde(default = "default_sub_string")]
    pub sub_string: String,
    #[serde(default, deserialize_with = "lenient_i64::deserialize")]
    pub sub_version: i64,
    #[serde(default)]
    pub tags_set: BTreeSet<String>,
    pub topic: String,
}

fn default_expression_type() -> String {
    EXPRESSION_TYPE_TAG.to_owned()
}
fn default_sub_string() -> String {
    SUB_ALL.to_owned()
}

impl HeartbeatData {
    pub fn decode(body: &[u8]) -> Result<Self, crate::error::DecodeError> {
        crate::protocol::json::from_slice("HeartbeatData", body)
    }

    pub fn encode(&self) -> Vec<u8> {
        crate::protocol::json::to_vec(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_java_heartbeat() {
        let raw = r#"{"clientID":"10.0.0.5@4242#90210","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"cg1","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,"tagsSet":["TagA"],"topic":"TopicTest"},{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000001,"tagsSet":[],"topic":"%RETRY%cg1"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}],"withoutSub":false}"#;
        let hb = HeartbeatData::decode(raw.as_bytes()).unwrap();
        assert_eq!(hb.client_id, "10.0.0.5@4242#90210");
        let cd = &hb.consumer_data_set[0];
        assert_eq!(cd.message_model, MessageModel::Clustering);
        assert!(cd.subscription_data_set[0].code_set.contains(&2598919));
        assert_eq!(hb.producer_data_set[0].group_name, "CLIENT_INNER_PRODUCER");
    }

    #[test]
    fn reads_the_cpp_heartbeat_with_ordinals() {
        // Ordinals for enums, subVersion as a string, no expressionType/classFilterMode.
        let raw = r#"{"clientID":"127.0.0.1@1","consumerDataSet":[{"consumeFromWhere":4,"consumeType":1,"groupName":"g","messageModel":1,"subscriptionDataSet":[{"codeSet":[0],"subString":"*","subVersion":"1700000000000","tagsSet":[],"topic":"T"}],"unitMode":false}],"producerDataSet":[]}"#;
        let hb = HeartbeatData::decode(raw.as_bytes()).unwrap();
        let cd = &hb.consumer_data_set[0];
        assert_eq!(
            cd.consume_from_where,
            ConsumeFromWhere::ConsumeFromFirstOffset
        );
        assert_eq!(cd.consume_type, ConsumeType::ConsumePassively);
        assert_eq!(cd.message_model, MessageModel::Clustering);
        assert_eq!(cd.subscription_data_set[0].sub_version, 1_700_000_000_000);
        assert_eq!(cd.subscription_data_set[0].expression_type, "TAG");
    }
}
