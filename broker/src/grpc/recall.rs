//! RecallMessage (docs/grpc.md#recallmessage): cancels a timer message before it is
//! due. SendMessage answers a timer message with a recall handle naming its parked
//! record (`v1 <topic> <broker> <commitlog offset> <message id>`); a recall marks that
//! record's timer queue offset delivered in the timer table (`state::timer`), so the
//! timer service skips it, and the mark is saved with the timer checkpoint.
//!
//! **Vostok differs:** Apache stores a deletion marker as a second timer message. A
//! timer rolled forward (one pending for about half of `fileReservedTime`) has a new
//! record, and its old handle no longer recalls it; a recall racing the delivery of a
//! message that is due may find it delivered.

use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::topic::TIMER_TOPIC;

use super::context::RequestContext;
use super::endpoint::GrpcService;
use super::proto::{Code, RecallMessageRequest, RecallMessageResponse, Status};
use super::status::{ok, status};
use crate::state::Broker;

/// The recall handle of a message a send stored at `commit_log_offset`, when it is
/// parked as a timer message.
pub(crate) fn recall_handle(
    broker: &Broker,
    topic: &str,
    commit_log_offset: i64,
    message_id: &str,
) -> Option<String> {
    let parked = broker
        .storage
        .store
        .look_message_by_offset(commit_log_offset)?;
    (parked.topic == TIMER_TOPIC).then(|| {
        format!(
            "v1 {topic} {} {commit_log_offset} {message_id}",
            broker.config.broker_name
        )
    })
}

pub(crate) async fn recall_message(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: RecallMessageRequest,
) -> RecallMessageResponse {
    match recall(&svc.broker, ctx, &request) {
        Ok(message_id) => RecallMessageResponse {
            status: Some(ok()),
            message_id,
        },
        Err(s) => RecallMessageResponse {
            status: Some(s),
            message_id: String::new(),
        },
    }
}

fn recall(
    broker: &Broker,
    ctx: &RequestContext,
    request: &RecallMessageRequest,
) -> Result<String, Status> {
    let topic = ctx.name_of(request.topic.as_ref());
    let bad = || status(Code::BadRequest, "recall handle is invalid");
    let parts: Vec<&str> = request.recall_handle.trim().split(' ').collect();
    let [version, handle_topic, broker_name, offset, message_id] = parts.as_slice() else {
        return Err(bad());
    };
    if *version != "v1" || *handle_topic != topic {
        return Err(bad());
    }
    if *broker_name != broker.config.broker_name {
        return Err(status(
            Code::BadRequest,
            "recall handle names another broker",
        ));
    }
    let commit_log_offset: i64 = offset.parse().map_err(|_| bad())?;
    let parked = broker
        .storage
        .store
        .look_message_by_offset(commit_log_offset);
    let found = parked.filter(|m| {
        m.topic == TIMER_TOPIC
            && m.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == Some(message_id)
            && m.property(property::REAL_TOPIC) == Some(topic.as_str())
    });
    let Some(offset) = found.map(|m| m.queue_offset) else {
        return Err(status(
            Code::NotFound,
            "no timer message for this recall handle",
        ));
    };
    let mut progress = broker.deferred.timers.lock();
    if progress.is_delivered(offset) {
        return Err(status(
            Code::NotFound,
            "the message has been delivered or recalled",
        ));
    }
    progress.mark_delivered(offset);
    drop(progress);
    tracing::info!(topic = %topic, message_id = %message_id, offset, "timer message recalled");
    Ok((*message_id).to_owned())
}
