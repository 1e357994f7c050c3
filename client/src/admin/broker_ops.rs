//! Operations on a broker's data: resetting a group's offsets to a time, and the
//! store's housekeeping on request.

use vostok_remoting::protocol::body::{MessageQueue, ResetOffsetBody};
use vostok_remoting::protocol::header::{
    ResetOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use vostok_remoting::protocol::request_code;
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::api;
use crate::error::Result;

impl AdminClient {
    /// INVOKE_BROKER_TO_RESET_OFFSET (`resetOffsetByTimestamp` on one broker): the
    /// group's offsets of `topic` there move to the first message stored at or after
    /// `timestamp` (`-1`: the queues' ends; without `force` only backwards), and the
    /// broker tells the group's online clients. A group with nobody online is
    /// CONSUMER_NOT_ONLINE.
    pub async fn reset_offset_by_timestamp(
        &self,
        broker_addr: &str,
        topic: &str,
        group: &str,
        timestamp: i64,
        force: bool,
    ) -> Result<ResetOffsetBody> {
        let header = ResetOffsetRequestHeader {
            topic: topic.to_owned(),
            group: group.to_owned(),
            timestamp,
            is_force: Some(force),
        };
        let request = RemotingCommand::request_with_header(
            request_code::INVOKE_BROKER_TO_RESET_OFFSET,
            &header,
        );
        let response = self.call(broker_addr, request).await?;
        Ok(ResetOffsetBody::decode(&response.body)?)
    }

    /// UPDATE_CONSUMER_OFFSET (`updateConsumeOffset`): commits `offset` for `group` on
    /// `mq`, as the tools do for a group with nobody online.
    pub async fn update_consumer_offset(
        &self,
        broker_addr: &str,
        group: &str,
        mq: &MessageQueue,
        offset: i64,
    ) -> Result<()> {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
        };
        api::update_consumer_offset(&self.remoting, broker_addr, &header, false, self.timeout).await
    }

    /// CLEAN_EXPIRED_CONSUMEQUEUE (`cleanExpiredConsumerQueueByAddr`).
    pub async fn clean_expired_consume_queue(&self, broker_addr: &str) -> Result<()> {
        let request = RemotingCommand::request(request_code::CLEAN_EXPIRED_CONSUMEQUEUE);
        self.call(broker_addr, request).await.map(drop)
    }

    /// DELETE_EXPIRED_COMMITLOG (`deleteExpiredCommitLogByAddr`).
    pub async fn delete_expired_commit_log(&self, broker_addr: &str) -> Result<()> {
        let request = RemotingCommand::request(request_code::DELETE_EXPIRED_COMMITLOG);
        self.call(broker_addr, request).await.map(drop)
    }
}
