//! Truthful lag (docs/operations.md#lag), for VOSTOK_GET_GROUP_LAG, the console and
//! the metrics: per group and queue, the messages behind and
//! how old the oldest of them is, from the broker's own tables.
//!
//! For a queue: `lag = maxOffset − committed − removed in between`, where `committed`
//! is the group's committed offset (the queue's min offset when it never committed);
//! `oldest unconsumed` is the store time of the first message at or past `committed`
//! that was not removed; `seconds behind = now − that store time` (0 when nothing is
//! behind). A group's retry topic (`%RETRY%group`) is a queue like any other; its DLQ
//! (`%DLQ%group`) is counted apart, as messages no consumer will take.
//!
//! Reads take the offset table's lock once per queue and one store-time lookup; this
//! runs at scrape and admin time, never on the message path.

use std::collections::BTreeSet;

use vostok_remoting::protocol::body::{GroupLagBody, QueueLagEntry};
use vostok_remoting::protocol::topic;

use crate::state::pop::PopState;
use crate::state::{Consumers, Storage};

/// Whose lag, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LagOf {
    pub(crate) group: String,
    /// One topic (and the group's retry topic), or every topic it consumes here.
    pub(crate) topic: Option<String>,
}

impl LagOf {
    /// The group's lag on every topic it consumes here.
    pub(crate) fn all(group: &str) -> Self {
        LagOf {
            group: group.to_owned(),
            topic: None,
        }
    }
}

/// The lag of one group on one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueLag {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    /// The queue's next offset.
    pub(crate) broker_offset: i64,
    /// The group's committed offset; `None` when it never committed one here.
    pub(crate) consumer_offset: Option<i64>,
    /// Messages behind, removed ones excluded.
    pub(crate) lag: i64,
    /// Store time of the oldest unconsumed message, ms; `None` when nothing is behind.
    pub(crate) oldest_unconsumed: Option<i64>,
    /// Popped and not acked (POP consumers).
    pub(crate) inflight: i64,
}

impl QueueLag {
    /// Milliseconds behind at `now`.
    pub(crate) fn latency_ms(&self, now: i64) -> i64 {
        self.oldest_unconsumed.map_or(0, |t| (now - t).max(0))
    }
}

impl GroupLag {
    /// The wire form (VOSTOK_GET_GROUP_LAG), figures at `now`.
    pub(crate) fn to_body(&self, group: &str, now: i64) -> GroupLagBody {
        GroupLagBody {
            group: group.to_owned(),
            now,
            queues: self
                .queues
                .iter()
                .map(|q| QueueLagEntry {
                    topic: q.topic.clone(),
                    queue_id: q.queue_id,
                    broker_offset: q.broker_offset,
                    consumer_offset: q.consumer_offset.unwrap_or(-1),
                    lag: q.lag,
                    oldest_store_timestamp: q.oldest_unconsumed.unwrap_or(0),
                    latency_ms: q.latency_ms(now),
                    inflight: q.inflight,
                })
                .collect(),
            dlq_messages: self.dlq_messages,
        }
    }
}

/// A group's lag on one broker.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupLag {
    pub(crate) queues: Vec<QueueLag>,
    /// Messages in the group's DLQ.
    pub(crate) dlq_messages: i64,
}

/// Groups known here: with committed offsets or online.
pub(crate) fn known_groups(consumers: &Consumers) -> BTreeSet<String> {
    let mut groups: BTreeSet<String> = consumers
        .offsets
        .topic_groups()
        .into_iter()
        .map(|(_, g)| g)
        .collect();
    groups.extend(
        consumers
            .clients
            .consumer_groups()
            .into_iter()
            .map(|(g, _)| g),
    );
    groups
}

/// The topics `group` consumes here: with committed offsets, subscribed by an
/// online client, and its retry topic when it exists. DLQs are not included.
pub(crate) fn group_topics(
    storage: &Storage,
    consumers: &Consumers,
    group: &str,
) -> BTreeSet<String> {
    let mut topics: BTreeSet<String> = consumers
        .offsets
        .topic_groups()
        .into_iter()
        .filter(|(_, g)| g == group)
        .map(|(t, _)| t)
        .collect();
    if let Some(info) = consumers.clients.consumer_group(group) {
        topics.extend(info.subscriptions.keys().cloned());
    }
    let retry = topic::retry_topic(group);
    if storage.topics.get(&retry).is_some() {
        topics.insert(retry);
    }
    topics.retain(|t| !topic::is_dlq_topic(t) && storage.topics.get(t).is_some());
    topics
}

/// The lag of `group` on one queue.
pub(crate) fn queue_lag(
    storage: &Storage,
    consumers: &Consumers,
    pop: &PopState,
    group: &str,
    topic: &str,
    queue_id: i32,
) -> QueueLag {
    let store = &storage.store;
    let max = store.max_offset_in_queue(topic, queue_id);
    let min = store.min_offset_in_queue(topic, queue_id);
    let committed = consumers.offsets.query(group, topic, queue_id);
    let consumer_offset = (committed >= 0).then_some(committed);
    let from = consumer_offset.unwrap_or(min).clamp(min, max.max(min));
    let removed = storage.removals.of_queue(topic, queue_id);
    let removed_behind = removed
        .as_ref()
        .map_or(0, |s| s.range(from..max.max(from)).count() as i64);
    let lag = (max - from - removed_behind).max(0);
    let oldest_unconsumed = if lag == 0 {
        None
    } else {
        (from..max)
            .filter(|o| !removed.as_ref().is_some_and(|s| s.contains(o)))
            .take(64)
            .find_map(|o| store.message_store_timestamp(topic, queue_id, o))
    };
    let inflight = pop.unacked_on(topic, group, queue_id);
    QueueLag {
        topic: topic.to_owned(),
        queue_id,
        broker_offset: max,
        consumer_offset,
        lag,
        oldest_unconsumed,
        inflight,
    }
}

/// The lag of `group` on every queue of every topic it consumes here: reads the
/// storage, the consumer tables and the POP messages in flight.
pub(crate) fn group_lag(
    storage: &Storage,
    consumers: &Consumers,
    pop: &PopState,
    request: &LagOf,
) -> GroupLag {
    let group = request.group.as_str();
    let only_topic = request.topic.as_deref().filter(|t| !t.is_empty());
    let mut out = GroupLag::default();
    let topics: Vec<String> = match only_topic {
        Some(t) => {
            let mut ts = vec![t.to_owned()];
            let retry = topic::retry_topic(group);
            if storage.topics.get(&retry).is_some() && t != retry {
                ts.push(retry);
            }
            ts
        }
        None => group_topics(storage, consumers, group)
            .into_iter()
            .collect(),
    };
    for t in topics {
        let Some(config) = storage.topics.get(&t) else {
            continue;
        };
        for queue_id in 0..config.read_queue_nums.max(config.write_queue_nums) {
            out.queues
                .push(queue_lag(storage, consumers, pop, group, &t, queue_id));
        }
    }
    let dlq = topic::dlq_topic(group);
    if let Some(config) = storage.topics.get(&dlq) {
        out.dlq_messages = (0..config.read_queue_nums.max(config.write_queue_nums))
            .map(|q| {
                let max = storage.store.max_offset_in_queue(&dlq, q);
                let min = storage.store.min_offset_in_queue(&dlq, q);
                (max - min - storage.removals.count_in(&dlq, q, min, max)).max(0)
            })
            .sum();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::browse::tests::stored;
    use super::super::testing::broker;
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lag_counts_from_the_committed_offset_less_removed_messages() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        stored(b, "ops-lag", 4).await;
        b.consumers.offsets.commit("ops-lag-group", "ops-lag", 0, 1);
        assert!(known_groups(&b.consumers).contains("ops-lag-group"));
        assert!(group_topics(&b.storage, &b.consumers, "ops-lag-group").contains("ops-lag"));
        let q = queue_lag(
            &b.storage,
            &b.consumers,
            &b.pop,
            "ops-lag-group",
            "ops-lag",
            0,
        );
        assert_eq!((q.broker_offset, q.consumer_offset, q.lag), (4, Some(1), 3));
        assert!(q.oldest_unconsumed.is_some());
        b.storage.removals.add("ops-lag", 0, 2);
        let lag = group_lag(
            &b.storage,
            &b.consumers,
            &b.pop,
            &LagOf::all("ops-lag-group"),
        );
        let q0 = lag.queues.iter().find(|q| q.queue_id == 0).unwrap();
        assert_eq!(q0.lag, 2, "a removed message is not behind");
        assert_eq!(lag.dlq_messages, 0);
        let never = queue_lag(
            &b.storage,
            &b.consumers,
            &b.pop,
            "ops-lag-new",
            "ops-lag",
            0,
        );
        assert_eq!((never.consumer_offset, never.lag), (None, 3));
        handle.shutdown().await;
    }
}
