//! Vostok's operations requests (docs/commands.md#vostok-operations): where a message
//! is, browsing, removing and resending waiting messages, a group's lag and the
//! connected applications. Admin-only when ACL is on (they have no row in `access`).

use vostok_remoting::protocol::body::{BrowseBody, ConnectedClientsBody, OperationResultBody};
use vostok_remoting::protocol::header::{
    BrowseMessagesRequestHeader, GroupLagRequestHeader, MessageStatusRequestHeader,
    RemoveMessageRequestHeader, ResendDlqMessageRequestHeader,
};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_header, error, refused};
use crate::ops::browse::Browse;
use crate::ops::lag::LagOf;
use crate::ops::message_status::FindMessage;
use crate::ops::remove::RemoveMessage;
use crate::ops::resend::ResendDlq;
use crate::ops::{self, Operator};
use crate::state::Broker;

/// VOSTOK_MESSAGE_STATUS.
pub(crate) fn message_status(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let h = decode_header!(request, MessageStatusRequestHeader);
    let find = FindMessage {
        topic: h.topic,
        msg_id: h.msg_id,
        key: h.key,
    };
    match ops::message_status::message_status(ops::message_status::Lookup::of(broker), &find) {
        Ok(body) => RemotingCommand::success().with_body(json::to_vec(&body)),
        Err(refusal) => refused(refusal),
    }
}

/// VOSTOK_BROWSE_MESSAGES.
pub(crate) fn browse_messages(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let h = decode_header!(request, BrowseMessagesRequestHeader);
    let browse = Browse {
        topic: h.topic,
        group: h.group,
        queue_id: h.queue_id,
        max: h.max_count.unwrap_or(32).max(1) as usize,
    };
    match ops::browse::browse(&broker.storage, &broker.consumers, &browse) {
        Ok(messages) => {
            RemotingCommand::success().with_body(json::to_vec(&BrowseBody { messages }))
        }
        Err(refusal) => refused(refusal),
    }
}

/// VOSTOK_REMOVE_MESSAGE.
pub(crate) async fn remove_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let h = decode_header!(request, RemoveMessageRequestHeader);
    let remove = RemoveMessage {
        topic: h.topic,
        queue_id: h.queue_id,
        queue_offset: h.queue_offset,
    };
    let by = Operator::Remoting(channel.peer_addr());
    match ops::remove::remove_message(
        &broker.storage,
        &broker.config,
        broker.broker_addr,
        &by,
        remove,
    )
    .await
    {
        Ok(r) => {
            let body = OperationResultBody {
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
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let h = decode_header!(request, ResendDlqMessageRequestHeader);
    let resend = ResendDlq {
        group: h.group,
        msg_id: h.msg_id,
    };
    let by = Operator::Remoting(channel.peer_addr());
    match ops::resend::resend_dlq(
        &broker.storage,
        &broker.observed,
        &broker.config,
        broker.broker_addr,
        &by,
        resend,
    )
    .await
    {
        Ok(body) => RemotingCommand::success().with_body(json::to_vec(&body)),
        Err(e) => error(response_code::SYSTEM_ERROR, e.to_string()),
    }
}

/// VOSTOK_GET_GROUP_LAG.
pub(crate) fn group_lag(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let h = decode_header!(request, GroupLagRequestHeader);
    let of = LagOf {
        group: h.group,
        topic: h.topic,
    };
    let lag = ops::lag::group_lag(&broker.storage, &broker.consumers, &broker.pop, &of);
    RemotingCommand::success().with_body(json::to_vec(&lag.to_body(&of.group, now_millis())))
}

/// VOSTOK_GET_CONNECTED_CLIENTS.
pub(crate) fn connected_clients(broker: &Broker) -> RemotingCommand {
    let body = ConnectedClientsBody {
        clients: broker.consumers.clients.connected_clients(),
    };
    RemotingCommand::success().with_body(json::to_vec(&body))
}
