//! Consumer-group requests: a group's progress on a broker (consume stats and
//! committed offsets) and who in the group is online.

use vostok_remoting::protocol::body::{
    quote_object_keys, ConsumeStats, ConsumerConnection, MessageQueue,
};
use vostok_remoting::protocol::header::{
    GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader, QueryConsumerOffsetRequestHeader,
};
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::api;
use crate::error::Result;

impl AdminClient {
    /// GET_CONSUME_STATS (`examineConsumeStats`) of one broker: for each queue of
    /// `topic` (or, without it, of every topic the group has offsets for there), the
    /// broker's max offset and the group's committed offset.
    pub async fn examine_consume_stats(
        &self,
        broker_addr: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<ConsumeStats> {
        let header = GetConsumeStatsRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.map(str::to_owned),
        };
        let request =
            RemotingCommand::request_with_header(request_code::GET_CONSUME_STATS, &header);
        let response = self.call(broker_addr, request).await?;
        Ok(ConsumeStats::decode(&response.body)?)
    }

    /// GET_CONSUMER_CONNECTION_LIST (`examineConsumerConnectionInfo`) of one broker:
    /// the group's online clients and their subscriptions. A group with no client
    /// connected there is CONSUMER_NOT_ONLINE.
    pub async fn examine_consumer_connection_info(
        &self,
        broker_addr: &str,
        group: &str,
    ) -> Result<ConsumerConnection> {
        let header = GetConsumerConnectionListRequestHeader {
            consumer_group: group.to_owned(),
        };
        let request = RemotingCommand::request_with_header(
            request_code::GET_CONSUMER_CONNECTION_LIST,
            &header,
        );
        let response = self.call(broker_addr, request).await?;
        Ok(ConsumerConnection::decode(&response.body)?)
    }

    /// GET_CONSUMER_RUNNING_INFO (`getConsumerRunningInfo`) through one broker the
    /// client is connected to: the client's own account of its options,
    /// subscriptions and queues (Java `ConsumerRunningInfo`, as JSON; fastjson's
    /// queue-object keys are read as strings).
    pub async fn get_consumer_running_info(
        &self,
        broker_addr: &str,
        group: &str,
        client_id: &str,
        jstack: bool,
    ) -> Result<serde_json::Value> {
        let header = GetConsumerRunningInfoRequestHeader {
            consumer_group: group.to_owned(),
            client_id: client_id.to_owned(),
            jstack_enable: Some(jstack),
        };
        let request =
            RemotingCommand::request_with_header(request_code::GET_CONSUMER_RUNNING_INFO, &header);
        let response = self.call(broker_addr, request).await?;
        let text = String::from_utf8_lossy(&response.body);
        Ok(json::from_slice(
            "ConsumerRunningInfo",
            quote_object_keys(&text).as_bytes(),
        )?)
    }

    /// QUERY_CONSUMER_OFFSET (`queryConsumerOffset`): the offset `group` committed on
    /// `mq`, `None` when it committed none (not the broker's guess for a new group).
    pub async fn query_consumer_offset(
        &self,
        broker_addr: &str,
        group: &str,
        mq: &MessageQueue,
    ) -> Result<Option<i64>> {
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            set_zero_if_not_found: Some(false),
        };
        api::query_consumer_offset(&self.remoting, broker_addr, &header, self.timeout).await
    }
}
