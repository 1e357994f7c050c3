//! SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 (docs/semantics.md#request-reply,
//! Apache's `ReplyMessageProcessor`): a replier's answer to a request message, on
//! `<cluster>_REPLY_TOPIC`. The broker pushes it at once to the requesting client named
//! by `REPLY_TO_CLIENT` (PUSH_REPLY_MESSAGE_TO_CLIENT over that client's producer
//! connection) and, with `storeReplyMessageEnable`, stores it too.
//!
//! The answer says whether the push reached the requester: SYSTEM_ERROR when no
//! connection of that client is known or the push failed, as in Apache (the reply may
//! still have been stored).

use std::time::Duration;

use tracing::{debug, warn};
use vostok_remoting::protocol::header::{
    ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageResponseHeader,
};
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{Channel, RemotingCommand};
use vostok_store::MessageInner;

use super::refused;
use super::send::destination;
use crate::ops::send::check_message;
use crate::ops::stored::choose_queue;
use crate::ops::Client;
use crate::state::Broker;

/// How long the requester has to acknowledge a pushed reply (Apache's `callClient`).
const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn send_reply_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let as_send = if request.code == request_code::SEND_REPLY_MESSAGE_V2 {
        request_code::SEND_MESSAGE_V2
    } else {
        request_code::SEND_MESSAGE
    };
    let header = match SendMessageRequestHeader::decode(as_send, &request.ext_fields) {
        Ok(h) => h,
        Err(e) => return super::header_error(&request, e),
    };
    let topic_config = match check_message(broker, Client::on(channel), &destination(&header)) {
        Ok(config) => config,
        Err(refusal) => return refused(refusal),
    };
    let queue_id = choose_queue(header.queue_id, &topic_config);
    let raw = header.properties.clone().unwrap_or_default();
    let pushed = push_reply(broker, channel, &header, &raw, &request).await;
    let mut response_header = SendMessageResponseHeader {
        // "0" keeps clients from decoding an offset id that does not exist.
        msg_id: "0".to_owned(),
        queue_id,
        queue_offset: 0,
        transaction_id: None,
        batch_uniq_id: None,
        msg_region: Some(broker.config.region_id.clone()),
        trace_on: Some(broker.config.trace_on.to_string()),
    };
    if broker.config.store_reply_message_enable {
        let properties = Properties::decode(&raw).into_string();
        let msg = MessageInner {
            flag: header.flag,
            sys_flag: header.sys_flag,
            born_timestamp: header.born_timestamp,
            born_host: channel.peer_addr(),
            reconsume_times: header.reconsume_times.unwrap_or(0),
            ..MessageInner::new(
                header.topic.clone(),
                queue_id,
                request.body.clone(),
                properties,
                broker.broker_addr,
            )
        };
        let result = broker.storage.store.put_message(msg).await;
        broker.count_put(1);
        // The stored copy's place goes into the answer; its code stays the push's.
        match result.append.filter(|_| result.status.is_stored()) {
            Some(append) => {
                response_header.msg_id = append.msg_id;
                response_header.queue_offset = append.queue_offset;
            }
            None => {
                warn!(topic = %header.topic, status = result.status.as_str(), "reply message not stored")
            }
        }
    }
    match pushed {
        Ok(()) => RemotingCommand::response(response_code::SUCCESS, None),
        Err(remark) => RemotingCommand::response(response_code::SYSTEM_ERROR, remark),
    }
    .with_header(&response_header)
}

/// Pushes the reply to the client named in `REPLY_TO_CLIENT`, over a connection of
/// one of its producers; the error is the answer's remark.
async fn push_reply(
    broker: &Broker,
    channel: &Channel,
    header: &SendMessageRequestHeader,
    raw_properties: &str,
    request: &RemotingCommand,
) -> Result<(), String> {
    let mut props = Properties::decode(raw_properties);
    let Some(client_id) = props
        .get(property::MESSAGE_REPLY_TO_CLIENT)
        .map(str::to_owned)
    else {
        warn!("reply message without REPLY_TO_CLIENT");
        return Err(format!(
            "reply message properties[{}] is null",
            property::MESSAGE_REPLY_TO_CLIENT
        ));
    };
    let Some(requester) = broker
        .consumers
        .clients
        .producer_channel_of_client(&client_id)
    else {
        warn!(client = %client_id, "push reply message fail: no connection of the requester");
        return Err(format!(
            "push reply message fail, channel of <{client_id}> not found."
        ));
    };
    props.insert(property::PUSH_REPLY_TIME, now_millis().to_string());
    let born = channel.peer_addr();
    let push_header = ReplyMessageRequestHeader {
        producer_group: header.producer_group.clone(),
        topic: header.topic.clone(),
        default_topic: header.default_topic.clone(),
        default_topic_queue_nums: header.default_topic_queue_nums,
        queue_id: header.queue_id,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        flag: header.flag,
        properties: Some(props.into_string()),
        reconsume_times: header.reconsume_times,
        unit_mode: header.unit_mode,
        born_host: format!("{}:{}", born.ip(), born.port()),
        store_host: format!("{}:{}", broker.broker_addr.ip(), broker.broker_addr.port()),
        store_timestamp: now_millis(),
    };
    let push = RemotingCommand::request_with_header(
        request_code::PUSH_REPLY_MESSAGE_TO_CLIENT,
        &push_header,
    )
    .with_body(request.body.clone());
    match requester.invoke(push, PUSH_TIMEOUT).await {
        Ok(answer) if answer.code == response_code::SUCCESS => {
            debug!(client = %client_id, "reply pushed to the requester");
            Ok(())
        }
        Ok(answer) => {
            warn!(client = %client_id, code = answer.code, remark = answer.remark(), "the requester refused the reply");
            Err(format!("push reply message to {client_id} fail."))
        }
        Err(e) => {
            warn!(client = %client_id, error = %e, "push reply message failed");
            Err(format!("push reply message to {client_id} fail."))
        }
    }
}
