//! PULL_MESSAGE and LITE_PULL_MESSAGE (docs/commands.md#pulling), with long polling.
//!
//! The subscription comes from the request when its sysFlag says so, else from the
//! group's heartbeat. The store's status maps to a response code and the next offset;
//! an empty result of a suspendable pull waits in [`crate::state::long_polling`] and is
//! re-run once (without suspension, without committing the offset again).
//!
//! A held pull keeps no task: the processor answers nothing for now and the pull waits
//! as an [`Answer`] that the arrival of its message runs, on the thread that
//! dispatched it (for a single send, the sender's connection task, once it has handled
//! every frame of that read: the whole burst), and that queues the response on the
//! pull's connection itself ([`answer_held`]).

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use bytes::BytesMut;
use vostok_remoting::command::SerializeType;
use vostok_remoting::protocol::body::{
    MessageModel, SubscriptionData, EXPRESSION_TYPE_TAG, SUB_ALL,
};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::filter::{needs_property_filter_switch, PropertyFilter};
use vostok_remoting::protocol::header::CommandHeader;
use vostok_remoting::protocol::header::{
    PullMessageRequestHeader, PullMessageResponseHeader, PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND,
};
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::perm;
use vostok_remoting::support::latency_trace::{self, Stage};
use vostok_remoting::{Channel, RemotingCommand};
use vostok_store::GetMessageStatus;

use super::{error, header_error};
use crate::ops::auto_create::find_or_create_group;
use crate::state::consumer_filter::{is_tag_type, ExpressionMessageFilter};
use crate::state::long_polling::Answer;
use crate::state::Broker;

/// Longest a pull is held, whatever it asks: RocketMQ clients ask 15–20 s and give up
/// on the call after 30 s.
const MAX_SUSPEND: std::time::Duration = std::time::Duration::from_secs(30);

pub(crate) async fn pull_message(
    broker: &Arc<Broker>,
    channel: &Channel,
    request: RemotingCommand,
) -> Option<RemotingCommand> {
    let header = match PullMessageRequestHeader::read_from(&request.ext_fields) {
        Ok(h) => h,
        Err(e) => return Some(header_error(&request, e)),
    };
    let reply = Reply {
        code: request.code,
        opaque: request.opaque,
        binary: request.serialize_type == SerializeType::RocketMq,
        started: broker
            .observed
            .metrics
            .is_enabled()
            .then(std::time::Instant::now),
    };
    // A held pull keeps only its header, not the request (which may carry a body).
    drop(request);
    let first = match pull_once(broker, channel, &header, true).await {
        Ok(pulled) => pulled,
        Err(response) => return Some(response),
    };
    let suspend = header.sys_flag & PULL_FLAG_SUSPEND != 0;
    if !(first.not_found && suspend) {
        return Some(first.response);
    }
    let timeout = if broker.runtime.long_polling_enable() {
        std::time::Duration::from_millis(header.suspend_timeout_millis.max(0) as u64)
            .min(MAX_SUSPEND)
    } else {
        broker.runtime.short_polling_time()
    };
    let polling = &broker.consumers.long_polling;
    if polling.start_sweeper() {
        let b = Arc::clone(broker);
        tokio::spawn(async move { b.consumers.long_polling.sweep().await });
    }
    let store = broker.storage.store.clone();
    let (topic, queue_id) = (header.topic.clone(), header.queue_id);
    let held = HeldPull {
        broker: Arc::clone(broker),
        channel: channel.clone(),
        header: header.clone(),
        reply,
        runtime: tokio::runtime::Handle::current(),
    };
    let answer: Answer = Box::new(move |here| answer_held(held, here));
    match polling.hold_answer(
        channel.id(),
        &topic,
        queue_id,
        header.queue_offset,
        tag_codes_of(&first.subscription),
        timeout,
        || store.max_offset_in_queue(&topic, queue_id),
        answer,
    ) {
        Ok(None) => return None,
        // Arrived meanwhile (or shutting down): answer now, as a notification would.
        Ok(Some(answer)) => {
            answer(true);
            return None;
        }
        // Too many held as answers: wait on this task instead.
        Err(_) => {}
    }
    let hold = polling.hold(
        &header.topic,
        header.queue_id,
        header.queue_offset,
        tag_codes_of(&first.subscription),
        timeout,
        move || store.max_offset_in_queue(&topic, queue_id),
    );
    // Nobody waits for the answer once the connection is gone.
    tokio::select! {
        _ = hold => {}
        _ = channel.closed() => return Some(first.response),
    }
    // Re-run once, without committing the offset again; whatever it finds is the answer.
    Some(match pull_once(broker, channel, &header, false).await {
        Ok(pulled) => pulled.response,
        Err(response) => response,
    })
}

/// What the connection's request loop would have done with the answer to a pull, done
/// by the pull itself when it was held as an [`Answer`].
struct Reply {
    code: i32,
    opaque: i32,
    /// Answered in kind (binary header for a binary request).
    binary: bool,
    /// For the request metrics, when they are on.
    started: Option<std::time::Instant>,
}

/// A pull held as an [`Answer`].
struct HeldPull {
    broker: Arc<Broker>,
    channel: Channel,
    header: PullMessageRequestHeader,
    reply: Reply,
    /// Where the answer goes when it cannot be given on the notifying thread.
    runtime: tokio::runtime::Handle,
}

/// Runs a held pull again and queues its response. With `here` on a runtime thread
/// (the notification of its message, usually from the connection task that appended
/// it) it runs right there and only what must wait (a read from the tier, a full write
/// queue) continues on a task; otherwise (the dispatcher thread, a timeout, a
/// shutdown, a second pull the same message satisfies) it is a task from the start.
/// A pull whose connection closed meanwhile is dropped unanswered.
fn answer_held(held: HeldPull, here: bool) {
    if held.channel.is_closed() {
        return;
    }
    let runtime = held.runtime.clone();
    let answer = Box::pin(async move {
        let HeldPull {
            broker,
            channel,
            header,
            reply,
            ..
        } = held;
        let mut response = match pull_once(&broker, &channel, &header, false).await {
            Ok(pulled) => pulled.response,
            Err(response) => response,
        };
        response.opaque = reply.opaque;
        if reply.binary {
            response.serialize_type = SerializeType::RocketMq;
        }
        if let Some(started) = reply.started {
            broker.observed.metrics.rpc.observe(
                reply.code,
                Some(response.code),
                false,
                started.elapsed(),
            );
        }
        let _ = channel.send_response(response).await;
    });
    if here && tokio::runtime::Handle::try_current().is_ok() {
        let mut answer = answer;
        let waker = futures_util::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        // A future that is not ready has registered the no-op waker: the task polls it
        // again with its own.
        if answer.as_mut().poll(&mut cx).is_pending() {
            runtime.spawn(answer);
        }
    } else {
        runtime.spawn(answer);
    }
}

fn tag_codes_of(sub: &SubscriptionData) -> Option<BTreeSet<i32>> {
    if sub.sub_string == SUB_ALL
        || sub.sub_string.is_empty()
        || sub.expression_type != EXPRESSION_TYPE_TAG
    {
        None
    } else {
        Some(sub.code_set.clone())
    }
}

/// Runs the pull: here, or on the tier's reader threads when the tier answers it, so
/// that reads of cold data never hold up the threads serving the hot tail
/// (docs/tiered-storage.md#reads-and-the-hot-tail).
async fn pull_once(
    broker: &Arc<Broker>,
    channel: &Channel,
    header: &PullMessageRequestHeader,
    first: bool,
) -> Result<Pulled, RemotingCommand> {
    let store = &broker.storage.store;
    if !store.reads_from_tier(&header.topic, header.queue_id, header.queue_offset) {
        return pull_inner(broker, channel, header, first);
    }
    let (b, c, h) = (Arc::clone(broker), channel.clone(), header.clone());
    match store
        .on_tier_readers(move || pull_inner(&b, &c, &h, first))
        .await
    {
        Some(pulled) => pulled,
        None => Err(tier_busy(broker, header)),
    }
}

/// The answer to a pull the tier's readers could not take in time: "not found" at
/// the same offset, and the consumer asks again (as after a failed tier read).
fn tier_busy(broker: &Broker, header: &PullMessageRequestHeader) -> RemotingCommand {
    let store = &broker.storage.store;
    let response_header = PullMessageResponseHeader {
        suggest_which_broker_id: 0,
        next_begin_offset: header.queue_offset,
        min_offset: store.min_offset_in_queue(&header.topic, header.queue_id),
        max_offset: store.max_offset_in_queue(&header.topic, header.queue_id),
    };
    RemotingCommand::response(
        response_code::PULL_NOT_FOUND,
        Some("the tier's reads are over their budget, pull again".to_owned()),
    )
    .with_header(&response_header)
}

/// One evaluation of a pull.
struct Pulled {
    response: RemotingCommand,
    /// PULL_NOT_FOUND: the pull may wait for a message.
    not_found: bool,
    subscription: SubscriptionData,
}

/// Runs the pull against the store. `first` is false when re-run after long polling:
/// the piggy-backed commit offset is applied only once.
fn pull_inner(
    broker: &Broker,
    channel: &Channel,
    header: &PullMessageRequestHeader,
    first: bool,
) -> Result<Pulled, RemotingCommand> {
    let config = &broker.config;
    if !perm::is_readable(broker.runtime.broker_permission()) {
        return Err(error(
            response_code::NO_PERMISSION,
            format!(
                "the broker[{}] pulling message is forbidden",
                config.broker_ip1
            ),
        ));
    }
    let group_config =
        find_or_create_group(&broker.consumers, &header.consumer_group, Some(channel)).map_err(
            |reason| {
                error(
                    response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                    format!(
                        "subscription group [{}] does not exist: {reason}",
                        header.consumer_group
                    ),
                )
            },
        )?;
    if !group_config.consume_enable {
        return Err(error(
            response_code::NO_PERMISSION,
            format!(
                "subscription group no permission, {}",
                header.consumer_group
            ),
        ));
    }
    let topic_config = broker.storage.topics.get(&header.topic).ok_or_else(|| {
        error(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", header.topic),
        )
    })?;
    if !perm::is_readable(topic_config.perm) {
        return Err(error(
            response_code::NO_PERMISSION,
            format!("the topic[{}] pulling message is forbidden", header.topic),
        ));
    }
    if header.queue_id < 0 || header.queue_id >= topic_config.read_queue_nums {
        return Err(error(
            response_code::SYSTEM_ERROR,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
                header.queue_id,
                header.topic,
                topic_config.read_queue_nums,
                channel.peer_addr()
            ),
        ));
    }

    let (subscription, sql) = subscription_for(broker, header)?;
    let max_count = header.max_msg_nums.max(1);
    let max_bytes = header.max_msg_bytes.filter(|b| *b > 0).unwrap_or(i32::MAX);
    let filter = ExpressionMessageFilter::new(subscription, sql);
    let result = broker.storage.get_for_consumer(
        &header.topic,
        header.queue_id,
        header.queue_offset,
        max_count,
        max_bytes,
        Some(&filter),
    );

    // RocketMQ: far behind (beyond the memory window) → the group's
    // `whichBrokerWhenConsumeSlowly`, else its `brokerId`; 0 without `slaveReadEnable`.
    let suggest = if !broker.runtime.slave_read_enable() {
        0
    } else if result.suggest_pulling_from_slave {
        group_config.which_broker_when_consume_slowly
    } else {
        group_config.broker_id
    };
    let mut response_header = PullMessageResponseHeader {
        suggest_which_broker_id: suggest,
        next_begin_offset: result.next_begin_offset,
        min_offset: result.min_offset,
        max_offset: result.max_offset,
    };
    let code = match result.status {
        GetMessageStatus::Found => response_code::SUCCESS,
        GetMessageStatus::MessageWasRemoving | GetMessageStatus::NoMatchedMessage => {
            response_code::PULL_RETRY_IMMEDIATELY
        }
        GetMessageStatus::NoMatchedLogicQueue | GetMessageStatus::NoMessageInQueue => {
            if header.queue_offset != 0 {
                response_code::PULL_OFFSET_MOVED
            } else {
                response_code::PULL_NOT_FOUND
            }
        }
        GetMessageStatus::OffsetFoundNull | GetMessageStatus::OffsetOverflowOne => {
            response_code::PULL_NOT_FOUND
        }
        GetMessageStatus::OffsetOverflowBadly | GetMessageStatus::OffsetTooSmall => {
            response_code::PULL_OFFSET_MOVED
        }
    };
    // A slave does not correct offsets (`offsetCheckInSlave` false): it may only be
    // behind its master, so the consumer retries rather than moving its offset.
    let code = if code == response_code::PULL_OFFSET_MOVED && !broker.is_master() {
        response_header.next_begin_offset = header.queue_offset;
        response_code::PULL_RETRY_IMMEDIATELY
    } else {
        code
    };

    let has_commit = header.sys_flag & PULL_FLAG_COMMIT_OFFSET != 0;
    if first && has_commit && broker.is_master() {
        broker.consumers.offsets.commit(
            &header.consumer_group,
            &header.topic,
            header.queue_id,
            header.commit_offset,
        );
    }

    let response = if code == response_code::SUCCESS {
        let mut body = BytesMut::with_capacity(result.buffer_total_size);
        for record in &result.messages {
            body.extend_from_slice(record);
        }
        if latency_trace::enabled() {
            stamp_pulled(&result.messages);
        }
        broker.observed.count_get(result.messages.len() as u64);
        broker.observed.metrics.record_get(
            &header.topic,
            &header.consumer_group,
            result.messages.len() as u64,
            result.buffer_total_size as u64,
        );
        broker.observed.metrics.pulled_to(
            &header.topic,
            &header.consumer_group,
            header.queue_id,
            result.next_begin_offset,
        );
        RemotingCommand::response(code, None)
            .with_header(&response_header)
            .with_body(body.freeze())
    } else {
        let remark = (code == response_code::PULL_OFFSET_MOVED).then(|| {
            format!(
                "the request offset {} moved: min {}, max {}",
                header.queue_offset, result.min_offset, result.max_offset
            )
        });
        RemotingCommand::response(code, remark).with_header(&response_header)
    };
    Ok(Pulled {
        response,
        not_found: code == response_code::PULL_NOT_FOUND,
        subscription: filter.subscription().clone(),
    })
}

/// The subscription a pull filters by: its own (sysFlag bit 2) or the heartbeat's,
/// with the compiled expression of a SQL92 or ROUTING subscription.
fn subscription_for(
    broker: &Broker,
    header: &PullMessageRequestHeader,
) -> Result<(SubscriptionData, Option<Arc<PropertyFilter>>), RemotingCommand> {
    let expression_type = header
        .expression_type
        .as_deref()
        .filter(|t| !t.is_empty())
        .unwrap_or(EXPRESSION_TYPE_TAG);
    if header.sys_flag & PULL_FLAG_SUBSCRIPTION != 0 {
        let expression = header.subscription.as_deref().unwrap_or(SUB_ALL);
        if is_tag_type(expression_type) {
            let sub = build_subscription(&header.topic, expression, header.sub_version);
            return Ok((sub, None));
        }
        check_property_filter(broker, expression_type)?;
        let mut sub = build_subscription(&header.topic, SUB_ALL, header.sub_version);
        sub.expression_type = expression_type.to_owned();
        sub.sub_string = expression.to_owned();
        let data = broker
            .consumers
            .filters
            .compile(&header.consumer_group, &sub);
        return match &data.compiled {
            Ok(filter) => Ok((sub, Some(filter.clone()))),
            Err(e) => Err(error(
                response_code::SUBSCRIPTION_PARSE_FAILED,
                format!("parse the consumer's subscription failed: {e}"),
            )),
        };
    }
    let Some((message_model, sub)) = broker
        .consumers
        .clients
        .consumer_subscription(&header.consumer_group, &header.topic)
    else {
        return Err(error(
            response_code::SUBSCRIPTION_NOT_EXIST,
            format!(
                "the consumer's group info not exist, {}",
                header.consumer_group
            ),
        ));
    };
    let group_config = broker.consumers.subscriptions.get(&header.consumer_group);
    if message_model == MessageModel::Broadcasting
        && group_config.is_some_and(|g| !g.consume_broadcast_enable)
    {
        return Err(error(
            response_code::NO_PERMISSION,
            format!(
                "the consumer group[{}] can not consume by broadcast way",
                header.consumer_group
            ),
        ));
    }
    let Some(sub) = sub else {
        return Err(error(
            response_code::SUBSCRIPTION_NOT_EXIST,
            format!("the consumer's subscription not exist, {}", header.topic),
        ));
    };
    if sub.sub_version < header.sub_version {
        return Err(error(
            response_code::SUBSCRIPTION_NOT_LATEST,
            "the consumer's subscription not latest",
        ));
    }
    if is_tag_type(&sub.expression_type) {
        return Ok((sub, None));
    }
    check_property_filter(broker, &sub.expression_type)?;
    let Some(data) = broker
        .consumers
        .filters
        .get(&header.topic, &header.consumer_group)
    else {
        return Err(error(
            response_code::FILTER_DATA_NOT_EXIST,
            "The broker's consumer filter data is not exist!Your expression may be wrong!",
        ));
    };
    if data.client_version < header.sub_version {
        return Err(error(
            response_code::FILTER_DATA_NOT_LATEST,
            "the consumer's consumer filter data not latest",
        ));
    }
    match &data.compiled {
        Ok(filter) => Ok((sub, Some(filter.clone()))),
        Err(e) => Err(error(
            response_code::FILTER_DATA_NOT_EXIST,
            format!(
                "The broker's consumer filter data is not exist!Your expression may be wrong! {e}"
            ),
        )),
    }
}

/// SQL92 filters need `enablePropertyFilter=true` (Apache answers SYSTEM_ERROR); routing
/// keys are always served.
fn check_property_filter(broker: &Broker, expression_type: &str) -> Result<(), RemotingCommand> {
    if broker.runtime.enable_property_filter() || !needs_property_filter_switch(expression_type) {
        return Ok(());
    }
    Err(error(
        response_code::SYSTEM_ERROR,
        format!("The broker does not support consumer to filter message by {expression_type}"),
    ))
}

/// Stamps each record of a pull response as pulled (opt-in latency trace).
fn stamp_pulled(records: &[bytes::Bytes]) {
    let now = latency_trace::now_micros();
    for record in records {
        // PHYSICALOFFSET: bytes 28..36 of the record (docs/store.md).
        if let Some(b) = record.get(28..36).and_then(|b| <[u8; 8]>::try_from(b).ok()) {
            latency_trace::stamp_at(Stage::Pulled, i64::from_be_bytes(b), now);
        }
    }
}
