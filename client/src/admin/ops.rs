//! Vostok's operations requests (VOSTOK_*, a Vostok broker only): where a message is,
//! browse, remove, resend from the DLQ, a group's lag, the connected applications.

use serde::de::DeserializeOwned;
use vostok_remoting::protocol::body::{
    BrowseBody, ConnectedClientsBody, GroupLagBody, MessageStatusBody, OperationResultBody,
};
use vostok_remoting::protocol::header::{
    BrowseMessagesRequestHeader, GroupLagRequestHeader, MessageStatusRequestHeader,
    RemoveMessageRequestHeader, ResendDlqMessageRequestHeader,
};
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::error::Result;

impl AdminClient {
    async fn json_call<T: DeserializeOwned>(
        &self,
        addr: &str,
        request: RemotingCommand,
        what: &'static str,
    ) -> Result<T> {
        let response = self.call(addr, request).await?;
        Ok(json::from_slice(what, &response.body)?)
    }

    /// VOSTOK_MESSAGE_STATUS: a message by id (offset or unique) or key.
    pub async fn message_status(
        &self,
        broker_addr: &str,
        topic: &str,
        msg_id: Option<&str>,
        key: Option<&str>,
    ) -> Result<MessageStatusBody> {
        let header = MessageStatusRequestHeader {
            topic: topic.to_owned(),
            msg_id: msg_id.map(str::to_owned),
            key: key.map(str::to_owned),
        };
        let request =
            RemotingCommand::request_with_header(request_code::VOSTOK_MESSAGE_STATUS, &header);
        self.json_call(broker_addr, request, "MessageStatusBody")
            .await
    }

    /// VOSTOK_BROWSE_MESSAGES: waiting messages, nothing consumed.
    pub async fn browse_messages(
        &self,
        broker_addr: &str,
        header: BrowseMessagesRequestHeader,
    ) -> Result<BrowseBody> {
        let request =
            RemotingCommand::request_with_header(request_code::VOSTOK_BROWSE_MESSAGES, &header);
        self.json_call(broker_addr, request, "BrowseBody").await
    }

    /// VOSTOK_REMOVE_MESSAGE: one waiting message, so that no group receives it.
    pub async fn remove_message(
        &self,
        broker_addr: &str,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
    ) -> Result<OperationResultBody> {
        let header = RemoveMessageRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            queue_offset,
        };
        let request =
            RemotingCommand::request_with_header(request_code::VOSTOK_REMOVE_MESSAGE, &header);
        self.json_call(broker_addr, request, "OperationResultBody")
            .await
    }

    /// VOSTOK_RESEND_DLQ_MESSAGE: a dead-lettered message back to its topic.
    pub async fn resend_dlq_message(
        &self,
        broker_addr: &str,
        group: &str,
        msg_id: &str,
    ) -> Result<OperationResultBody> {
        let header = ResendDlqMessageRequestHeader {
            group: group.to_owned(),
            msg_id: msg_id.to_owned(),
        };
        let request =
            RemotingCommand::request_with_header(request_code::VOSTOK_RESEND_DLQ_MESSAGE, &header);
        self.json_call(broker_addr, request, "OperationResultBody")
            .await
    }

    /// VOSTOK_GET_GROUP_LAG: a group's lag per queue (messages and time) and DLQ size.
    pub async fn group_lag(
        &self,
        broker_addr: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<GroupLagBody> {
        let header = GroupLagRequestHeader {
            group: group.to_owned(),
            topic: topic.map(str::to_owned),
        };
        let request =
            RemotingCommand::request_with_header(request_code::VOSTOK_GET_GROUP_LAG, &header);
        self.json_call(broker_addr, request, "GroupLagBody").await
    }

    /// VOSTOK_GET_CONNECTED_CLIENTS: producers and consumers connected to a broker.
    pub async fn connected_clients(&self, broker_addr: &str) -> Result<ConnectedClientsBody> {
        let request = RemotingCommand::request(request_code::VOSTOK_GET_CONNECTED_CLIENTS);
        self.json_call(broker_addr, request, "ConnectedClientsBody")
            .await
    }
}
