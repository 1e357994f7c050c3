//! A group's committed offsets (docs/commands.md#consumer-offsets): queried
//! (QUERY_CONSUMER_OFFSET) and committed (UPDATE_CONSUMER_OFFSET). Moving them to a time
//! or to the queues' ends is [`super::offset_reset`].

use vostok_remoting::protocol::message::RecordView;
use vostok_store::MessageStore;

use super::auto_create::find_or_create_group;
use super::{Client, Refusal, Refused};
use crate::state::offset::ConsumerOffsetManager;
use crate::state::topic::TopicConfigManager;
use crate::state::Consumers;

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
    /// Refuse a topic the broker does not have (remoting's UPDATE_CONSUMER_OFFSET);
    /// gRPC's UpdateOffset commits for any topic, as Apache's proxy does.
    pub(crate) topic_must_exist: bool,
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
/// the topic must exist when the request says so. Reads the consumer tables and the topic table only.
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
    if request.topic_must_exist && !topics.contains(&request.topic) {
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
            topic_must_exist: true,
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
        let any_topic = CommitOffset {
            topic_must_exist: false,
            ..unknown
        };
        commit_offset(&b.consumers, topics, peer(), &any_topic).unwrap();
        assert_eq!(
            query_offset(
                offsets,
                store,
                &query("ops-offset-group", "ops-offset-none", false)
            ),
            Ok(1),
            "committed without the topic when the front end allows it"
        );
        handle.shutdown().await;
    }
}
