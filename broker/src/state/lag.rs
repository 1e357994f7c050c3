//! Truthful lag (docs/operations.md#lag): per group and queue, the messages behind and
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

use std::collections::{BTreeSet, HashMap};

use vostok_remoting::protocol::body::{GroupLagBody, QueueLagEntry};
use vostok_remoting::protocol::topic;

use super::Broker;

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

impl Broker {
    /// Groups known here: with committed offsets or online.
    pub(crate) fn known_groups(&self) -> BTreeSet<String> {
        let mut groups: BTreeSet<String> = self
            .offsets
            .topic_groups()
            .into_iter()
            .map(|(_, g)| g)
            .collect();
        groups.extend(self.clients.consumer_groups().into_iter().map(|(g, _)| g));
        groups
    }

    /// The topics `group` consumes here: with committed offsets, subscribed by an
    /// online client, and its retry topic when it exists. DLQs are not included.
    pub(crate) fn group_topics(&self, group: &str) -> BTreeSet<String> {
        let mut topics: BTreeSet<String> = self
            .offsets
            .topic_groups()
            .into_iter()
            .filter(|(_, g)| g == group)
            .map(|(t, _)| t)
            .collect();
        if let Some(info) = self.clients.consumer_group(group) {
            topics.extend(info.subscriptions.keys().cloned());
        }
        let retry = topic::retry_topic(group);
        if self.topics.get(&retry).is_some() {
            topics.insert(retry);
        }
        topics.retain(|t| !topic::is_dlq_topic(t) && self.topics.get(t).is_some());
        topics
    }

    /// Where the slowest consumer group of `topic` stands on each queue, for the
    /// store's retention (`vostok_store::ConsumedOffsets`): the groups with offsets or
    /// noted here and the online clustering subscribers count; one that has not
    /// committed on a queue is at its start, whatever its `consumeFromWhere`, since
    /// the broker cannot tell where it will begin.
    pub(crate) fn min_committed_offsets(&self, topic: &str) -> HashMap<i32, i64> {
        let online = self.clients.clustering_groups_subscribing(topic);
        self.offsets.min_committed_offsets(topic, &online)
    }

    /// The lag of `group` on one queue.
    pub(crate) fn queue_lag(&self, group: &str, topic: &str, queue_id: i32) -> QueueLag {
        let store = &self.store;
        let max = store.max_offset_in_queue(topic, queue_id);
        let min = store.min_offset_in_queue(topic, queue_id);
        let committed = self.offsets.query(group, topic, queue_id);
        let consumer_offset = (committed >= 0).then_some(committed);
        let from = consumer_offset.unwrap_or(min).clamp(min, max.max(min));
        let removed = self.removals.of_queue(topic, queue_id);
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
        let inflight = self.pop.unacked_on(topic, group, queue_id);
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

    /// The lag of `group` on every queue of every topic it consumes here.
    pub(crate) fn group_lag(&self, group: &str, only_topic: Option<&str>) -> GroupLag {
        let mut out = GroupLag::default();
        let topics: Vec<String> = match only_topic {
            Some(t) => {
                let mut ts = vec![t.to_owned()];
                let retry = topic::retry_topic(group);
                if self.topics.get(&retry).is_some() && t != retry {
                    ts.push(retry);
                }
                ts
            }
            None => self.group_topics(group).into_iter().collect(),
        };
        for t in topics {
            let Some(config) = self.topics.get(&t) else {
                continue;
            };
            for queue_id in 0..config.read_queue_nums.max(config.write_queue_nums) {
                out.queues.push(self.queue_lag(group, &t, queue_id));
            }
        }
        let dlq = topic::dlq_topic(group);
        if let Some(config) = self.topics.get(&dlq) {
            out.dlq_messages = (0..config.read_queue_nums.max(config.write_queue_nums))
                .map(|q| {
                    let max = self.store.max_offset_in_queue(&dlq, q);
                    let min = self.store.min_offset_in_queue(&dlq, q);
                    (max - min - self.removals.count_in(&dlq, q, min, max)).max(0)
                })
                .sum();
        }
        out
    }
}
