//! Messages an operator removed (docs/operations.md#removal): RocketMQ has no delete,
//! so a removal is a record, and pulls and pops skip what the records name.
//!
//! A removal names one message by `(topic, queue id, queue offset)`, checked against
//! its commitlog offset when it is made. It is stored as a message of the system topic
//! `rmq_sys_REMOVED_MESSAGE` (JSON body, below) before the table here learns it, so
//! it survives restarts (start-up replays the topic) and reaches slaves with the
//! commitlog like any record. Reads consult the table only for a queue that has
//! removals: an atomic load per pull otherwise.
//!
//! ```text
//! {"topic":"T","queueId":1,"queueOffset":42,"commitLogOffset":8192,
//!  "msgId":"7F00...","removedAt":1700000000000}
//! ```
//!
//! The record carries the removal twice: as JSON in its body (for people and tools)
//! and as three properties (`VOSTOK_REMOVED_TOPIC`, `VOSTOK_REMOVED_QUEUE_ID`,
//! `VOSTOK_REMOVED_QUEUE_OFFSET`), which the dispatcher's arrival callback reads
//! without touching the commitlog ([`from_properties`]); [`replay`] refills the table
//! from the records at start-up.
//!
//! Memory: one set entry per removed message; entries whose offsets retention has
//! removed from the queue are dropped by [`RemovedMessages::prune`].

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic::REMOVED_MESSAGE_TOPIC;
use vostok_remoting::support::sync::RwLockExt;
use vostok_store::{GetMessageResult, GetMessageStatus, MessageFilter, MessageStore};

use super::consumer_filter::ExpressionMessageFilter;

const P_TOPIC: &str = "VOSTOK_REMOVED_TOPIC";
const P_QUEUE: &str = "VOSTOK_REMOVED_QUEUE_ID";
const P_OFFSET: &str = "VOSTOK_REMOVED_QUEUE_OFFSET";

/// The properties of the record of `removal`.
pub(crate) fn record_properties(removal: &Removal) -> Properties {
    let offset_text = removal.queue_offset.to_string();
    let queue_text = removal.queue_id.to_string();
    [
        (P_TOPIC, removal.topic.as_str()),
        (P_QUEUE, queue_text.as_str()),
        (P_OFFSET, offset_text.as_str()),
        (property::KEYS, removal.msg_id.as_str()),
    ]
    .into_iter()
    .collect()
}

/// The removal named by a record's properties.
pub(crate) fn from_properties(properties: &str) -> Option<(String, i32, i64)> {
    Some((
        property::find(properties, P_TOPIC)?.to_owned(),
        property::find(properties, P_QUEUE)?.parse().ok()?,
        property::find(properties, P_OFFSET)?.parse().ok()?,
    ))
}

/// Refills `removals` from `rmq_sys_REMOVED_MESSAGE` (start-up), then drops those
/// retention has made useless.
pub(crate) fn replay(removals: &RemovedMessages, store: &MessageStore) {
    let mut offset = store.min_offset_in_queue(REMOVED_MESSAGE_TOPIC, 0);
    loop {
        let got = store.get_message(REMOVED_MESSAGE_TOPIC, 0, offset, 256, i32::MAX, None);
        if got.status != GetMessageStatus::Found {
            break;
        }
        for raw in &got.messages {
            if let Ok(msg) = MessageExt::decode(raw, false) {
                let p = &msg.properties;
                let named = p.get(P_TOPIC).zip(p.get(P_QUEUE)).zip(p.get(P_OFFSET));
                if let Some(((t, q), o)) = named {
                    if let (Ok(q), Ok(o)) = (q.parse(), o.parse()) {
                        removals.add(t, q, o);
                    }
                }
            }
        }
        if got.next_begin_offset <= offset {
            break;
        }
        offset = got.next_begin_offset;
    }
    removals.prune(|t, q| store.min_offset_in_queue(t, q));
}

/// One removal record's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Removal {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) queue_offset: i64,
    pub(crate) commit_log_offset: i64,
    #[serde(default)]
    pub(crate) msg_id: String,
    #[serde(default)]
    pub(crate) removed_at: i64,
}

type QueueSet = Arc<BTreeSet<i64>>;

/// The removed queue offsets of every queue.
#[derive(Default)]
pub(crate) struct RemovedMessages {
    /// False while nothing was ever removed: the pull path's fast exit.
    any: AtomicBool,
    table: RwLock<HashMap<String, HashMap<i32, QueueSet>>>,
}

impl RemovedMessages {
    /// Adds a removal (after its record is stored, or while replaying). True when new.
    pub(crate) fn add(&self, topic: &str, queue_id: i32, queue_offset: i64) -> bool {
        let mut table = self.table.write_locked();
        let set = table
            .entry(topic.to_owned())
            .or_default()
            .entry(queue_id)
            .or_default();
        if set.contains(&queue_offset) {
            return false;
        }
        Arc::make_mut(set).insert(queue_offset);
        self.any.store(true, Ordering::Release);
        true
    }

    /// The removed offsets of a queue; `None` (cheaply) when it has none.
    #[inline]
    pub(crate) fn of_queue(&self, topic: &str, queue_id: i32) -> Option<QueueSet> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.table
            .read_locked()
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .filter(|s| !s.is_empty())
            .cloned()
    }

    pub(crate) fn is_removed(&self, topic: &str, queue_id: i32, queue_offset: i64) -> bool {
        self.of_queue(topic, queue_id)
            .is_some_and(|s| s.contains(&queue_offset))
    }

    /// Removed offsets in `from..to` of a queue (lag excludes them).
    pub(crate) fn count_in(&self, topic: &str, queue_id: i32, from: i64, to: i64) -> i64 {
        match self.of_queue(topic, queue_id) {
            Some(s) if from < to => s.range(from..to).count() as i64,
            _ => 0,
        }
    }

    /// Drops removals below each queue's min offset (`min_offset(topic, queue)`):
    /// retention has deleted those messages anyway.
    pub(crate) fn prune(&self, min_offset: impl Fn(&str, i32) -> i64) {
        let mut table = self.table.write_locked();
        for (topic, queues) in table.iter_mut() {
            for (queue_id, set) in queues.iter_mut() {
                let min = min_offset(topic, *queue_id);
                if set.first().is_some_and(|first| *first < min) {
                    Arc::make_mut(set).retain(|o| *o >= min);
                }
            }
            queues.retain(|_, s| !s.is_empty());
        }
        table.retain(|_, q| !q.is_empty());
    }

    /// Forgets a deleted topic's removals.
    pub(crate) fn remove_topic(&self, topic: &str) {
        self.table.write_locked().remove(topic);
    }
}

/// Wraps a pull's or pop's filter so that it also skips removed offsets.
pub(crate) struct SkipRemoved<'a> {
    pub(crate) inner: Option<&'a dyn MessageFilter>,
    pub(crate) removed: QueueSet,
}

impl MessageFilter for SkipRemoved<'_> {
    fn is_matched_by_consume_queue(&self, tags_code: i64) -> bool {
        self.inner
            .is_none_or(|f| f.is_matched_by_consume_queue(tags_code))
    }

    fn is_matched_by_commit_log(&self, properties: &str) -> bool {
        self.inner
            .is_none_or(|f| f.is_matched_by_commit_log(properties))
    }

    fn skips_queue_offset(&self, queue_offset: i64) -> bool {
        self.removed.contains(&queue_offset)
    }
}

impl super::Storage {
    /// The store's `get_message` for a consumer: what `filter` passes, minus the
    /// messages an operator removed. Costs one atomic load when nothing was removed.
    pub(crate) fn get_for_consumer(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: i32,
        max_bytes: i32,
        filter: Option<&dyn MessageFilter>,
    ) -> GetMessageResult {
        let removed = self.removals.of_queue(topic, queue_id);
        get_skipping(
            &self.store,
            removed,
            (topic, queue_id, offset),
            (max_count, max_bytes),
            filter,
        )
    }

    /// [`Self::get_for_consumer`] for a caller on the async runtime: a read the tier
    /// answers runs on the tier's reader threads, never on the runtime's workers
    /// (docs/tiered-storage.md#reads-and-the-hot-tail); one the tier's readers cannot
    /// take in time answers "not found" at `offset`, and the consumer asks again.
    pub(crate) async fn get_for_consumer_async(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        (max_count, max_bytes): (i32, i32),
        filter: Option<&ExpressionMessageFilter>,
    ) -> GetMessageResult {
        let store = &self.store;
        let removed = self.removals.of_queue(topic, queue_id);
        if !store.reads_from_tier(topic, queue_id, offset) {
            let filter = filter.map(|f| f as &dyn MessageFilter);
            let at = (topic, queue_id, offset);
            return get_skipping(store, removed, at, (max_count, max_bytes), filter);
        }
        let (s, t, filter) = (Arc::clone(store), topic.to_owned(), filter.cloned());
        let read = store.on_tier_readers(move || {
            let filter = filter.as_ref().map(|f| f as &dyn MessageFilter);
            get_skipping(
                &s,
                removed,
                (&t, queue_id, offset),
                (max_count, max_bytes),
                filter,
            )
        });
        match read.await {
            Some(got) => got,
            None => GetMessageResult::empty(
                GetMessageStatus::OffsetFoundNull,
                offset,
                store.min_offset_in_queue(topic, queue_id),
                store.max_offset_in_queue(topic, queue_id),
            ),
        }
    }
}

/// `get_message` through `filter`, skipping the `removed` offsets.
fn get_skipping(
    store: &MessageStore,
    removed: Option<QueueSet>,
    (topic, queue_id, offset): (&str, i32, i64),
    (max_count, max_bytes): (i32, i32),
    filter: Option<&dyn MessageFilter>,
) -> GetMessageResult {
    let skip = removed.map(|removed| SkipRemoved {
        inner: filter,
        removed,
    });
    let filter = match &skip {
        Some(s) => Some(s as &dyn MessageFilter),
        None => filter,
    };
    store.get_message(topic, queue_id, offset, max_count, max_bytes, filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removals_are_kept_per_queue_and_pruned_by_retention() {
        let r = RemovedMessages::default();
        assert!(r.of_queue("T", 0).is_none());
        assert!(r.add("T", 0, 5));
        assert!(!r.add("T", 0, 5), "twice is once");
        assert!(r.add("T", 0, 9));
        assert!(r.add("U", 1, 2));
        assert!(r.is_removed("T", 0, 5));
        assert!(!r.is_removed("T", 1, 5));
        assert_eq!(r.count_in("T", 0, 0, 10), 2);
        assert_eq!(r.count_in("T", 0, 6, 10), 1);
        r.prune(|t, _| if t == "T" { 6 } else { 0 });
        assert!(!r.is_removed("T", 0, 5) && r.is_removed("T", 0, 9) && r.is_removed("U", 1, 2));
        r.remove_topic("U");
        assert!(!r.is_removed("U", 1, 2) && r.is_removed("T", 0, 9));
    }

    #[test]
    fn the_record_body_is_camel_case_json() {
        let body = Removal {
            topic: "T".into(),
            queue_id: 1,
            queue_offset: 42,
            commit_log_offset: 8192,
            msg_id: "ID".into(),
            removed_at: 7,
        };
        let text = serde_json::to_string(&body).unwrap();
        assert_eq!(
            text,
            r#"{"topic":"T","queueId":1,"queueOffset":42,"commitLogOffset":8192,"msgId":"ID","removedAt":7}"#
        );
        assert_eq!(serde_json::from_str::<Removal>(&text).unwrap(), body);
    }
}
