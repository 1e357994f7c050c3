//! Lookups: by commitlog offset, by key, by time; a consume queue's entries.

use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::property::{self, KEY_SEPARATOR};
use vostok_remoting::protocol::message::record::RecordView;
use vostok_remoting::protocol::message::MessageExt;

use super::MessageStore;
use crate::result::QueryMessageResult;

/// One consume-queue entry (`CqUnit`): where its message is and its tag hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueEntry {
    /// The entry's queue offset.
    pub queue_offset: i64,
    pub phy_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

/// A consume queue's bounds and some of its entries ([`MessageStore::queue_entries`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntries {
    pub min_offset: i64,
    pub max_offset: i64,
    pub entries: Vec<QueueEntry>,
}

/// Whether the record is of `topic` and has `key` as its `UNIQ_KEY` or among its `KEYS`.
fn has_key(raw: &[u8], topic: &str, key: &str) -> bool {
    RecordView::parse_message(raw, false).is_ok_and(|v| {
        v.topic() == topic
            && (property::find(v.properties(), property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                == Some(key)
                || property::find(v.properties(), property::KEYS)
                    .is_some_and(|keys| keys.split(KEY_SEPARATOR).any(|k| k == key)))
    })
}

impl MessageStore {
    /// The decoded record at `commit_log_offset` (which must be a record start).
    pub fn look_message_by_offset(&self, commit_log_offset: i64) -> Option<MessageExt> {
        let raw = self.select_one_message_by_offset(commit_log_offset)?;
        MessageExt::decode(&raw, false).ok()
    }

    /// The decoded record an offset message id (docs/message.md#offset-message-id) points
    /// to; the id's store host is not checked (a broker serves only its own store).
    pub fn look_message_by_msg_id(&self, offset_msg_id: &str) -> Option<MessageExt> {
        let (_, offset) = decode_offset_msg_id(offset_msg_id).ok()?;
        self.look_message_by_offset(offset)
    }

    /// The raw record at `commit_log_offset`, as stored; from the tier when its local
    /// file is gone.
    pub fn select_one_message_by_offset(&self, commit_log_offset: i64) -> Option<bytes::Bytes> {
        let i = self.inner();
        if i.commitlog.holds_pending_at(commit_log_offset) {
            // Acknowledged but still in the write buffer: a transaction's end or a
            // recall right after its send must find it, so it is written out now.
            if let Err(e) = i.commit_write_buffer() {
                tracing::warn!(offset = commit_log_offset, error = %e, "could not write the write buffer out for a lookup");
            }
        }
        if let Some(raw) = i.commitlog.read_record(commit_log_offset) {
            return Some(raw);
        }
        if commit_log_offset >= i.commitlog.min_offset() {
            return None;
        }
        let tier = i.tier.as_deref().filter(|t| t.serves_reads())?;
        tier.read_record(commit_log_offset, tier.deadline())
            .map_err(|e| tracing::warn!(commit_log_offset, error = %e, "tier read failed"))
            .ok()
            .flatten()
    }

    /// Records of `topic` whose `KEYS` contain `key` or whose `UNIQ_KEY` is `key`,
    /// stored within `begin_ms..=end_ms`, newest first, at most `max_num` (capped by
    /// `maxMsgsNumBatch`). Index hash collisions are filtered out here.
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max_num: i32,
        begin_ms: i64,
        end_ms: i64,
    ) -> QueryMessageResult {
        let i = self.inner();
        let mut out = QueryMessageResult::default();
        let Some(index) = &i.index else {
            return out;
        };
        let max = if max_num > 0 {
            max_num as usize
        } else {
            i.config.default_query_max_num
        }
        .min(i.config.max_msgs_num_batch);
        // Over-fetch a little: collisions are dropped below.
        let found = index.query(topic, key, max * 2, begin_ms, end_ms);
        out.index_last_update_timestamp = found.last_update_timestamp;
        out.index_last_update_phyoffset = found.last_update_phy_offset;
        for phy in found.phy_offsets {
            if out.messages.len() >= max {
                break;
            }
            let Some(raw) = i.commitlog.read_record(phy) else {
                continue;
            };
            if has_key(&raw, topic, key) && !out.messages.iter().any(|m| m == &raw) {
                out.buffer_total_size += raw.len();
                out.messages.push(raw);
            }
        }
        if out.messages.len() < max {
            self.query_tier_by_key(topic, key, max, begin_ms, end_ms, &mut out);
        }
        out
    }

    /// Adds to `out` the messages with `key` that only the tier still has.
    fn query_tier_by_key(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin_ms: i64,
        end_ms: i64,
        out: &mut QueryMessageResult,
    ) {
        let i = self.inner();
        let Some(tier) = i.tier.as_deref().filter(|t| t.serves_reads()) else {
            return;
        };
        let local_min = i.commitlog.min_offset();
        // A span that starts after the oldest local message is the local index's alone.
        let oldest_local = self.look_message_by_offset(local_min);
        if oldest_local.is_some_and(|m| begin_ms > m.store_timestamp) {
            return;
        }
        let span = (begin_ms, end_ms);
        // One deadline for the whole query: the indexes it reads and its records.
        let deadline = tier.deadline();
        let found = match tier.find_by_key(topic, key, max * 2, span, local_min, deadline) {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(topic, error = %e, "tier lookup by key failed");
                return;
            }
        };
        for (base, e) in found {
            if out.messages.len() >= max {
                break;
            }
            if e.phy >= local_min {
                continue; // the local index answers for it
            }
            let raw = match tier.read(base, e.phy, e.size.max(0) as usize, deadline) {
                Ok(raw) => raw,
                Err(err) => {
                    tracing::warn!(topic, error = %err, "tier read failed");
                    continue;
                }
            };
            if has_key(&raw, topic, key) && !out.messages.iter().any(|m| m == &raw) {
                out.buffer_total_size += raw.len();
                out.messages.push(raw);
            }
        }
    }

    /// Up to `count` entries of a consume queue from queue offset `from` (holes a
    /// truncation left are skipped), with the queue's bounds; `None` when the queue
    /// does not exist (Apache's `ConsumeQueue.iterateFrom`). With the tier on, the
    /// entries below the local queue's first come from the tier.
    pub fn queue_entries(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        count: usize,
    ) -> Option<QueueEntries> {
        let cq = self.inner().queues.find(topic, queue_id)?;
        let (local_min, max_offset) = (cq.min_offset(), cq.max_offset());
        let mut entries = if from < local_min {
            self.tier_entries(topic, queue_id, from, local_min, count)
        } else {
            Vec::new()
        };
        let start = entries
            .last()
            .map_or(from, |e| e.queue_offset + 1)
            .max(local_min);
        let local: Vec<QueueEntry> = (start..max_offset)
            .take(count - entries.len())
            .filter_map(|offset| {
                let e = cq.entry(offset)?;
                (!e.is_blank()).then_some(QueueEntry {
                    queue_offset: offset,
                    phy_offset: e.phy,
                    size: e.size,
                    tags_code: e.tags_code,
                })
            })
            .collect();
        entries.extend(local);
        Some(QueueEntries {
            min_offset: self.min_offset_in_queue(topic, queue_id),
            max_offset,
            entries,
        })
    }

    /// Up to `count` entries of a queue from `from` to `below` that only the tier has.
    fn tier_entries(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        below: i64,
        count: usize,
    ) -> Vec<QueueEntry> {
        let Some(tier) = self.inner().tier.as_deref().filter(|t| t.serves_reads()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut at = from;
        let deadline = tier.deadline();
        while out.len() < count && at < below {
            let found = match tier.entries_from(topic, queue_id, at, count - out.len(), deadline) {
                Ok(Some((_, found))) if !found.is_empty() => found,
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(topic, queue_id, error = %e, "tier read failed");
                    break;
                }
            };
            let before = out.len();
            for e in found.into_iter().take_while(|e| e.queue_offset < below) {
                at = e.queue_offset + 1;
                out.push(QueueEntry {
                    queue_offset: e.queue_offset,
                    phy_offset: e.phy,
                    size: e.size,
                    tags_code: e.tags_code,
                });
            }
            if out.len() == before {
                break; // past `below`
            }
        }
        out
    }

    /// Store time of the record at a queue offset.
    pub fn message_store_timestamp(
        &self,
        topic: &str,
        queue_id: i32,
        consume_queue_offset: i64,
    ) -> Option<i64> {
        let i = self.inner();
        let local = i
            .queues
            .find(topic, queue_id)
            .and_then(|cq| cq.entry(consume_queue_offset))
            .filter(|e| !e.is_blank())
            .and_then(|e| i.commitlog.store_timestamp_at(e.phy, e.size as usize));
        if local.is_some() {
            return local;
        }
        // Gone from the local disk: the tier's queue index has it.
        let tier = i.tier.as_deref().filter(|t| t.serves_reads())?;
        match tier.entries_from(topic, queue_id, consume_queue_offset, 1, tier.deadline()) {
            Ok(Some((_, e))) => e
                .first()
                .filter(|e| e.queue_offset == consume_queue_offset)
                .map(|e| e.store_timestamp),
            _ => None,
        }
    }

    /// Store time of the oldest message still in the queue (with the tier on, the
    /// oldest the tier has).
    pub fn earliest_message_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let cq = self.inner().queues.find(topic, queue_id)?;
        (self.min_offset_in_queue(topic, queue_id)..cq.max_offset())
            .take(64)
            .find_map(|o| self.message_store_timestamp(topic, queue_id, o))
    }

    /// The queue offset of the message stored nearest to `timestamp_ms` (an exact
    /// match first; otherwise the closer neighbour, RocketMQ 4.x
    /// `getOffsetInQueueByTime`). Binary search over the consume queue.
    /// With the tier on, a time before the local queue's oldest message is looked up in
    /// the tier (the first message stored at or after it).
    pub fn offset_in_queue_by_time(&self, topic: &str, queue_id: i32, timestamp_ms: i64) -> i64 {
        if let Some(offset) = self.tier_offset_by_time(topic, queue_id, timestamp_ms) {
            return offset;
        }
        let Some(cq) = self.inner().queues.find(topic, queue_id) else {
            return 0;
        };
        let (min, max) = (cq.min_offset(), cq.max_offset());
        if min >= max {
            return min.min(max);
        }
        // Unreadable entries (blank or deleted data) sort as oldest.
        let time = |o: i64| {
            self.message_store_timestamp(topic, queue_id, o)
                .unwrap_or(i64::MIN)
        };
        let (mut lo, mut hi) = (min, max);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if time(mid) < timestamp_ms {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == max {
            return max - 1;
        }
        if lo == min {
            return min;
        }
        let right = time(lo);
        if right == timestamp_ms {
            return lo;
        }
        let left = time(lo - 1);
        if left == i64::MIN || timestamp_ms - left > right - timestamp_ms {
            lo
        } else {
            lo - 1
        }
    }

    /// The tier's answer to [`Self::offset_in_queue_by_time`], when the time is before
    /// the local queue's oldest message and the tier has a message at or after it.
    fn tier_offset_by_time(&self, topic: &str, queue_id: i32, timestamp_ms: i64) -> Option<i64> {
        let tier = self.inner().tier.as_deref().filter(|t| t.serves_reads())?;
        if let Some(cq) = self.inner().queues.find(topic, queue_id) {
            let oldest = self.message_store_timestamp(topic, queue_id, cq.min_offset());
            // Equal: older messages of the same millisecond may be in the tier.
            if oldest.is_some_and(|t| t < timestamp_ms) {
                return None;
            }
        }
        match tier.offset_by_time(topic, queue_id, timestamp_ms, tier.deadline()) {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(topic, queue_id, error = %e, "tier lookup by time failed");
                None
            }
        }
    }
}
