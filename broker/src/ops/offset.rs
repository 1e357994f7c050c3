//! A group's committed offsets (docs/commands.md#consumer-offsets): queried
//! (QUERY_CONSUMER_OFFSET), committed (UPDATE_CONSUMER_OFFSET) and reset to a time
//! (INVOKE_BROKER_TO_RESET_OFFSET, `mqadmin resetOffsetByTime`; skipping a backlog is
//! a reset to the queues' ends, `timestamp = -1`).
//!
//! A reset works as Apache's `Broker2Client.resetOffset`: for each write queue of the
//! topic here, the offset of the first message stored at or after the time, kept only
//! where it moves the group back unless forced; the table is pushed to every online
//! client of the group with RESET_CONSUMER_CLIENT_OFFSET (oneway).
//!
//! **Vostok differs:** the broker also commits the new offsets itself, so the reset
//! holds even if a client misses the push or restarts before it commits; and a group
//! with nobody online is refused as not online before its offsets are looked at
//! (Apache first answers SYSTEM_ERROR for a group that never committed), so that the
//! tools fall back to committing the offsets themselves.

use std::time::Duration;

use tracing::{debug, info};
use vostok_remoting::protocol::body::{MessageQueue, ResetOffsetBody};
use vostok_remoting::protocol::header::ResetOffsetRequestHeader;
use vostok_remoting::protocol::message::RecordView;
use vostok_remoting::protocol::request_code;
use vostok_remoting::RemotingCommand;
use vostok_store::MessageStore;

use super::auto_create::find_or_create_group;
use super::{Client, Refusal, Refused};
use crate::state::offset::ConsumerOffsetManager;
use crate::state::topic::TopicConfigManager;
use crate::state::{Broker, Consumers};

/// One queue's committed offset to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryOffset {
    pub(crate) group: String,
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    /// A group that never committed gets 0 while the queue's first message is still
    /// in memory (Apache's `setZeroIfNotFound`, on unless the client says no).
    pub(crate) zero_if_not_found: bool,
}

/// One queue's offset to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitOffset {
    pub(crate) group: String,
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) offset: i64,
}

/// A group's offsets on a topic moved to a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResetOffset {
    pub(crate) group: String,
    pub(crate) topic: String,
    /// Milliseconds since the epoch; `-1`: the queues' ends.
    pub(crate) timestamp: i64,
    /// Move forward too (the default); otherwise only back.
    pub(crate) force: Option<bool>,
}

/// The group's committed offset on the queue: reads the offsets and the store only.
pub(crate) fn query_offset(
    offsets: &ConsumerOffsetManager,
    store: &MessageStore,
    request: &QueryOffset,
) -> Result<i64, Refusal> {
    let (topic, queue_id) = (request.topic.as_str(), request.queue_id);
    let offset = offsets.query(&request.group, topic, queue_id);
    if offset >= 0 {
        return Ok(offset);
    }
    // A group that never committed starts at 0 while the queue's first message is
    // still hot, so a new CONSUME_FROM_LAST_OFFSET group still reads a young topic
    // from the start.
    if request.zero_if_not_found
        && store.min_offset_in_queue(topic, queue_id) <= 0
        && first_message_in_memory(store, topic, queue_id)
    {
        return Ok(0);
    }
    Err(Refusal::new(
        Refused::OffsetNotFound,
        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
    ))
}

/// True when the queue's message at offset 0 is within the in-memory window, or the
/// queue is still empty (its first message will be).
fn first_message_in_memory(store: &MessageStore, topic: &str, queue_id: i32) -> bool {
    let result = store.get_message(topic, queue_id, 0, 1, i32::MAX, None);
    match result.messages.first() {
        Some(record) => RecordView::parse_message(record, false)
            .is_ok_and(|view| store.is_in_memory(view.physical_offset())),
        None => result.max_offset <= 0,
    }
}

/// Commits the offset; the group is created on first use when the broker allows it,
/// the topic must exist. Reads the consumer tables and the topic table only.
pub(crate) fn commit_offset(
    consumers: &Consumers,
    topics: &TopicConfigManager,
    client: Client<'_>,
    request: &CommitOffset,
) -> Result<(), Refusal> {
    if let Err(reason) = find_or_create_group(consumers, &request.group, client.connection) {
        return Err(Refusal::new(
            Refused::GroupNotExist,
            format!("subscription group not exist, {}: {reason}", request.group),
        ));
    }
    if !topics.contains(&request.topic) {
        return Err(Refusal::new(
            Refused::TopicNotExist,
            format!("topic[{}] not exist", request.topic),
        ));
    }
    consumers.offsets.commit(
        &request.group,
        &request.topic,
        request.queue_id,
        request.offset,
    );
    Ok(())
}

/// Resets the group's offsets on the topic, commits them and pushes them to the
/// group's online clients; the new table.
pub(crate) fn reset_offset(
    broker: &Broker,
    request: &ResetOffset,
) -> Result<ResetOffsetBody, Refusal> {
    let (group, topic_name) = (request.group.as_str(), request.topic.as_str());
    let Some(topic) = broker.storage.topics.get(topic_name) else {
        return Err(Refusal::new(
            Refused::TopicNotExist,
            format!(
                "[reset-offset] reset offset failed, no topic in this broker. topic={topic_name}"
            ),
        ));
    };
    let channels = broker.consumers.clients.consumer_channels(group);
    if channels.is_empty() {
        return Err(Refusal::new(
            Refused::NotOnline,
            format!(
                "Consumer not online, so can not reset offset, Group: {group} Topic: {topic_name} Timestamp: {}",
                request.timestamp
            ),
        ));
    }
    let force = request.force.unwrap_or(true);
    let mut table = ResetOffsetBody::default();
    for queue_id in 0..topic.write_queue_nums {
        let committed = broker.consumers.offsets.query(group, topic_name, queue_id);
        if committed == -1 {
            return Err(Refusal::new(
                Refused::SystemError,
                format!("THe consumer group <{group}> not exist"),
            ));
        }
        let at_time = if request.timestamp == -1 {
            broker
                .storage
                .store
                .max_offset_in_queue(topic_name, queue_id)
        } else {
            broker
                .storage
                .store
                .offset_in_queue_by_time(topic_name, queue_id, request.timestamp)
        }
        .max(0);
        let offset = if force || at_time < committed {
            at_time
        } else {
            committed
        };
        let mq = MessageQueue::new(topic_name, broker.config.broker_name.as_str(), queue_id);
        table.offset_table.insert(mq, offset);
    }
    for (mq, offset) in &table.offset_table {
        broker
            .consumers
            .offsets
            .commit(group, &mq.topic, mq.queue_id, *offset);
    }
    let body = table.encode();
    for channel in channels {
        let push = RemotingCommand::request_with_header(
            request_code::RESET_CONSUMER_CLIENT_OFFSET,
            &ResetOffsetRequestHeader {
                topic: request.topic.clone(),
                group: request.group.clone(),
                timestamp: request.timestamp,
                is_force: request.force,
            },
        )
        .with_body(body.clone());
        tokio::spawn(async move {
            if let Err(e) = channel.invoke_oneway(push, Duration::from_secs(5)).await {
                debug!(peer = %channel.peer_addr(), error = %e, "RESET_CONSUMER_CLIENT_OFFSET not delivered");
            }
        });
    }
    info!(topic = %topic_name, group = %group, timestamp = request.timestamp, queues = table.offset_table.len(), "offsets reset");
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::super::browse::tests::stored;
    use super::super::testing::{broker, peer};
    use super::*;

    fn query(group: &str, topic: &str, zero_if_not_found: bool) -> QueryOffset {
        QueryOffset {
            group: group.into(),
            topic: topic.into(),
            queue_id: 0,
            zero_if_not_found,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_committed_offset_is_answered_and_a_missing_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        stored(b, "ops-offset", 2).await;
        let (offsets, store) = (&b.consumers.offsets, &b.storage.store);
        let topics = &b.storage.topics;
        let commit = |offset| CommitOffset {
            group: "ops-offset-group".into(),
            topic: "ops-offset".into(),
            queue_id: 0,
            offset,
        };
        assert_eq!(
            query_offset(
                offsets,
                store,
                &query("ops-offset-group", "ops-offset", false)
            )
            .unwrap_err()
            .kind,
            Refused::OffsetNotFound
        );
        assert_eq!(
            query_offset(
                offsets,
                store,
                &query("ops-offset-group", "ops-offset", true)
            ),
            Ok(0),
            "a young queue is read from its start"
        );
        commit_offset(&b.consumers, topics, peer(), &commit(1)).unwrap();
        assert_eq!(
            query_offset(
                offsets,
                store,
                &query("ops-offset-group", "ops-offset", false)
            ),
            Ok(1)
        );
        let unknown = CommitOffset {
            topic: "ops-offset-none".into(),
            ..commit(1)
        };
        assert_eq!(
            commit_offset(&b.consumers, topics, peer(), &unknown)
                .unwrap_err()
                .kind,
            Refused::TopicNotExist
        );
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reset_needs_the_topic_and_an_online_group() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        stored(b, "ops-reset", 1).await;
        let reset = |topic: &str| ResetOffset {
            group: "ops-reset-group".into(),
            topic: topic.into(),
            timestamp: -1,
            force: None,
        };
        assert_eq!(
            reset_offset(b, &reset("ops-reset-none")).unwrap_err().kind,
            Refused::TopicNotExist
        );
        assert_eq!(
            reset_offset(b, &reset("ops-reset")).unwrap_err().kind,
            Refused::NotOnline
        );
        assert_eq!(
            b.consumers.offsets.query("ops-reset-group", "ops-reset", 0),
            -1
        );
        handle.shutdown().await;
    }
}
