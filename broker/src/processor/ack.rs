//! ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME
//! (docs/pop.md#ack_message): the remoting front of `crate::ops::pop::ack` and
//! `crate::ops::pop::invisible`.

use vostok_remoting::protocol::body::BatchAckMessageRequestBody;
use vostok_remoting::protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
};
use vostok_remoting::protocol::pop::{ExtraInfo, RetryFlag, ORDER_REVIVE_QUEUE};
use vostok_remoting::protocol::response_code;
use vostok_remoting::RemotingCommand;

use super::{decode_body, decode_header, error, success_with};
use crate::ops::pop::ack::{ack, ack_offsets, ack_orderly};
use crate::ops::pop::invisible::change_invisible_time;
use crate::ops::pop::PopTables;
use crate::state::pop::checkpoint::CkKey;
use crate::state::Broker;

pub(crate) async fn ack_message(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, AckMessageRequestHeader);
    let extra = match ExtraInfo::parse(&header.extra_info) {
        Ok(e) => e,
        Err(e) => return error(response_code::INVALID_PARAMETER, e),
    };
    match ack(
        PopTables::of(broker),
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.offset,
        &extra,
    )
    .await
    {
        Ok(()) => RemotingCommand::success(),
        Err(e) => error(e.code, e.remark),
    }
}

/// Each entry names one checkpoint and its acked offsets as a bit set; offsets outside
/// the queue are skipped.
pub(crate) async fn batch_ack_message(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    if request.body.is_empty() {
        return error(response_code::NO_MESSAGE, "no ack in the body");
    }
    let body = decode_body!(
        request,
        BatchAckMessageRequestBody,
        "BatchAckMessageRequestBody"
    );
    if body.acks.is_empty() {
        return error(response_code::NO_MESSAGE, "no ack in the body");
    }
    let tables = PopTables::of(broker);
    for b in &body.acks {
        let Some(retry) = RetryFlag::parse(&b.retry) else {
            return error(
                response_code::INVALID_PARAMETER,
                format!("retry flag {:?} is not 0, 1 or 2", b.retry),
            );
        };
        let topic = retry.real_topic(&b.topic, &b.consumer_group);
        let store = &broker.storage.store;
        let (min, max) = (
            store.min_offset_in_queue(&topic, b.queue_id),
            store.max_offset_in_queue(&topic, b.queue_id),
        );
        let offsets: Vec<i64> = b.offsets().filter(|o| *o >= min && *o <= max).collect();
        if b.revive_queue_id == ORDER_REVIVE_QUEUE {
            for o in offsets {
                if let Err(e) =
                    ack_orderly(tables, &b.consumer_group, &topic, b.queue_id, o, b.pop_time)
                {
                    return error(e.code, e.remark);
                }
            }
            continue;
        }
        let key = CkKey {
            topic: topic.as_str().into(),
            group: b.consumer_group.as_str().into(),
            queue_id: b.queue_id,
            start_offset: b.start_offset,
            pop_time: b.pop_time,
        };
        if let Err(e) = ack_offsets(tables, &key, &offsets).await {
            return error(e.code, e.remark);
        }
    }
    RemotingCommand::success()
}

pub(crate) async fn change_message_invisible_time(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ChangeInvisibleTimeRequestHeader);
    let extra = match ExtraInfo::parse(&header.extra_info) {
        Ok(e) => e,
        Err(e) => return error(response_code::INVALID_PARAMETER, e),
    };
    match change_invisible_time(
        PopTables::of(broker),
        &header.consumer_group,
        &header.topic,
        header.queue_id,
        header.offset,
        &extra,
        header.invisible_time,
    )
    .await
    {
        Ok(changed) => success_with(&ChangeInvisibleTimeResponseHeader {
            pop_time: changed.pop_time,
            invisible_time: changed.invisible_time,
            revive_qid: changed.revive_qid,
        }),
        Err(e) => error(e.code, e.remark),
    }
}
