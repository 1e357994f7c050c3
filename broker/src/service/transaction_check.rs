//! The transaction check service (RocketMQ's `TransactionalMessageCheckService`).
//!
//! Every `transactionCheckInterval` it walks the half queue: finished transactions are
//! skipped, messages younger than their immunity time end the round, older ones are
//! re-appended with a higher check count and checked back with CHECK_TRANSACTION_STATE
//! on a connection of the producer group; after `transactionCheckMax` checks a message
//! goes to `TRANS_CHECK_MAX_TIME_TOPIC`. Progress on the half queue is kept as the
//! internal group's consumer offset and the finished transactions in
//! [`crate::state::transaction`], so the state survives a restart.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::header::CheckTransactionStateRequestHeader;
use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::request_code;
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;
use vostok_store::{AppendResult, GetMessageStatus};

use crate::reroute;
use crate::state::master_services::ServiceScope;
use crate::state::transaction::root_of;
use crate::state::Broker;

/// Longest a check round runs (`MAX_PROCESS_TIME_LIMIT`).
const MAX_ROUND: Duration = Duration::from_secs(60);

/// Starts the check service, until `scope` stops (a master only).
pub(crate) fn spawn(broker: &Arc<Broker>, scope: &ServiceScope) {
    broker.storage.topics.get_or_create(
        topic::TRANS_CHECK_MAX_TIME_TOPIC,
        1,
        perm::READ | perm::WRITE,
        0,
    );
    let (b, stop) = (broker.clone(), scope.stop().clone());
    scope.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(b.runtime.transaction_check_interval()) => {}
                _ = stop.cancelled() => break,
            }
            check_round(&b, &stop).await;
        }
    });
}

/// One pass of the check service; ends early once `stop` is cancelled.
pub(crate) async fn check_round(broker: &Broker, stop: &CancellationToken) {
    let started = Instant::now();
    let round_started_ms = now_millis();
    let group = topic::CID_SYS_RMQ_TRANS;
    broker.deferred.transactions.catch_up(&broker.storage.store);
    let half_start = broker
        .consumers
        .offsets
        .query(group, topic::TRANS_HALF_TOPIC, 0)
        .max(0);
    let now = now_millis();
    let timeout = broker.runtime.transaction_timeout().as_millis() as i64;

    // Walk the half queue in order; `progress` is where the next round starts.
    let mut progress = half_start;
    'walk: loop {
        let result = broker.storage.store.get_message(
            topic::TRANS_HALF_TOPIC,
            0,
            progress,
            32,
            i32::MAX,
            None,
        );
        match result.status {
            GetMessageStatus::Found => {}
            GetMessageStatus::OffsetTooSmall => {
                progress = result.next_begin_offset;
                continue;
            }
            _ => break,
        }
        for record in &result.messages {
            if started.elapsed() > MAX_ROUND || stop.is_cancelled() {
                break 'walk;
            }
            let Ok(half) = MessageExt::decode(record, false) else {
                break 'walk;
            };
            // Copies appended by this round wait for the next one: walking into them
            // would check the same transaction again at once.
            if half.store_timestamp >= round_started_ms {
                break 'walk;
            }
            let q = half.queue_offset;
            let root = root_of(&half.properties, q);
            if broker.deferred.transactions.is_finished(root) {
                progress = q + 1;
                continue;
            }
            let checks: i32 = half
                .property(property::TRANSACTION_CHECK_TIMES)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if checks >= broker.runtime.transaction_check_max() {
                discard(broker, &half).await;
                broker
                    .deferred
                    .transactions
                    .write_op(&broker.storage.store, broker.broker_addr, root)
                    .await;
                progress = q + 1;
                continue;
            }
            // As RocketMQ: a message with its own immunity time that has not passed is
            // put back at the end of the queue, so it holds up nobody; one merely younger
            // than transactionTimeOut ends the round (all after it are younger still);
            // one born in the future (a producer clock ahead) is checked now.
            let age = now - half.born_timestamp;
            let custom_immunity = half
                .property(property::CHECK_IMMUNITY_TIME_IN_SECONDS)
                .and_then(|v| v.parse::<i64>().ok())
                .map(|s| s.saturating_mul(1000).max(timeout));
            match custom_immunity {
                Some(immunity) if age < immunity => {
                    if reappend(broker, &half, root, checks).await.is_none() {
                        break 'walk;
                    }
                }
                None if (0..timeout).contains(&age) => break 'walk,
                _ => {
                    if !check_back(broker, &half, root, checks + 1).await {
                        break 'walk;
                    }
                }
            }
            progress = q + 1;
        }
    }
    if progress != half_start {
        broker
            .consumers
            .offsets
            .commit(group, topic::TRANS_HALF_TOPIC, 0, progress);
    }
    // Roots below the half queue's first record can no longer be named by anyone.
    broker.deferred.transactions.prune_below(
        broker
            .storage
            .store
            .min_offset_in_queue(topic::TRANS_HALF_TOPIC, 0),
    );
    broker.deferred.transactions.persist();
    broker.consumers.offsets.commit(
        group,
        topic::TRANS_OP_HALF_TOPIC,
        0,
        broker.deferred.transactions.op_offset(),
    );
    debug!(
        half_from = half_start,
        half_to = progress,
        "transaction check round done"
    );
}

/// Appends a copy of the half message at the end of the half queue, carrying its root
/// and `checks`; the append result, or `None` when it could not be written.
async fn reappend(
    broker: &Broker,
    half: &MessageExt,
    root: i64,
    checks: i32,
) -> Option<AppendResult> {
    let mut copy = reroute::copy_of(half, broker.broker_addr);
    copy.tags_code = 0;
    let mut props = half.properties.clone();
    props.insert(property::TRANSACTION_CHECK_TIMES, checks.to_string());
    props.insert(
        property::TRANSACTION_PREPARED_QUEUE_OFFSET,
        root.to_string(),
    );
    copy.properties = props.into_string();
    let result = broker.storage.store.put_message(copy).await;
    let append = result.append.filter(|_| result.status.is_stored());
    if append.is_none() {
        warn!(offset = half.queue_offset, status = ?result.status, "cannot re-append half message");
    }
    append
}

/// Re-appends the half message with its check count raised and asks a producer of its
/// group for the outcome. False when the copy could not be written.
async fn check_back(broker: &Broker, half: &MessageExt, root: i64, checks: i32) -> bool {
    let Some(append) = reappend(broker, half, root, checks).await else {
        return false;
    };
    let group = half
        .property(property::PRODUCER_GROUP)
        .unwrap_or("")
        .to_owned();
    let Some(channel) = broker.consumers.clients.producer_channel(&group) else {
        debug!(group = %group, "no producer online to check a transaction; will check again");
        return true;
    };
    let uniq = half
        .property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        .map(str::to_owned);
    let header = CheckTransactionStateRequestHeader {
        tran_state_table_offset: append.queue_offset,
        commit_log_offset: append.wrote_offset,
        msg_id: uniq.clone(),
        transaction_id: half
            .property(property::TRANSACTION_ID)
            .map(str::to_owned)
            .or(uniq),
        offset_msg_id: Some(create_offset_msg_id(
            broker.broker_addr,
            append.wrote_offset,
        )),
        topic: Some(topic::TRANS_HALF_TOPIC.to_owned()),
        broker_name: Some(broker.config.broker_name.clone()),
    };
    // The body is the message as the producer knows it: real topic and queue.
    let mut shown = half.clone();
    shown
        .properties
        .insert(property::TRANSACTION_CHECK_TIMES, checks.to_string());
    shown.properties.insert(
        property::TRANSACTION_PREPARED_QUEUE_OFFSET,
        root.to_string(),
    );
    if let Some(real) = shown.property(property::REAL_TOPIC).map(str::to_owned) {
        shown.topic = real;
    }
    if let Some(q) = shown
        .property(property::REAL_QUEUE_ID)
        .and_then(|q| q.parse().ok())
    {
        shown.queue_id = q;
    }
    shown.queue_offset = append.queue_offset;
    shown.commit_log_offset = append.wrote_offset;
    shown.store_timestamp = append.store_timestamp;
    let request =
        RemotingCommand::request_with_header(request_code::CHECK_TRANSACTION_STATE, &header)
            .with_body(shown.encode());
    info!(group = %group, offset = append.queue_offset, checks, "checking transaction state with producer");
    if let Err(e) = channel.invoke_oneway(request, Duration::from_secs(3)).await {
        warn!(peer = %channel.peer_addr(), error = %e, "check transaction state not sent");
    }
    true
}

/// A half message checked `transactionCheckMax` times: kept in `TRANS_CHECK_MAX_TIME_TOPIC`
/// for operators, and logged.
async fn discard(broker: &Broker, half: &MessageExt) {
    warn!(
        offset = half.queue_offset,
        group = half.property(property::PRODUCER_GROUP).unwrap_or(""),
        msg_id = %half.msg_id(),
        "transaction still unknown after the maximum number of checks; discarded"
    );
    let mut msg = reroute::copy_of(half, broker.broker_addr);
    msg.topic = topic::TRANS_CHECK_MAX_TIME_TOPIC.to_owned();
    msg.queue_id = 0;
    msg.tags_code = 0;
    let _ = broker.storage.store.put_message(msg).await;
    let real_topic = half.property(property::REAL_TOPIC).unwrap_or_default();
    broker.observed.metrics.events.half_dropped(real_topic);
}
