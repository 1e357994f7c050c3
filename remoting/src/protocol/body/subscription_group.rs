//! `SubscriptionGroupConfig` as UPDATE_AND_CREATE_SUBSCRIPTIONGROUP carries it
//! (docs/bodies.md#subscriptiongroupconfig): a consumer group's settings on a broker.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A consumer group's settings; `Default` is Java's `new SubscriptionGroupConfig()`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    pub group_name: String,
    pub consume_enable: bool,
    pub consume_from_min_enable: bool,
    pub consume_broadcast_enable: bool,
    pub consume_message_orderly: bool,
    pub retry_queue_nums: i32,
    pub retry_max_times: i32,
    pub broker_id: i64,
    pub which_broker_when_consume_slowly: i64,
    pub notify_consumer_ids_changed_enable: bool,
    pub group_sys_flag: i32,
    pub consume_timeout_minute: i32,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        SubscriptionGroupConfig {
            group_name: String::new(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            consume_message_orderly: false,
            retry_queue_nums: 1,
            retry_max_times: 16,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            group_sys_flag: 0,
            consume_timeout_minute: 15,
            attributes: BTreeMap::new(),
        }
    }
}

impl SubscriptionGroupConfig {
    /// A group with Java's defaults.
    pub fn new(group: impl Into<String>) -> Self {
        SubscriptionGroupConfig {
            group_name: group.into(),
            ..SubscriptionGroupConfig::default()
        }
    }
}

impl std::fmt::Display for SubscriptionGroupConfig {
    /// Java's `toString`, which `mqadmin updateSubGroup` prints.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let attributes: Vec<String> = self
            .attributes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        write!(
            f,
            "SubscriptionGroupConfig [groupName={}, consumeEnable={}, consumeFromMinEnable={}, \
             consumeBroadcastEnable={}, consumeMessageOrderly={}, retryQueueNums={}, \
             retryMaxTimes={}, brokerId={}, whichBrokerWhenConsumeSlowly={}, \
             notifyConsumerIdsChangedEnable={}, groupSysFlag={}, consumeTimeoutMinute={}, \
             attributes={{{}}}]",
            self.group_name,
            self.consume_enable,
            self.consume_from_min_enable,
            self.consume_broadcast_enable,
            self.consume_message_orderly,
            self.retry_queue_nums,
            self.retry_max_times,
            self.broker_id,
            self.which_broker_when_consume_slowly,
            self.notify_consumer_ids_changed_enable,
            self.group_sys_flag,
            self.consume_timeout_minute,
            attributes.join(", ")
        )
    }
}

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (`SubscriptionGroupWrapper`), the content of
/// `config/subscriptionGroup.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupWrapper {
    #[serde(default)]
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    #[serde(default)]
    pub data_version: super::DataVersion,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_defaults_and_field_names() {
        let c: SubscriptionGroupConfig =
            serde_json::from_str(r#"{"groupName":"G","retryMaxTimes":3}"#).unwrap();
        assert_eq!(c.group_name, "G");
        assert_eq!(c.retry_max_times, 3);
        assert!(c.consume_enable && c.consume_broadcast_enable);
        let json = serde_json::to_string(&c).unwrap();
        assert!(
            json.contains(r#""whichBrokerWhenConsumeSlowly":1"#),
            "{json}"
        );
        assert!(c
            .to_string()
            .starts_with("SubscriptionGroupConfig [groupName=G, consumeEnable=true"));
    }
}
