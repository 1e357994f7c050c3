//! AckMessage, ChangeInvisibleDuration and ForwardMessageToDeadLetterQueue (Apache's
//! `AckMessageActivity`, `ChangeInvisibleDurationActivity`,
//! `ForwardMessageToDLQActivity`; docs/grpc.md#receipt-handles): the receipt handle names
//! the POP checkpoint (`crate::ops::pop`), its 9th field the message's commitlog offset.

use vostok_remoting::protocol::pop::ExtraInfo;

use super::context::RequestContext;
use super::convert::millis_of_duration;
use super::endpoint::GrpcService;
use super::proto::{
    AckMessageRequest, AckMessageResponse, AckMessageResultEntry, ChangeInvisibleDurationRequest,
    ChangeInvisibleDurationResponse, Code, ForwardMessageToDeadLetterQueueRequest,
    ForwardMessageToDeadLetterQueueResponse, Status,
};
use super::status::{from_refusal, from_remoting, ok, status};
use crate::ops::pop::{self, PopError, PopTables};
use crate::ops::send::SendTables;
use crate::ops::send_back::{send_back, SendBack};
use crate::ops::Client;

/// Longest invisible time a change may ask (Apache's `maxInvisibleTimeMills`).
const MAX_INVISIBLE_MS: i64 = 12 * 3600 * 1000;

/// A receipt handle taken apart: the POP handle, the message's queue offset and its
/// commitlog offset.
struct Handle {
    extra: ExtraInfo,
    offset: i64,
    commit_log_offset: Option<i64>,
}

fn parse_handle(text: &str) -> Result<Handle, Status> {
    let invalid = |why: String| {
        status(
            Code::InvalidReceiptHandle,
            format!("receipt handle is invalid: {why}"),
        )
    };
    let extra = ExtraInfo::parse(text.trim()).map_err(invalid)?;
    let offset = extra
        .queue_offset
        .ok_or_else(|| invalid("no queue offset".into()))?;
    let commit_log_offset = commit_log_offset_of(text);
    Ok(Handle {
        extra,
        offset,
        commit_log_offset,
    })
}

/// The commitlog offset a receipt handle carries (its 9th field), when it does.
pub(super) fn commit_log_offset_of(handle: &str) -> Option<i64> {
    handle.trim().split(' ').nth(8).and_then(|v| v.parse().ok())
}

fn pop_status(e: PopError) -> Status {
    from_remoting(e.code, &e.remark)
}

pub(crate) async fn ack_message(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: AckMessageRequest,
) -> AckMessageResponse {
    let group = ctx.name_of(request.group.as_ref());
    let topic = ctx.name_of(request.topic.as_ref());
    let mut entries = Vec::with_capacity(request.entries.len());
    for entry in request.entries {
        let result = async {
            let handle = parse_handle(&entry.receipt_handle)?;
            let read_topic = handle.extra.retry.real_topic(&topic, &group);
            pop::ack::ack(
                PopTables::of(&svc.broker),
                &group,
                &read_topic,
                handle.extra.queue_id,
                handle.offset,
                &handle.extra,
            )
            .await
            .map_err(pop_status)
        }
        .await;
        entries.push(AckMessageResultEntry {
            message_id: entry.message_id,
            receipt_handle: entry.receipt_handle,
            status: Some(result.err().unwrap_or_else(ok)),
        });
    }
    let mut codes: Vec<i32> = entries
        .iter()
        .map(|e| e.status.as_ref().map_or(0, |s| s.code))
        .collect();
    codes.sort_unstable();
    codes.dedup();
    let status = match codes.as_slice() {
        [] => ok(),
        [_] => entries[0].status.clone().unwrap_or_else(ok),
        _ => status(Code::MultipleResults, "MULTIPLE_RESULTS"),
    };
    AckMessageResponse {
        status: Some(status),
        entries,
    }
}

pub(crate) async fn change_invisible_duration(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: ChangeInvisibleDurationRequest,
) -> ChangeInvisibleDurationResponse {
    let result = change(svc, ctx, &request).await;
    match result {
        Ok(handle) => ChangeInvisibleDurationResponse {
            status: Some(ok()),
            receipt_handle: handle,
        },
        Err(status) => ChangeInvisibleDurationResponse {
            status: Some(status),
            receipt_handle: String::new(),
        },
    }
}

async fn change(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: &ChangeInvisibleDurationRequest,
) -> Result<String, Status> {
    let group = ctx.name_of(request.group.as_ref());
    let topic = ctx.name_of(request.topic.as_ref());
    let handle = parse_handle(&request.receipt_handle)?;
    let invisible_ms = request
        .invisible_duration
        .as_ref()
        .map(millis_of_duration)
        .unwrap_or(0);
    if !(0..=MAX_INVISIBLE_MS).contains(&invisible_ms) {
        return Err(status(
            Code::IllegalInvisibleTime,
            format!("the invisibleTime must be between 0 and {MAX_INVISIBLE_MS} ms"),
        ));
    }
    let read_topic = handle.extra.retry.real_topic(&topic, &group);
    let changed = pop::invisible::change_invisible_time(
        PopTables::of(&svc.broker),
        &group,
        &read_topic,
        handle.extra.queue_id,
        handle.offset,
        &handle.extra,
        invisible_ms,
    )
    .await
    .map_err(pop_status)?;
    // A plain pop's new checkpoint starts at the message itself, so the new handle
    // names it by the message's offset (docs/grpc.md#receipt-handles).
    let ck_queue_offset = if handle.extra.is_order() {
        handle.extra.ck_queue_offset
    } else {
        handle.offset
    };
    let extra = ExtraInfo {
        ck_queue_offset,
        pop_time: changed.pop_time,
        invisible_time: changed.invisible_time,
        revive_qid: changed.revive_qid,
        ..handle.extra
    };
    Ok(match handle.commit_log_offset {
        Some(c) => format!("{extra} {c}"),
        None => extra.to_string(),
    })
}

pub(crate) async fn forward_to_dlq(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: ForwardMessageToDeadLetterQueueRequest,
) -> ForwardMessageToDeadLetterQueueResponse {
    let result = async {
        let group = ctx.name_of(request.group.as_ref());
        let topic = ctx.name_of(request.topic.as_ref());
        let handle = parse_handle(&request.receipt_handle)?;
        let Some(commit_log_offset) = handle.commit_log_offset else {
            return Err(status(
                Code::InvalidReceiptHandle,
                "receipt handle is invalid: no commitlog offset",
            ));
        };
        // Straight to the group's DLQ (delay level −1), then acked.
        let back = SendBack {
            offset: commit_log_offset,
            group: group.clone(),
            delay_level: -1,
            origin_topic: Some(topic.clone()),
            max_reconsume_times: Some(request.max_delivery_attempts.saturating_sub(1).max(0)),
        };
        let session = svc.session_channel(ctx);
        let client = Client {
            addr: ctx.remote,
            connection: session.as_ref(),
        };
        send_back(SendTables::of(&svc.broker), client, back)
            .await
            .map_err(from_refusal)?;
        let read_topic = handle.extra.retry.real_topic(&topic, &group);
        pop::ack::ack(
            PopTables::of(&svc.broker),
            &group,
            &read_topic,
            handle.extra.queue_id,
            handle.offset,
            &handle.extra,
        )
        .await
        .map_err(pop_status)
    }
    .await;
    ForwardMessageToDeadLetterQueueResponse {
        status: Some(result.err().unwrap_or_else(ok)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_handle_carries_the_commitlog_offset() {
        let h = parse_handle("3 1700000000000 30000 2 0 broker-a 1 5 4096").unwrap();
        assert_eq!(h.offset, 5);
        assert_eq!(h.commit_log_offset, Some(4096));
        assert_eq!(h.extra.queue_id, 1);
        let e = parse_handle("garbage").err().unwrap();
        assert_eq!(e.code, Code::InvalidReceiptHandle as i32);
        assert!(parse_handle("3 1 2 3 0 b 1").is_err(), "no queue offset");
    }
}
