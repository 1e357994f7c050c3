//! What the broker hands to the store, and the callbacks it can plug in.

use std::collections::HashMap;
use std::net::SocketAddr;

use bytes::Bytes;

/// A message to append (Java `MessageExtBrokerInner`). The store assigns the queue
/// offset, physical offset and store timestamp and computes the body CRC.
#[derive(Debug, Clone)]
pub struct MessageInner {
    pub topic: String,
    pub queue_id: i32,
    pub flag: i32,
    pub body: Bytes,
    /// Encoded property string (docs/message.md#property-string).
    pub properties: String,
    /// The tag hash code the broker computed. The dispatcher derives the consume-queue
    /// tag field from the stored record (hash of `TAGS`, or the delivery time for
    /// `SCHEDULE_TOPIC_XXXX`) so that queues rebuilt from the commitlog are identical;
    /// this field is kept for the broker's own use.
    pub tags_code: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
}

impl MessageInner {
    /// A message for queue `queue_id` of `topic`, born at and stored by `host`, with no
    /// flag, tag code, system flag, birth time, retries or transaction offset: callers
    /// set the fields they have on top (`MessageInner { sys_flag, ..MessageInner::new(..) }`).
    pub fn new(
        topic: impl Into<String>,
        queue_id: i32,
        body: Bytes,
        properties: String,
        host: SocketAddr,
    ) -> Self {
        MessageInner {
            topic: topic.into(),
            queue_id,
            flag: 0,
            body,
            properties,
            tags_code: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: host,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }
}

/// Server-side filtering of a pull.
pub trait MessageFilter: Send + Sync {
    /// Checks a consume-queue entry's tag code (docs/message.md#tag-hash-code).
    fn is_matched_by_consume_queue(&self, tags_code: i64) -> bool;
    /// Checks the record's encoded property string (e.g. for SQL92 filters).
    fn is_matched_by_commit_log(&self, properties: &str) -> bool {
        let _ = properties;
        true
    }
    /// True when the message at `queue_offset` must be skipped whatever its tags (the
    /// broker's removed messages); skipped offsets count as filtered out.
    fn skips_queue_offset(&self, queue_offset: i64) -> bool {
        let _ = queue_offset;
        false
    }
}

/// Told about every NOT/COMMIT record the dispatcher makes visible, right after its
/// consume-queue entry is readable. Called on the dispatcher thread: keep it short.
pub trait MessageArrivingListener: Send + Sync {
    /// `logic_offset` is the queue's new max offset (the record's queue offset + 1),
    /// as RocketMQ passes it to long polling.
    fn arriving(
        &self,
        topic: &str,
        queue_id: i32,
        logic_offset: i64,
        tags_code: i64,
        store_timestamp: i64,
        properties: &str,
    );
}

/// What consumer groups have consumed, as the broker knows it (RocketMQ's
/// `ConsumerOffsetManager`). Retention asks it before a forced, space-driven deletion
/// so that it can refuse to drop messages a group has not consumed (see `retention`).
/// Called on the retention thread, once per topic and pass.
pub trait ConsumedOffsets: Send + Sync {
    /// Where the slowest consumer group of `topic` stands on each of its queues: queue
    /// id → the lowest offset committed on it by the groups that consume the topic
    /// (every message below it is consumed by every such group). A queue is absent when
    /// one of those groups has not committed an offset on it (that group is still at
    /// the queue's start), and every queue is absent when no group consumes the topic:
    /// then none of the queue's messages counts as consumed.
    fn min_committed_offsets(&self, topic: &str) -> HashMap<i32, i64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_message_is_born_where_it_is_stored_and_carries_nothing_else() {
        let host = SocketAddr::from(([127, 0, 0, 1], 10911));
        let m = MessageInner::new("T", 3, Bytes::from_static(b"x"), "a\u{1}b".into(), host);
        assert_eq!(
            (m.topic.as_str(), m.queue_id, &m.body[..]),
            ("T", 3, &b"x"[..])
        );
        assert_eq!((m.born_host, m.store_host), (host, host));
        assert_eq!(
            (m.flag, m.tags_code, m.sys_flag, m.born_timestamp),
            (0, 0, 0, 0)
        );
        assert_eq!((m.reconsume_times, m.prepared_transaction_offset), (0, 0));
    }
}
