//! Topic administration: UPDATE_AND_CREATE_TOPIC and DELETE_TOPIC_IN_BROKER (decoded
//! for `crate::ops::topic`), GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG,
//! GET_TOPIC_STATS_INFO.

use std::sync::Arc;

use serde::Serialize;
use vostok_remoting::protocol::header::{CreateTopicRequestHeader, TopicRequestHeader};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_header, error, refused};
use crate::ops::topic::{self as op, CreateTopic, DeleteTopic};
use crate::state::Broker;

pub(crate) async fn update_and_create_topic(
    broker: &Arc<Broker>,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, CreateTopicRequestHeader);
    let create = CreateTopic {
        topic: header.topic,
        read_queue_nums: header.read_queue_nums,
        write_queue_nums: header.write_queue_nums,
        perm: header.perm,
        topic_filter_type: header.topic_filter_type,
        topic_sys_flag: header.topic_sys_flag.unwrap_or(0),
        order: header.order.unwrap_or(false),
        attributes: header.attributes,
    };
    match op::create_topic(broker, create).await {
        Ok(()) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
}

pub(crate) async fn delete_topic(
    broker: &Arc<Broker>,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, TopicRequestHeader);
    match op::delete_topic(
        broker,
        DeleteTopic {
            topic: header.topic,
        },
    )
    .await
    {
        Ok(()) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
}

pub(crate) fn get_all_topic_config(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(json::to_vec(&broker.storage.topics.wrapper()))
}

pub(crate) fn get_topic_config(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, TopicRequestHeader);
    match broker.storage.topics.get(&header.topic) {
        Some(config) => RemotingCommand::success().with_body(json::to_vec(&config)),
        None => error(
            response_code::TOPIC_NOT_EXIST,
            format!("No topic in this broker. topic: {}", header.topic),
        ),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicOffset {
    min_offset: i64,
    max_offset: i64,
    last_update_timestamp: i64,
}

/// GET_TOPIC_STATS_INFO: fastjson writes the `MessageQueue` keys of `offsetTable` as
/// objects, which Java admin tools expect; the same form is written here.
pub(crate) fn get_topic_stats_info(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, TopicRequestHeader);
    let Some(config) = broker.storage.topics.get(&header.topic) else {
        return error(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist", header.topic),
        );
    };
    let mut body = String::from("{\"offsetTable\":{");
    for queue_id in 0..config.write_queue_nums {
        if queue_id > 0 {
            body.push(',');
        }
        let mq = vostok_remoting::protocol::body::MessageQueue::new(
            &header.topic,
            &broker.config.broker_name,
            queue_id,
        );
        let min = broker
            .storage
            .store
            .min_offset_in_queue(&header.topic, queue_id);
        let max = broker
            .storage
            .store
            .max_offset_in_queue(&header.topic, queue_id);
        let last = if max > 0 {
            broker
                .storage
                .store
                .message_store_timestamp(&header.topic, queue_id, max - 1)
                .unwrap_or(0)
        } else {
            0
        };
        let offset = TopicOffset {
            min_offset: min,
            max_offset: max,
            last_update_timestamp: last,
        };
        body.push_str(&String::from_utf8_lossy(&json::to_vec(&mq)));
        body.push(':');
        body.push_str(&String::from_utf8_lossy(&json::to_vec(&offset)));
    }
    body.push_str("}}");
    RemotingCommand::success().with_body(body.into_bytes())
}
