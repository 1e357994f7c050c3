//! A broker's own state, for operators: consume stats of every group, one
//! subscription group's settings, a consume queue's entries, replication status,
//! the epoch cache, a group's request mode, what each online consumer holds, and
//! the store's housekeeping of topics it no longer has.

use vostok_remoting::protocol::body::{
    ConsumeStatsList, ConsumerStatusTable, EpochEntryCache, HaRuntimeInfo,
    QueryConsumeQueueResponseBody, SetMessageRequestModeRequestBody, SubscriptionGroupConfig,
    TopicConfig,
};
use vostok_remoting::protocol::header::{
    GetConsumeStatsInBrokerHeader, GetConsumerStatusRequestHeader,
    GetSubscriptionGroupConfigRequestHeader, QueryConsumeQueueRequestHeader,
    ResetMasterFlushOffsetHeader, TopicRequestHeader,
};
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::error::Result;

impl AdminClient {
    /// GET_BROKER_CONSUME_STATS (`fetchConsumeStatsInBroker`): every subscription
    /// group's offsets on the broker; `is_order` keeps ordered topics only.
    pub async fn fetch_consume_stats_in_broker(
        &self,
        broker_addr: &str,
        is_order: bool,
    ) -> Result<ConsumeStatsList> {
        let header = GetConsumeStatsInBrokerHeader { is_order };
        let request =
            RemotingCommand::request_with_header(request_code::GET_BROKER_CONSUME_STATS, &header);
        let response = self.call(broker_addr, request).await?;
        Ok(ConsumeStatsList::decode(&response.body)?)
    }

    /// GET_SUBSCRIPTIONGROUP_CONFIG (`examineSubscriptionGroupConfig`); a group the
    /// broker does not have is SUBSCRIPTION_GROUP_NOT_EXIST.
    pub async fn examine_subscription_group_config(
        &self,
        broker_addr: &str,
        group: &str,
    ) -> Result<SubscriptionGroupConfig> {
        let header = GetSubscriptionGroupConfigRequestHeader {
            group: group.to_owned(),
        };
        let request = RemotingCommand::request_with_header(
            request_code::GET_SUBSCRIPTIONGROUP_CONFIG,
            &header,
        );
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice("SubscriptionGroupConfig", &response.body)?)
    }

    /// GET_TOPIC_CONFIG (`examineTopicConfig`): the topic as this broker serves it.
    pub async fn examine_topic_config(
        &self,
        broker_addr: &str,
        topic: &str,
    ) -> Result<TopicConfig> {
        let header = TopicRequestHeader {
            topic: topic.to_owned(),
        };
        let request = RemotingCommand::request_with_header(request_code::GET_TOPIC_CONFIG, &header);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice("TopicConfig", &response.body)?)
    }

    /// QUERY_CONSUME_QUEUE (`queryConsumeQueue`): `count` entries of a queue from
    /// `index`; with `group`, its subscription and whether each entry matches.
    pub async fn query_consume_queue(
        &self,
        broker_addr: &str,
        header: &QueryConsumeQueueRequestHeader,
    ) -> Result<QueryConsumeQueueResponseBody> {
        let request =
            RemotingCommand::request_with_header(request_code::QUERY_CONSUME_QUEUE, header);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice(
            "QueryConsumeQueueResponseBody",
            &response.body,
        )?)
    }

    /// GET_BROKER_HA_STATUS (`getBrokerHAStatus`).
    pub async fn get_broker_ha_status(&self, broker_addr: &str) -> Result<HaRuntimeInfo> {
        let request = RemotingCommand::request(request_code::GET_BROKER_HA_STATUS);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice("HARuntimeInfo", &response.body)?)
    }

    /// GET_BROKER_EPOCH_CACHE (`getBrokerEpochCache`): controller mode only.
    pub async fn get_broker_epoch_cache(&self, broker_addr: &str) -> Result<EpochEntryCache> {
        let request = RemotingCommand::request(request_code::GET_BROKER_EPOCH_CACHE);
        let response = self.call(broker_addr, request).await?;
        Ok(json::from_slice("EpochEntryCache", &response.body)?)
    }

    /// RESET_MASTER_FLUSH_OFFSET (`resetMasterFlushOffset`): what a slave records as
    /// its master's flushed offset.
    pub async fn reset_master_flush_offset(&self, broker_addr: &str, offset: i64) -> Result<()> {
        let header = ResetMasterFlushOffsetHeader {
            master_flush_offset: Some(offset),
        };
        let request =
            RemotingCommand::request_with_header(request_code::RESET_MASTER_FLUSH_OFFSET, &header);
        self.call(broker_addr, request).await.map(drop)
    }

    /// CLEAN_UNUSED_TOPIC (`cleanUnusedTopicByAddr`): the broker removes the stored
    /// queues of topics it no longer has.
    pub async fn clean_unused_topic(&self, broker_addr: &str) -> Result<()> {
        let request = RemotingCommand::request(request_code::CLEAN_UNUSED_TOPIC);
        self.call(broker_addr, request).await.map(drop)
    }

    /// SET_MESSAGE_REQUEST_MODE (`setMessageRequestMode`).
    pub async fn set_message_request_mode(
        &self,
        broker_addr: &str,
        body: &SetMessageRequestModeRequestBody,
    ) -> Result<()> {
        let request = RemotingCommand::request(request_code::SET_MESSAGE_REQUEST_MODE)
            .with_body(json::to_vec(body));
        self.call(broker_addr, request).await.map(drop)
    }

    /// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (`getConsumeStatus` on one broker): the
    /// offsets of `topic` each online client of `group` (or only `client_id`) holds.
    pub async fn get_consume_status(
        &self,
        broker_addr: &str,
        topic: &str,
        group: &str,
        client_id: Option<&str>,
    ) -> Result<ConsumerStatusTable> {
        let header = GetConsumerStatusRequestHeader {
            topic: topic.to_owned(),
            group: group.to_owned(),
            client_addr: client_id.map(str::to_owned),
        };
        let request = RemotingCommand::request_with_header(
            request_code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            &header,
        );
        let response = self.call(broker_addr, request).await?;
        Ok(ConsumerStatusTable::decode(&response.body)?)
    }
}
