//! Requests brokers send to a client (Java `ClientRemotingProcessor`,
//! docs/commands.md#consumer-ids-changed and docs/commands.md#broker-to-client-requests),
//! served on the connections the client opened:
//!
//! | code | answer |
//! |---|---|
//! | CHECK_TRANSACTION_STATE (39) | none; the producer's listener answers with END_TRANSACTION |
//! | NOTIFY_CONSUMER_IDS_CHANGED (40) | none; rebalance now |
//! | RESET_CONSUMER_CLIENT_OFFSET (220) | none; the push consumer restarts the listed queues from the given offsets |
//! | GET_CONSUMER_STATUS_FROM_CLIENT (221) | the consumer's offsets of the topic |
//! | GET_CONSUMER_RUNNING_INFO (307) | the consumer's running info |
//! | CONSUME_MESSAGE_DIRECTLY (309) | the listener's verdict on the message |
//! | PUSH_REPLY_MESSAGE_TO_CLIENT (326) | SUCCESS; the reply completes its request |
//!
//! Anything else is answered REQUEST_CODE_NOT_SUPPORTED.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use tracing::{debug, info, warn};
use vostok_remoting::protocol::header::{
    CheckTransactionStateRequestHeader, ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader, GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader, ResetOffsetRequestHeader,
};
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{BoxFuture, Channel, RemotingCommand, RequestProcessor};

use crate::instance::ClientInstance;

/// Serves the requests brokers send to this client (Java `ClientRemotingProcessor`).
pub(crate) struct ClientProcessor {
    instance: Weak<ClientInstance>,
}

impl ClientProcessor {
    pub(crate) fn new(instance: Weak<ClientInstance>) -> Self {
        ClientProcessor { instance }
    }
}

impl RequestProcessor for ClientProcessor {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            let Some(instance) = self.instance.upgrade() else {
                return Some(RemotingCommand::response(
                    response_code::SYSTEM_ERROR,
                    "client is shut down".to_owned(),
                ));
            };
            let peer = channel.peer_addr().to_string();
            match request.code {
                request_code::CHECK_TRANSACTION_STATE => {
                    check_transaction_state(&instance, peer, request);
                    None
                }
                request_code::NOTIFY_CONSUMER_IDS_CHANGED => {
                    let group = request
                        .decode_header::<NotifyConsumerIdsChangedRequestHeader>()
                        .map(|h| h.consumer_group)
                        .unwrap_or_default();
                    info!(broker = %peer, group = %group, "consumer ids changed; rebalancing now");
                    instance.rebalance_immediately();
                    None
                }
                request_code::RESET_CONSUMER_CLIENT_OFFSET => {
                    reset_offset(&instance, peer, &request);
                    None
                }
                request_code::GET_CONSUMER_STATUS_FROM_CLIENT => {
                    Some(consumer_status(&instance, &request))
                }
                request_code::GET_CONSUMER_RUNNING_INFO => {
                    Some(consumer_running_info(&instance, &request))
                }
                request_code::CONSUME_MESSAGE_DIRECTLY => {
                    Some(consume_message_directly(&instance, request).await)
                }
                request_code::PUSH_REPLY_MESSAGE_TO_CLIENT => {
                    Some(receive_reply(&instance, request))
                }
                _ => Some(vostok_remoting::processor::not_supported(&request)),
            }
        })
    }
}

fn check_transaction_state(
    instance: &ClientInstance,
    broker_addr: String,
    request: RemotingCommand,
) {
    let header = match request.decode_header::<CheckTransactionStateRequestHeader>() {
        Ok(h) => h,
        Err(e) => {
            warn!(broker = %broker_addr, error = %e, "bad CHECK_TRANSACTION_STATE header");
            return;
        }
    };
    let msg = match MessageExt::decode(&request.body, false) {
        Ok(m) => m,
        Err(e) => {
            warn!(broker = %broker_addr, error = %e, "bad CHECK_TRANSACTION_STATE body");
            return;
        }
    };
    let Some(group) = msg.property(property::PRODUCER_GROUP).map(str::to_owned) else {
        warn!(broker = %broker_addr, "checked message has no producer group");
        return;
    };
    match instance.find_producer(&group) {
        Some(producer) => producer.check_transaction_state(broker_addr, msg, header),
        None => debug!(group = %group, "transaction check for a producer group not in this client"),
    }
}

/// RESET_CONSUMER_CLIENT_OFFSET (Java `ClientRemotingProcessor.resetOffset` and
/// `MQClientInstance.resetOffset`): brokers send it oneway; the push consumer of the
/// group drops the listed queues, waits for their listener calls, commits the new
/// offsets and takes the queues again from there. Runs in the background: the wait for
/// listener calls must not hold up the connection.
fn reset_offset(instance: &Arc<ClientInstance>, broker: String, request: &RemotingCommand) {
    let header = match request.decode_header::<ResetOffsetRequestHeader>() {
        Ok(h) => h,
        Err(e) => {
            warn!(broker = %broker, error = %e, "bad RESET_CONSUMER_CLIENT_OFFSET header");
            return;
        }
    };
    let offsets = if request.body.is_empty() {
        HashMap::new()
    } else {
        match vostok_remoting::protocol::body::ResetOffsetBody::decode(&request.body) {
            Ok(body) => body.offset_table.into_iter().collect(),
            Err(e) => {
                warn!(broker = %broker, error = %e, "bad RESET_CONSUMER_CLIENT_OFFSET body");
                return;
            }
        }
    };
    info!(broker = %broker, topic = %header.topic, group = %header.group, timestamp = header.timestamp, queues = offsets.len(), "reset offset requested");
    let Some(consumer) = instance.find_consumer(&header.group) else {
        info!(group = %header.group, "reset offset for a consumer group not in this client");
        return;
    };
    instance.tracker().spawn(async move {
        consumer.reset_offset(header.topic, offsets).await;
    });
}

/// GET_CONSUMER_STATUS_FROM_CLIENT (Java `getConsumeStatus`): the offsets the group's
/// consumer holds for the topic, as a fastjson `GetConsumerStatusBody`; an empty table
/// when the group is not here.
fn consumer_status(instance: &ClientInstance, request: &RemotingCommand) -> RemotingCommand {
    let header = match request.decode_header::<GetConsumerStatusRequestHeader>() {
        Ok(h) => h,
        Err(e) => return RemotingCommand::response(response_code::SYSTEM_ERROR, e.to_string()),
    };
    let table = instance
        .find_consumer(&header.group)
        .map(|c| c.offset_table(&header.topic))
        .unwrap_or_default();
    RemotingCommand::success().with_body(crate::consumer::offset_table::encode_consumer_status(
        &table,
    ))
}

fn consumer_running_info(instance: &ClientInstance, request: &RemotingCommand) -> RemotingCommand {
    let header = match request.decode_header::<GetConsumerRunningInfoRequestHeader>() {
        Ok(h) => h,
        Err(e) => return RemotingCommand::response(response_code::SYSTEM_ERROR, e.to_string()),
    };
    match instance.find_consumer(&header.consumer_group) {
        Some(consumer) => {
            let body = serde_json::to_vec(&consumer.running_info()).unwrap_or_default();
            RemotingCommand::success().with_body(body)
        }
        None => RemotingCommand::response(
            response_code::SYSTEM_ERROR,
            format!(
                "The Consumer Group <{}> not exist in this consumer",
                header.consumer_group
            ),
        ),
    }
}

async fn consume_message_directly(
    instance: &ClientInstance,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = match request.decode_header::<ConsumeMessageDirectlyResultRequestHeader>() {
        Ok(h) => h,
        Err(e) => return RemotingCommand::response(response_code::SYSTEM_ERROR, e.to_string()),
    };
    let msg = match MessageExt::decode(&request.body, false) {
        Ok(m) => m,
        Err(e) => return RemotingCommand::response(response_code::SYSTEM_ERROR, e.to_string()),
    };
    match instance.find_consumer(&header.consumer_group) {
        Some(consumer) => {
            let result = consumer
                .consume_message_directly(msg, header.broker_name)
                .await;
            RemotingCommand::success().with_body(serde_json::to_vec(&result).unwrap_or_default())
        }
        None => RemotingCommand::response(
            response_code::SYSTEM_ERROR,
            format!(
                "The Consumer Group <{}> not exist in this consumer",
                header.consumer_group
            ),
        ),
    }
}

/// PUSH_REPLY_MESSAGE_TO_CLIENT: the header carries the reply's fields
/// (`ReplyMessageRequestHeader`), the body its body.
fn receive_reply(instance: &ClientInstance, request: RemotingCommand) -> RemotingCommand {
    let ext = &request.ext_fields;
    let parse_addr = |key: &str| {
        ext.get(key)
            .and_then(|a| a.trim_start_matches('/').parse().ok())
            .unwrap_or_else(|| std::net::SocketAddr::from(([0, 0, 0, 0], 0)))
    };
    let num = |key: &str| {
        ext.get(key)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let Some(topic) = ext.get("topic") else {
        return RemotingCommand::response(
            response_code::SYSTEM_ERROR,
            "reply without topic".to_owned(),
        );
    };
    let mut msg = MessageExt {
        topic: topic.to_owned(),
        flag: num("flag") as i32,
        properties: vostok_remoting::protocol::message::Properties::decode(
            ext.get("properties").unwrap_or(""),
        ),
        body: request.body.clone(),
        queue_id: num("queueId") as i32,
        store_size: 0,
        queue_offset: 0,
        sys_flag: num("sysFlag") as i32,
        born_timestamp: num("bornTimestamp"),
        born_host: parse_addr("bornHost"),
        store_timestamp: num("storeTimestamp"),
        store_host: parse_addr("storeHost"),
        commit_log_offset: 0,
        body_crc: 0,
        reconsume_times: num("reconsumeTimes") as i32,
        prepared_transaction_offset: 0,
    };
    crate::message::decompress_in_place(&mut msg);
    msg.properties.insert(
        property::REPLY_MESSAGE_ARRIVE_TIME,
        vostok_remoting::support::time::now_millis().to_string(),
    );
    if !instance.reply_waiters().complete(msg) {
        debug!("reply for an unknown or expired request");
    }
    RemotingCommand::success()
}
