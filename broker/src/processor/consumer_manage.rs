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

use super::{decode_body, decode_header, error, refused, success_with};
use crate::ops::offset::{commit_offset, query_offset, CommitOffset, QueryOffset};
use crate::ops::Client;
use crate::state::Broker;

pub(crate) fn get_consumer_list_by_group(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetConsumerListByGroupRequestHeader);
    let ids = broker
        .consumers
        .clients
        .consumer_ids(&header.consumer_group);
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
    let commit = CommitOffset {
        group: header.consumer_group,
        topic: header.topic,
        queue_id: header.queue_id,
        offset: header.commit_offset,
        topic_must_exist: true,
    };
    match commit_offset(
        &broker.consumers,
        &broker.storage.topics,
        Client::on(channel),
        &commit,
    ) {
        Ok(()) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
}

pub(crate) fn query_consumer_offset(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, QueryConsumerOffsetRequestHeader);
    let query = QueryOffset {
        group: header.consumer_group,
        topic: header.topic,
        queue_id: header.queue_id,
        zero_if_not_found: header.set_zero_if_not_found != Some(false),
    };
    match query_offset(&broker.consumers.offsets, &broker.storage.store, &query) {
        Ok(offset) => success_with(&QueryConsumerOffsetResponseHeader { offset }),
        Err(refusal) => refused(refusal),
    }
}

pub(crate) fn get_max_offset(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, GetMaxOffsetRequestHeader);
    let offset = broker
        .storage
        .store
        .max_offset_in_queue(&header.topic, header.queue_id);
    success_with(&OffsetResponseHeader { offset })
}

pub(crate) fn get_min_offset(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, GetMinOffsetRequestHeader);
    let offset = broker
        .storage
        .store
        .min_offset_in_queue(&header.topic, header.queue_id);
    success_with(&OffsetResponseHeader { offset })
}

pub(crate) fn search_offset_by_timestamp(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, SearchOffsetRequestHeader);
    let offset = broker.storage.store.offset_in_queue_by_time(
        &header.topic,
        header.queue_id,
        header.timestamp,
    );
    success_with(&OffsetResponseHeader { offset })
}

pub(crate) fn get_earliest_msg_storetime(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetEarliestMsgStoretimeRequestHeader);
    let timestamp = broker
        .storage
        .store
        .earliest_message_time(&header.topic, header.queue_id)
        .unwrap_or(-1);
    success_with(&GetEarliestMsgStoretimeResponseHeader { timestamp })
}

pub(crate) fn lock_batch_mq(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let body = decode_body!(request, LockBatchRequestBody, "LockBatchRequestBody");
    let locked = broker.consumers.locks.try_lock_batch(
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
        .consumers
        .locks
        .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    RemotingCommand::success()
}

/// GET_ALL_CONSUMER_OFFSET: the whole offset table (slaves sync it from the master).
pub(crate) fn get_all_consumer_offset(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(broker.consumers.offsets.encode(false))
}
