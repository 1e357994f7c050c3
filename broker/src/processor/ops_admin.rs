//! Vostok's operations requests (docs/commands.md#vostok-operations): where a message
//! is, browsing, removing and resending waiting messages, a group's lag and the
//! connected applications. Admin-only when ACL is on (they have no row in `access`).

use vostok_remoting::protocol::body::{BrowseBody, ConnectedClientsBody};
use vostok_remoting::protocol::header::{
    BrowseMessagesRequestHeader, GroupLagRequestHeader, MessageStatusRequestHeader,
    RemoveMessageRequestHeader, ResendDlqMessageRequestHeader,
};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::Broker;

/// VOSTOK_MESSAGE_STATUS.
pub(crate) fn message_status(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let h = decode_header!(request, MessageStatusRequestHeader);
    if h.msg_id.as_deref().unwrap_or("").is_empty() && h.key.as_deref().unwrap_or("").is_empty() {
        return error(response_code::INVALID_PARAMETER, "give msgId or key");
    }
    let body = broker.message_status(&h.topic, h.msg_id.as_deref(), h.key.as_deref());
    RemotingCommand::success().with_body(json::to_vec(&body))
}

/// VOSTOK_BROWSE_MESSAGES.
pub(crate) fn browse_messages(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let h = decode_header!(request, BrowseMessagesRequestHeader);
    if !broker.topics.contains(&h.topic) {
        return error(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist", h.topic),
        );
    }
    let max = h.max_count.unwrap_or(32).max(1) as usize;
    let messages = broker.browse(&h.topic, h.group.as_deref(), h.queue_id, max);
    RemotingCommand::success().with_body(json::to_vec(&BrowseBody { messages }))
}

/// VOSTOK_REMOVE_MESSAGE.
pub(crate) async fn remove_message(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let h = decode_header!(request, RemoveMessageRequestHeader);
    match broker
        .remove_message(&h.topic, h.queue_id, h.queue_offset)
        .await
    {
        Ok(r) => {
            tracing::info!(topic = %r.topic, queue_id = r.queue_id, queue_offset = r.queue_offset, msg_id = %r.msg_id, "message removed by an operator");
            let body = vostok_remoting::protocol::body::OperationResultBody {
                msg_id: r.msg_id,
                topic: r.topic,
                queue_id: r.queue_id,
                queue_offset: r.queue_offset,
            };
            RemotingCommand::success().with_body(json::to_vec(&body))
        }
        Err(e) => error(response_code::SYSTEM_ERROR, e.to_string()),
    }
}

/// VOSTOK_RESEND_DLQ_MESSAGE.
pub(crate) async fn resend_dlq_message(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let h = decode_header!(request, ResendDlqMessageRequestHeader);
    match broker.resend_dlq(&h.group, &h.msg_id).await {
        Ok(body) => {
            tracing::info!(group = %h.group, msg_id = %h.msg_id, topic = %body.topic, "dead-lettered message resent");
            RemotingCommand::success().with_body(json::to_vec(&body))
        }
        Err(e) => error(response_code::SYSTEM_ERROR, e.to_string()),
    }
}

/// VOSTOK_GET_GROUP_LAG.
pub(crate) fn group_lag(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let h = decode_header!(request, GroupLagRequestHeader);
    let lag = broker.group_lag(&h.group, h.topic.as_deref().filter(|t| !t.is_empty()));
    RemotingCommand::success().with_body(json::to_vec(&lag.to_body(&h.group, now_millis())))
}

/// VOSTOK_GET_CONNECTED_CLIENTS.
pub(crate) fn connected_clients(broker: &Broker) -> RemotingCommand {
    let body = ConnectedClientsBody {
        clients: broker.clients.connected_clients(),
    };
    RemotingCommand::success().with_body(json::to_vec(&body))
}
