//! Requests the broker passes on to the clients of a consumer group: to one client,
//! whose answer it returns as is (Apache's `AdminBrokerProcessor.callConsumer`),
//! GET_CONSUMER_RUNNING_INFO (307, `mqadmin consumerStatus`); to each online client,
//! whose answers it gathers (Apache's `Broker2Client.getConsumeStatus`),
//! INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223, `mqadmin getConsumerStatus`); and
//! CONSUME_MESSAGE_DIRECTLY (309) with the stored message, through
//! [`crate::ops::consume_directly`]; docs/commands.md#broker-to-client-requests.

use std::time::Duration;

use tracing::debug;
use vostok_remoting::protocol::body::{ConsumerStatusTable, GetConsumerStatusBody};
use vostok_remoting::protocol::header::{
    ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::Broker;

/// How long the client has to answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// GET_CONSUMER_RUNNING_INFO: asks client `clientId` of `consumerGroup` on its
/// connection to this broker; a client not connected here is SYSTEM_ERROR, one that
/// does not answer in time CONSUME_MSG_TIMEOUT.
pub(crate) async fn get_consumer_running_info(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetConsumerRunningInfoRequestHeader);
    let channel = broker
        .consumers
        .clients
        .consumer_group(&header.consumer_group)
        .and_then(|g| {
            g.channels
                .into_values()
                .find(|c| c.client_id == header.client_id)
        })
        .map(|c| c.channel);
    let Some(channel) = channel else {
        return error(
            response_code::SYSTEM_ERROR,
            format!(
                "The Consumer <{}> <{}> not online",
                header.consumer_group, header.client_id
            ),
        );
    };
    let relay = RemotingCommand::request_with_header(request.code, &header);
    match channel.invoke(relay, CLIENT_TIMEOUT).await {
        Ok(answer) => answer,
        Err(e) => {
            debug!(client = %header.client_id, error = %e, "consumer running info not answered");
            error(
                response_code::CONSUME_MSG_TIMEOUT,
                format!(
                    "consumer <{}> <{}> Timeout: {e}",
                    header.consumer_group, header.client_id
                ),
            )
        }
    }
}

/// CONSUME_MESSAGE_DIRECTLY: the message `msgId` (an offset id) to client `clientId`
/// of `consumerGroup` (without one, its first online client); the client's answer
/// as is.
pub(crate) async fn consume_message_directly(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ConsumeMessageDirectlyResultRequestHeader);
    let ask = crate::ops::consume_directly::ConsumeDirectly {
        group: header.consumer_group,
        client_id: header.client_id,
        msg_id: header.msg_id.unwrap_or_default(),
        topic: header.topic,
    };
    match crate::ops::consume_directly::consume_directly(
        &broker.storage,
        &broker.consumers,
        &broker.config.broker_name,
        ask,
    )
    .await
    {
        Ok(consumed) => RemotingCommand::success().with_body(consumed.body),
        Err(refusal) => super::refused(refusal),
    }
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS: asks each online client of `group` (or only
/// the one whose id is `clientAddr`) for its offsets of `topic`
/// (GET_CONSUMER_STATUS_FROM_CLIENT) and answers them by client id. A client that
/// fails to answer in time is left out; nobody online is SYSTEM_ERROR, as Apache
/// answers.
pub(crate) async fn get_consumer_status(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetConsumerStatusRequestHeader);
    let wanted = header
        .client_addr
        .as_deref()
        .filter(|c| !c.trim().is_empty());
    let clients: Vec<_> = broker
        .consumers
        .clients
        .consumer_group(&header.group)
        .map(|g| g.channels.into_values().collect())
        .unwrap_or_default();
    if clients.is_empty() {
        return error(
            response_code::SYSTEM_ERROR,
            format!(
                "No Any Consumer online in the consumer group: [{}]",
                header.group
            ),
        );
    }
    let ask = GetConsumerStatusRequestHeader {
        topic: header.topic.clone(),
        group: header.group.clone(),
        client_addr: None,
    };
    let mut table = ConsumerStatusTable::default();
    for client in clients {
        if wanted.is_some_and(|w| w != client.client_id) {
            continue;
        }
        let relay = RemotingCommand::request_with_header(
            request_code::GET_CONSUMER_STATUS_FROM_CLIENT,
            &ask,
        );
        match client.channel.invoke(relay, CLIENT_TIMEOUT).await {
            Ok(answer) if answer.code == response_code::SUCCESS => {
                match GetConsumerStatusBody::decode(&answer.body) {
                    Ok(body) => {
                        table
                            .consumer_table
                            .insert(client.client_id.clone(), body.message_queue_table);
                    }
                    Err(e) => {
                        debug!(client = %client.client_id, error = %e, "consumer status not readable")
                    }
                }
            }
            Ok(answer) => {
                debug!(client = %client.client_id, code = answer.code, "consumer status refused")
            }
            Err(e) => {
                debug!(client = %client.client_id, error = %e, "consumer status not answered")
            }
        }
        if wanted.is_some() {
            break;
        }
    }
    RemotingCommand::success().with_body(table.encode())
}
