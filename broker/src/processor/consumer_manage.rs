//! Consumer groups, offsets and queue locks (docs/commands.md, sections "Consumer list",
//! "Consumer offsets", "Queue offsets and times" and "Queue locks").

use std::time::Instant;

use vostok_remoting::protocol::body::{
    ConsumerIdList, LockBatchRequestBody, LockBatchResponseBody,
};
use vostok_remoting::protocol::header::{
    GetConsumerListByGroupRequestHeader, GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader, GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader,
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_body, decode_header, error, success_with};
use crate::state::Broker;

pub(crate) fn get_consumer_list_by_group(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetConsumerListByGroupRequestHeader);
    let ids = broker.clients.consumer_ids(&header.consumer_group);
    if ids.is_empty() {
        return error(
            response_code::SYSTEM_ERROR,
            format!("no consumer for this group, {}", header.consumer_group),
        );
    }
    RemotingCommand::success().with_body(json::to_vec(&ConsumerIdList {
        consumer_id_list: ids,
    }))
}

pub(crate) fn update_consumer_offset(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, UpdateConsumerOffsetRequestHeader);
    if let Err(reason) = broker.find_or_create_group(&header.consumer_group, Some(channel)) {
        return error(
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!(
                "subscription group not exist, {}: {reason}",
                header.consumer_group
            ),
        );
    }
    if !broker.topics.contains(&header.topic) {
        return error(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist", header.topic),
        );
    }
    broker.offsets.commit(
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.commit_offset,
    );
    RemotingCommand::success()
}

pub(crate) fn query_consumer_offset(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, QueryConsumerOffsetRequestHeader);
    let offset = broker
        .offsets
        .query(&header.consumer_group, &header.topic, header.queue_id);
    if offset >= 0 {
        return success_with(&QueryConsumerOffsetResponseHeader { offset });
    }
    // A group that never committed starts at 0 while the queue's first message is still
    // hot, so a new CONSUME_FROM_LAST_OFFSET group still reads a young topic from the start
    // (docs/commands.md#consumer-offsets).
    if header.set_zero_if_not_found != Some(false) {
        let min = broker
            .store
            .min_offset_in_queue(&header.topic, header.queue_id);
        if min <= 0 && first_message_in_memory(broker, &header.topic, header.queue_id) {
            return success_with(&QueryConsumerOffsetResponseHeader { offset: 0 });
        }
    }
    error(
        response_code::QUERY_NOT_FOUND,
        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
    )
}

/// True when the queue's message at offset 0 is within the in-memory window, or the queue
/// is still empty (its first message will be).
fn first_message_in_memory(broker: &Broker, topic: &str, queue_id: i32) -> bool {
    let result = broker
        .store
        .get_message(topic, queue_id, 0, 1, i32::MAX, None);
    match result.messages.first() {
        Some(record) => {
            vostok_remoting::protocol::message::RecordView::parse_message(record, false)
                .is_ok_and(|view| broker.store.is_in_memory(view.physical_offset()))
        }
        None => result.max_offset <= 0,
    }
}

pub(crate) fn get_max_offset(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, GetMaxOffsetRequestHeader);
    let offset = broker
        .store
        .max_offset_in_queue(&header.topic, header.queue_id);
    success_with(&OffsetResponseHeader { offset })
}

pub(crate) fn get_min_offset(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, GetMinOffsetRequestHeader);
    let offset = broker
        .store
        .min_offset_in_queue(&header.topic, header.queue_id);
    success_with(&OffsetResponseHeader { offset })
}

pub(crate) fn search_offset_by_timestamp(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, SearchOffsetRequestHeader);
    let offset =
        broker
            .store
            .offset_in_queue_by_time(&header.topic, header.queue_id, header.timestamp);
    success_with(&OffsetResponseHeader { offset })
}

pub(crate) fn get_earliest_msg_storetime(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetEarliestMsgStoretimeRequestHeader);
    let timestamp = broker
        .store
        .earliest_message_time(&header.topic, header.queue_id)
        .unwrap_or(-1);
    success_with(&GetEarliestMsgStoretimeResponseHeader { timestamp })
}

pub(crate) fn lock_batch_mq(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let body = decode_body!(request, LockBatchRequestBody, "LockBatchRequestBody");
    let locked = broker.locks.try_lock_batch(
        &body.consumer_group,
        &body.mq_set,
        &body.client_id,
        Instant::now(),
    );
    RemotingCommand::success().with_body(json::to_vec(&LockBatchResponseBody {
        lock_ok_mq_set: locked,
    }))
}

pub(crate) fn unlock_batch_mq(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let body = decode_body!(request, LockBatchRequestBody, "UnlockBatchRequestBody");
    broker
        .locks
        .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    RemotingCommand::success()
}

/// GET_ALL_CONSUMER_OFFSET: the whole offset table (slaves sync it from the master).
pub(crate) fn get_all_consumer_offset(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(broker.offsets.encode(false))
}
