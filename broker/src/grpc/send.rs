//! SendMessage (Apache's `SendMessageActivity`; docs/grpc.md#sendmessage): each message
//! becomes a typed send for the broker's own send operation (`crate::ops::send`), so
//! gRPC and remoting sends meet the same checks, topics, queues and store.
//!
//! The message id becomes `UNIQ_KEY`, tag and keys their properties, the message group
//! `__SHARDINGKEY` (and picks the queue by a consistent hash of the group, so a group
//! stays in one queue), the delivery timestamp `TIMER_DELIVER_MS`, a transactional
//! message `TRAN_MSG` with its recovery time as `CHECK_IMMUNITY_TIME_IN_SECONDS`; the
//! producer group is the topic, as in Apache's proxy. The transaction id answered is
//! the half message's offset message id, which is what EndTransaction needs.

use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::latency_trace;
use vostok_remoting::support::time::now_millis;

use super::client::valid_topic;
use super::context::RequestContext;
use super::convert::{millis_of, millis_of_duration};
use super::endpoint::GrpcService;
use super::proto::{
    Code, Encoding, Message, MessageType, SendMessageRequest, SendMessageResponse, SendResultEntry,
    Status,
};
use super::recall::recall_handle;
use super::status::{from_ack, from_refusal, ok, status};
use crate::ops::send::{self as op, Destination, SendRequest};
use crate::ops::stored::Ack;
use crate::ops::Client;

/// Most messages in one SendMessage request.
const MAX_BATCH: usize = 1024;

pub(crate) async fn send_message(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: SendMessageRequest,
) -> SendMessageResponse {
    let fail = |status: Status| SendMessageResponse {
        status: Some(status),
        entries: Vec::new(),
    };
    if request.messages.is_empty() {
        return fail(status(Code::MessageCorrupted, "no message to send"));
    }
    if request.messages.len() > MAX_BATCH {
        return fail(status(
            Code::BadRequest,
            format!("at most {MAX_BATCH} messages in one request"),
        ));
    }
    // The decoded request stays in memory until it is answered: it counts in the
    // memory account as a remoting frame does (docs/limits.md#what-is-counted), so that
    // a flood of gRPC sends presses the account and the sends after it are refused.
    let _held = svc
        .broker
        .memory
        .reserve_unchecked(prost::Message::encoded_len(&request));
    let first_topic = request.messages[0].topic.clone();
    if request.messages.iter().any(|m| m.topic != first_topic) {
        return fail(status(
            Code::MessageCorrupted,
            "topic in message is not same",
        ));
    }
    let session = svc.session_channel(ctx);
    let client = Client {
        addr: ctx.remote,
        connection: session.as_ref(),
    };
    let single = request.messages.len() == 1;
    let mut entries = Vec::with_capacity(request.messages.len());
    for message in request.messages {
        entries.push(send_one(svc, ctx, client, message, single).await);
    }
    let mut codes: Vec<i32> = entries
        .iter()
        .map(|e| e.status.as_ref().map_or(0, |s| s.code))
        .collect();
    codes.dedup();
    let status = if codes.len() == 1 {
        entries[0].status.clone().unwrap_or_else(ok)
    } else {
        status(Code::MultipleResults, "MULTIPLE_RESULTS")
    };
    SendMessageResponse {
        status: Some(status),
        entries,
    }
}

fn failed(status: Status) -> SendResultEntry {
    SendResultEntry {
        status: Some(status),
        ..Default::default()
    }
}

async fn send_one(
    svc: &GrpcService,
    ctx: &RequestContext,
    client: Client<'_>,
    message: Message,
    single: bool,
) -> SendResultEntry {
    let broker = &svc.broker;
    let topic_name = ctx.name_of(message.topic.as_ref());
    let built = match build_request(broker, &topic_name, message, single) {
        Ok(built) => built,
        Err(status) => return failed(status),
    };
    let header = match op::send(op::SendTables::of(broker), client, built.request).await {
        Ok(stored) if stored.ack == Ack::Stored => stored,
        Ok(stored) => return failed(from_ack(stored.ack)),
        Err(refusal) => return failed(from_refusal(refusal)),
    };
    let recall_handle = if built.timed {
        decode_offset_msg_id(&header.msg_id)
            .ok()
            .and_then(|(_, at)| recall_handle(broker, &topic_name, at, &built.message_id))
            .unwrap_or_default()
    } else {
        String::new()
    };
    SendResultEntry {
        status: Some(ok()),
        transaction_id: if built.transactional {
            header.msg_id
        } else {
            String::new()
        },
        message_id: built.message_id,
        offset: header.queue_offset,
        recall_handle,
    }
}

/// A gRPC message made into a typed send.
struct Built {
    request: SendRequest,
    transactional: bool,
    /// It asks for a delivery time (a timer message, recallable while it waits).
    timed: bool,
    message_id: String,
}

/// The typed send for one gRPC message.
fn build_request(
    broker: &crate::state::Broker,
    topic_name: &str,
    message: Message,
    single: bool,
) -> Result<Built, Status> {
    valid_topic(topic_name)?;
    let sys = message.system_properties.unwrap_or_default();
    let max = broker.config.store.max_message_size;
    if message.body.len() > max {
        return Err(status(
            Code::MessageBodyTooLarge,
            format!("message body cannot exceed the max {max}"),
        ));
    }
    if sys.message_id.trim().is_empty() {
        return Err(status(Code::IllegalMessageId, "message id cannot be empty"));
    }
    let mut props = Properties::new();
    for (k, v) in &message.user_properties {
        if property::RESERVED.contains(&k.as_str()) {
            return Err(status(
                Code::IllegalMessagePropertyKey,
                format!("property is used by system: {k}"),
            ));
        }
        if k.chars().chain(v.chars()).any(char::is_control) {
            return Err(status(
                Code::IllegalMessagePropertyKey,
                "the key or value of a property cannot contain control characters",
            ));
        }
        props.insert(k, v);
    }
    if let Some(tag) = sys.tag.as_deref() {
        if tag.trim().is_empty() || tag.contains('|') || tag.chars().any(char::is_control) {
            return Err(status(
                Code::IllegalMessageTag,
                format!("tag {tag:?} is not allowed"),
            ));
        }
        props.insert(property::TAGS, tag);
    }
    if !sys.keys.is_empty() {
        if sys
            .keys
            .iter()
            .any(|k| k.trim().is_empty() || k.chars().any(char::is_control))
        {
            return Err(status(
                Code::IllegalMessageKey,
                "a key cannot be blank or contain control characters",
            ));
        }
        props.insert(property::KEYS, sys.keys.join(property::KEY_SEPARATOR));
    }
    props.insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, &sys.message_id);
    let transactional = sys.message_type == MessageType::Transaction as i32;
    let mut sys_flag = 0;
    if transactional {
        props.insert(property::TRANSACTION_PREPARED, "true");
        sys_flag |= sysflag::TRANSACTION_PREPARED_TYPE;
        if let Some(d) = &sys.orphaned_transaction_recovery_duration {
            let secs = millis_of_duration(d) / 1000;
            props.insert(property::CHECK_IMMUNITY_TIME_IN_SECONDS, secs.to_string());
        }
    }
    if sys.body_encoding == Encoding::Gzip as i32 {
        sys_flag |= sysflag::COMPRESSED_FLAG;
    }
    if let Some(at) = &sys.delivery_timestamp {
        props.insert(property::TIMER_DELIVER_MS, millis_of(at).to_string());
    }
    props.insert(property::PRODUCER_GROUP, topic_name);
    let group = sys.message_group.as_deref().unwrap_or("");
    if !group.is_empty() {
        if group.trim().is_empty() || group.len() >= 64 || group.chars().any(char::is_control) {
            return Err(status(
                Code::IllegalMessageGroup,
                format!("message group {group:?} is not allowed"),
            ));
        }
        props.insert(property::SHARDING_KEY, group);
    }
    if let Some(trace) = sys.trace_context.as_deref().filter(|t| !t.is_empty()) {
        props.insert(property::TRACE_CONTEXT, trace);
    }
    if !sys.born_host.is_empty() {
        props.insert(property::BORN_HOST, &sys.born_host);
    }
    let born = sys
        .born_timestamp
        .as_ref()
        .map(millis_of)
        .unwrap_or_else(now_millis);
    let queue_id = match (
        single && !group.is_empty(),
        broker.storage.topics.get(topic_name),
    ) {
        (true, Some(config)) if config.write_queue_nums > 0 => {
            consistent_hash(i64::from(java_string_hash(group)), config.write_queue_nums)
        }
        _ => -1,
    };
    let request = SendRequest {
        to: Destination {
            topic: topic_name.to_owned(),
            default_topic: topic::AUTO_CREATE_TOPIC_KEY_TOPIC.into(),
            default_topic_queue_nums: broker.config.default_topic_queue_nums,
            queue_id,
            unit_mode: false,
        },
        sys_flag,
        born_timestamp: born,
        flag: 0,
        properties: props.into_string(),
        body: message.body,
        reconsume_times: 0,
        max_reconsume_times: None,
        received: latency_trace::enabled().then(latency_trace::now_micros),
    };
    Ok(Built {
        request,
        transactional,
        timed: sys.delivery_timestamp.is_some(),
        message_id: sys.message_id,
    })
}

/// Java's `String.hashCode` (over UTF-16 code units).
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// Guava's `Hashing.consistentHash`, which Apache's proxy uses to put a message group
/// in a queue.
fn consistent_hash(input: i64, buckets: i32) -> i32 {
    let mut state = input;
    let mut candidate: i32 = 0;
    loop {
        state = state
            .wrapping_mul(2_862_933_555_777_941_757)
            .wrapping_add(1);
        let next_double =
            f64::from((((state as u64) >> 33) as i32).wrapping_add(1)) / f64::from(1u32 << 31);
        let next = ((f64::from(candidate) + 1.0) / next_double) as i64;
        if next >= 0 && next < i64::from(buckets) {
            candidate = next as i32;
        } else {
            return candidate;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_matches_java() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("group-1"), 293_427_299);
    }

    #[test]
    fn consistent_hash_stays_in_range_and_is_stable() {
        for input in [-5i64, 0, 1, 99_162_322, i64::from(i32::MIN)] {
            let b = consistent_hash(input, 8);
            assert!((0..8).contains(&b));
            assert_eq!(b, consistent_hash(input, 8));
        }
        assert_eq!(consistent_hash(12345, 1), 0);
    }
}
