//! POP_MESSAGE and PEEK_MESSAGE (docs/pop.md#pop_message): the remoting front of
//! `crate::ops::pop::receive`.
//!
//! A pop that finds messages answers SUCCESS with their records as the body (as a
//! pull does) and the checkpoint data in the header; one that finds none within its
//! poll time answers POLLING_TIMEOUT with remark `NO_MESSAGE_IN_QUEUE`, or POLLING_FULL
//! when it could not be held.

use bytes::BytesMut;
use vostok_remoting::protocol::body::{EXPRESSION_TYPE_ROUTING, EXPRESSION_TYPE_TAG};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::header::{
    PeekMessageRequestHeader, PopMessageRequestHeader, PopMessageResponseHeader, INIT_MODE_MIN,
};
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_header, error};
use crate::ops::pop::receive::{self, PopRequest, PopResult};
use crate::ops::pop::{consuming_group, readable_topic, PopTables};
use crate::state::consumer_filter::ExpressionMessageFilter;
use crate::state::Broker;

/// Longest hold, whatever the request asks (clients ask 15–20 s).
const MAX_POLL: std::time::Duration = std::time::Duration::from_secs(30);

pub(crate) async fn pop_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, PopMessageRequestHeader);
    drop(request);
    let now = now_millis();
    let born = header.born_time.filter(|t| *t != 0).unwrap_or(now);
    if now - born - header.poll_time > 500 {
        return error(
            response_code::POLLING_TIMEOUT,
            format!(
                "the broker[{}] pop message is timeout too much",
                broker.config.broker_ip1
            ),
        );
    }
    let filter = match header.exp.as_deref().filter(|e| !e.is_empty()) {
        None => None,
        Some(exp) => {
            let kind = header
                .exp_type
                .as_deref()
                .filter(|t| !t.is_empty())
                .unwrap_or(EXPRESSION_TYPE_TAG);
            if kind == EXPRESSION_TYPE_ROUTING {
                match ExpressionMessageFilter::routing(&header.topic, exp) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        return error(response_code::SUBSCRIPTION_PARSE_FAILED, e.to_string())
                    }
                }
            } else if kind != EXPRESSION_TYPE_TAG {
                return error(
                    response_code::SUBSCRIPTION_PARSE_FAILED,
                    format!("The broker does not support consumer to filter message by {kind}"),
                );
            } else {
                Some(ExpressionMessageFilter::new(
                    build_subscription(&header.topic, exp, 0),
                    None,
                ))
            }
        }
    };
    let poll = (born + header.poll_time - now).max(0) as u64;
    let req = PopRequest {
        group: header.consumer_group,
        topic: header.topic,
        queue_id: header.queue_id.max(-1),
        max_msgs: header.max_msg_nums,
        invisible_time: header.invisible_time,
        poll_time: std::time::Duration::from_millis(poll).min(MAX_POLL),
        init_mode: header.init_mode.unwrap_or(INIT_MODE_MIN),
        filter,
        order: header.order.unwrap_or(false),
        attempt_id: header.attempt_id.filter(|a| !a.is_empty()),
        client: Some(channel.clone()),
    };
    match receive::pop(PopTables::of(broker), &req, channel.closed()).await {
        Ok(result) => response(result, req.order),
        Err(e) => error(e.code, e.remark),
    }
}

fn response(result: PopResult, order: bool) -> RemotingCommand {
    let found = !result.messages.is_empty();
    let header = PopMessageResponseHeader {
        pop_time: result.pop_time,
        invisible_time: result.invisible_time,
        revive_qid: result.revive_qid,
        rest_num: result.rest_num.max(0),
        start_offset_info: Some(result.start_offset_info),
        msg_offset_info: Some(result.msg_offset_info),
        order_count_info: (order && !result.order_count_info.is_empty())
            .then_some(result.order_count_info),
    };
    if !found {
        return RemotingCommand::response(
            response_code::POLLING_TIMEOUT,
            Some("NO_MESSAGE_IN_QUEUE".to_owned()),
        )
        .with_header(&header);
    }
    let mut body = BytesMut::with_capacity(result.messages.iter().map(|m| m.record.len()).sum());
    for m in &result.messages {
        body.extend_from_slice(&m.record);
    }
    RemotingCommand::response(response_code::SUCCESS, Some("FOUND".to_owned()))
        .with_header(&header)
        .with_body(body.freeze())
}

/// PEEK_MESSAGE: the next messages of a queue from the group's offset, changing
/// nothing.
pub(crate) fn peek_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, PeekMessageRequestHeader);
    let topic = match readable_topic(&broker.storage.topics, &header.topic) {
        Ok(t) => t,
        Err(e) => return error(e.code, e.remark),
    };
    if let Err(e) = consuming_group(&broker.consumers, &header.consumer_group, Some(channel)) {
        return error(e.code, e.remark);
    }
    if header.queue_id >= topic.read_queue_nums || header.max_msg_nums <= 0 {
        return error(
            response_code::INVALID_PARAMETER,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}]",
                header.queue_id, header.topic, topic.read_queue_nums
            ),
        );
    }
    let queues: Vec<i32> = if header.queue_id < 0 {
        (0..topic.read_queue_nums).collect()
    } else {
        vec![header.queue_id]
    };
    let max = header.max_msg_nums.min(32) as usize;
    let mut body = BytesMut::new();
    let mut n = 0;
    let mut rest = 0;
    for q in queues {
        let store = &broker.storage.store;
        let committed = broker
            .consumers
            .offsets
            .query(&header.consumer_group, &header.topic, q);
        let from = if committed >= 0 {
            committed
        } else {
            store.min_offset_in_queue(&header.topic, q)
        };
        let got = store.get_message(&header.topic, q, from, (max - n) as i32, i32::MAX, None);
        rest += got.max_offset - got.next_begin_offset;
        for record in got.messages.iter().take(max - n) {
            body.extend_from_slice(record);
            n += 1;
        }
        if n >= max {
            break;
        }
    }
    let header = PopMessageResponseHeader {
        pop_time: now_millis(),
        rest_num: rest.max(0),
        ..Default::default()
    };
    if n == 0 {
        return RemotingCommand::response(response_code::PULL_NOT_FOUND, None).with_header(&header);
    }
    RemotingCommand::response(response_code::SUCCESS, None)
        .with_header(&header)
        .with_body(body.freeze())
}
