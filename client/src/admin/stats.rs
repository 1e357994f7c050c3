//! Who consumes a topic, and a broker's per-topic and per-group statistics (Apache's
//! `BrokerStatsManager`), for `statsAll`.

use serde::Deserialize;
use vostok_remoting::protocol::header::TopicRequestHeader;
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::error::Result;

/// QUERY_TOPIC_CONSUME_BY_WHO's body (Java `GroupList`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupList {
    #[serde(default)]
    pub group_list: Vec<String>,
}

/// One window of Java `BrokerStatsData`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsItem {
    #[serde(default)]
    pub sum: i64,
    #[serde(default)]
    pub tps: f64,
    #[serde(default)]
    pub avgpt: f64,
}

/// VIEW_BROKER_STATS_DATA's body (Java `BrokerStatsData`).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsData {
    #[serde(default)]
    pub stats_minute: BrokerStatsItem,
    #[serde(default)]
    pub stats_hour: BrokerStatsItem,
    #[serde(default)]
    pub stats_day: BrokerStatsItem,
}

impl BrokerStatsData {
    /// RocketMQ's `compute24HourSum`: the day's sum, else the hour's, else the
    /// minute's.
    pub fn sum_24h(&self) -> i64 {
        [self.stats_day, self.stats_hour, self.stats_minute]
            .into_iter()
            .map(|w| w.sum)
            .find(|s| *s != 0)
            .unwrap_or(0)
    }
}

impl AdminClient {
    /// QUERY_TOPIC_CONSUME_BY_WHO (`queryTopicConsumeByWho`) on one broker.
    pub async fn query_topic_consume_by_who(
        &self,
        broker_addr: &str,
        topic: &str,
    ) -> Result<GroupList> {
        let header = TopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::QUERY_TOPIC_CONSUME_BY_WHO, &header);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice("GroupList", &response.body)?)
    }

    /// VIEW_BROKER_STATS_DATA (`viewBrokerStatsData`): `stats_name` is Apache's
    /// `TOPIC_PUT_NUMS` (key: topic) or `GROUP_GET_NUMS` (key: `topic@group`).
    pub async fn view_broker_stats_data(
        &self,
        broker_addr: &str,
        stats_name: &str,
        stats_key: &str,
    ) -> Result<BrokerStatsData> {
        let mut request = RemotingCommand::request(request_code::VIEW_BROKER_STATS_DATA);
        request.ext_fields.insert("statsName", stats_name);
        request.ext_fields.insert("statsKey", stats_key);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice("BrokerStatsData", &response.body)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_24_hour_sum_falls_back_to_shorter_windows() {
        let d: BrokerStatsData = serde_json::from_str(
            r#"{"statsDay":{"sum":0,"tps":0.0,"avgpt":0.0},"statsHour":{"sum":7,"tps":0.1,"avgpt":0.0},"statsMinute":{"sum":2,"tps":1.5,"avgpt":0.0}}"#,
        )
        .unwrap();
        assert_eq!(d.sum_24h(), 7);
        assert_eq!(d.stats_minute.tps, 1.5);
        assert_eq!(BrokerStatsData::default().sum_24h(), 0);
    }
}
