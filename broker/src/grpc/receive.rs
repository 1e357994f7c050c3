//! ReceiveMessage (Apache's `ReceiveMessageActivity`; docs/grpc.md#receivemessage): a
//! POP of the broker's own (`crate::ops::pop::receive`), streamed back as one `status`, a
//! `delivery_timestamp` (now) and one `message` per popped message, each with its
//! receipt handle: the POP `extraInfo` plus the message's commitlog offset
//! (docs/grpc.md#receipt-handles).
//!
//! Every receive pops every queue of the broker (queue −1), whatever queue the request
//! names, as Apache's proxy does: a FIFO group's pop takes each queue in order, a queue
//! whose last batch is not acked yet giving nothing (docs/pop.md#fifo-pop). Clients
//! name queues loosely (the Node.js simple consumer always asks for queue 0 of the
//! route), so a FIFO pop of the one queue named would leave the others unread.
//!
//! The invisible time is the request's (10 s to 12 h, as Apache's proxy bounds it);
//! with `auto_renew` and no duration it is 60 s.
//! **Vostok differs:** there is no server-side renewal: a message held longer than
//! its invisible time comes back. The poll is held up to the request's long-polling
//! timeout (at most 20 s) and ends before the call's deadline.

use std::pin::Pin;
use std::time::Duration;

use futures_util::Stream;
use vostok_remoting::protocol::header::INIT_MODE_MIN;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::time::now_millis;

use super::client::{filter_of, valid_group, valid_topic};
use super::context::RequestContext;
use super::convert::{millis_of_duration, timestamp, to_proto, Delivery};
use super::endpoint::GrpcService;
use super::proto::receive_message_response::Content;
use super::proto::settings::PubSub;
use super::proto::{Code, ReceiveMessageRequest, ReceiveMessageResponse, Status};
use super::session::CONSUMER_LONG_POLLING_MS;
use super::status::{from_remoting, ok, status};
use crate::ops::pop::receive::{pop, PopRequest};
use crate::ops::pop::{consuming_group, readable_topic, PopTables};

pub(crate) type ReceiveStream =
    Pin<Box<dyn Stream<Item = Result<ReceiveMessageResponse, tonic::Status>> + Send>>;

const MIN_INVISIBLE_MS: i64 = 10_000;
const MAX_INVISIBLE_MS: i64 = 12 * 3600 * 1000;
const AUTO_RENEW_INVISIBLE_MS: i64 = 60_000;
/// Kept between the end of the poll and the call's deadline, for the answer to travel.
const DEADLINE_RESERVE_MS: i64 = 500;

fn answer(items: Vec<ReceiveMessageResponse>) -> ReceiveStream {
    Box::pin(futures_util::stream::iter(items.into_iter().map(Ok)))
}

fn status_only(status: Status) -> ReceiveStream {
    answer(vec![ReceiveMessageResponse {
        content: Some(Content::Status(status)),
    }])
}

/// The `grpc-timeout` of the call in milliseconds (`<digits><unit>`).
pub(crate) fn deadline_ms(metadata: &tonic::metadata::MetadataMap) -> Option<i64> {
    let text = metadata.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let n: i64 = digits.parse().ok()?;
    Some(match unit {
        "H" => n.saturating_mul(3_600_000),
        "M" => n.saturating_mul(60_000),
        "S" => n.saturating_mul(1000),
        "m" => n,
        "u" => n / 1000,
        "n" => n / 1_000_000,
        _ => return None,
    })
}

pub(crate) async fn receive_message(
    svc: &GrpcService,
    ctx: &RequestContext,
    deadline: Option<i64>,
    request: ReceiveMessageRequest,
) -> ReceiveStream {
    match receive(svc, ctx, deadline, request).await {
        Ok(items) => answer(items),
        Err(status) => status_only(status),
    }
}

async fn receive(
    svc: &GrpcService,
    ctx: &RequestContext,
    deadline: Option<i64>,
    request: ReceiveMessageRequest,
) -> Result<Vec<ReceiveMessageResponse>, Status> {
    let broker = &svc.broker;
    let group = ctx.name_of(request.group.as_ref());
    let queue = request.message_queue.unwrap_or_default();
    let topic = ctx.name_of(queue.topic.as_ref());
    valid_topic(&topic)?;
    valid_group(&group)?;
    let invisible_ms = match request.invisible_duration.as_ref().map(millis_of_duration) {
        Some(ms) if ms > 0 || !request.auto_renew => ms,
        _ => AUTO_RENEW_INVISIBLE_MS,
    };
    if invisible_ms < MIN_INVISIBLE_MS {
        return Err(status(
            Code::IllegalInvisibleTime,
            format!("the invisibleTime is too small. min is {MIN_INVISIBLE_MS}"),
        ));
    }
    if invisible_ms > MAX_INVISIBLE_MS {
        return Err(status(
            Code::IllegalInvisibleTime,
            format!("the invisibleTime is too large. max is {MAX_INVISIBLE_MS}"),
        ));
    }
    let mut poll_ms = request
        .long_polling_timeout
        .as_ref()
        .map(millis_of_duration)
        .unwrap_or(CONSUMER_LONG_POLLING_MS)
        .clamp(0, CONSUMER_LONG_POLLING_MS);
    if let Some(d) = deadline {
        poll_ms = poll_ms.min((d - DEADLINE_RESERVE_MS).max(0));
    }
    let fifo = svc
        .sessions
        .get(&ctx.client_id)
        .and_then(|s| s.settings())
        .and_then(|s| match s.pub_sub {
            Some(PubSub::Subscription(sub)) => sub.fifo,
            _ => None,
        })
        .unwrap_or(false)
        || broker
            .consumers
            .subscriptions
            .get(&group)
            .is_some_and(|g| g.consume_message_orderly);
    let filter = filter_of(&topic, request.filter_expression.as_ref())?;
    let map_err = |e: crate::ops::pop::PopError| from_remoting(e.code, &e.remark);
    readable_topic(&broker.storage.topics, &topic).map_err(map_err)?;
    let client = svc.session_channel(ctx);
    consuming_group(&broker.consumers, &group, client.as_ref()).map_err(map_err)?;
    let pop_request = PopRequest {
        group: group.clone(),
        topic: topic.clone(),
        queue_id: -1,
        max_msgs: request.batch_size.clamp(1, 32),
        invisible_time: invisible_ms,
        poll_time: Duration::from_millis(poll_ms as u64),
        init_mode: INIT_MODE_MIN,
        filter: Some(filter),
        order: fifo,
        attempt_id: request.attempt_id.filter(|a| !a.is_empty()),
        client,
    };
    let result = pop(PopTables::of(broker), &pop_request, std::future::pending())
        .await
        .map_err(|e| match e.code {
            response_code::POLLING_FULL => status(Code::TooManyRequests, e.remark),
            _ => map_err(e),
        })?;
    if result.messages.is_empty() {
        return Err(status(Code::MessageNotFound, "no new message"));
    }
    // The status, then when the messages left (the clients measure their latency from
    // it; the Python push consumer needs it), then the messages.
    let mut items = vec![
        ReceiveMessageResponse {
            content: Some(Content::Status(ok())),
        },
        ReceiveMessageResponse {
            content: Some(Content::DeliveryTimestamp(timestamp(now_millis()))),
        },
    ];
    for popped in result.messages {
        let Ok(msg) = MessageExt::decode(&popped.record, false) else {
            continue;
        };
        let handle = format!("{} {}", popped.extra_info, msg.commit_log_offset);
        let delivery = Delivery {
            receipt_handle: Some(handle),
            invisible_ms: Some(invisible_ms),
            extra_attempts: popped.order_count,
        };
        items.push(ReceiveMessageResponse {
            content: Some(Content::Message(to_proto(ctx, &msg, &delivery))),
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_is_read_in_its_units() {
        let mut m = tonic::metadata::MetadataMap::new();
        assert_eq!(deadline_ms(&m), None);
        m.insert("grpc-timeout", "33S".parse().unwrap());
        assert_eq!(deadline_ms(&m), Some(33_000));
        m.insert("grpc-timeout", "2500m".parse().unwrap());
        assert_eq!(deadline_ms(&m), Some(2500));
        m.insert("grpc-timeout", "x".parse().unwrap());
        assert_eq!(deadline_ms(&m), None);
    }
}
