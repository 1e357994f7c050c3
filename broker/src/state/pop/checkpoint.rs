//! Live POP checkpoints (docs/pop.md#checkpoints-acks-and-revive): one per batch popped
//! from one queue, with the batch's queue offsets and an ack bit per offset.
//!
//! A checkpoint is live from the pop until every offset is acked or its revive time
//! (`popTime + invisibleTime`) passes and the revive service takes it. Each one is
//! also a record in the revive topic; the table remembers which record, so that the
//! revive progress of a revive queue (its watermark) never passes a live checkpoint.
//!
//! Memory: at most `popCkMaxBufferSize` live checkpoints (pops beyond it are refused),
//! about 200 bytes each; the due heap is compacted when dead entries outnumber live ones.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;

/// What identifies a checkpoint, and what an ack names (`extraInfo` fields 0 and 1 with
/// the topic, group and queue): RocketMQ's merge key without the broker name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CkKey {
    pub(crate) topic: Arc<str>,
    pub(crate) group: Arc<str>,
    pub(crate) queue_id: i32,
    pub(crate) start_offset: i64,
    pub(crate) pop_time: i64,
}

/// One popped batch.
#[derive(Debug, Clone)]
pub(crate) struct Checkpoint {
    pub(crate) key: CkKey,
    pub(crate) invisible_time: i64,
    /// Queue offsets of the batch minus `start_offset`, ascending.
    pub(crate) diffs: Box<[u32]>,
    /// Bit i: the message at `diffs[i]` is acked.
    pub(crate) acked: u64,
    /// Where the checkpoint's record is: revive queue and queue offset.
    pub(crate) revive_qid: i32,
    pub(crate) revive_offset: i64,
}

/// Most messages one checkpoint covers (the ack bitmap's width).
pub(crate) const MAX_CK_MESSAGES: usize = 64;

impl Checkpoint {
    pub(crate) fn revive_time(&self) -> i64 {
        self.key.pop_time.saturating_add(self.invisible_time)
    }

    pub(crate) fn offset_at(&self, i: usize) -> i64 {
        self.key.start_offset + i64::from(self.diffs[i])
    }

    /// Index of a queue offset in the batch.
    pub(crate) fn index_of(&self, offset: i64) -> Option<usize> {
        let diff = u32::try_from(offset.checked_sub(self.key.start_offset)?).ok()?;
        self.diffs.binary_search(&diff).ok()
    }

    pub(crate) fn is_acked(&self, i: usize) -> bool {
        self.acked & (1 << i) != 0
    }

    pub(crate) fn all_acked(&self) -> bool {
        let n = self.diffs.len();
        let all = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        self.acked & all == all
    }

    /// The queue offsets not acked yet.
    #[cfg(test)]
    pub(crate) fn unacked(&self) -> Vec<i64> {
        (0..self.diffs.len())
            .filter(|&i| !self.is_acked(i))
            .map(|i| self.offset_at(i))
            .collect()
    }

    /// The offset after the batch's last message.
    pub(crate) fn end_offset(&self) -> i64 {
        self.diffs.last().map_or(self.key.start_offset, |d| {
            self.key.start_offset + i64::from(*d) + 1
        })
    }
}

/// What [`CheckpointTable::ack`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AckOutcome {
    /// The bit was set; `(revive_qid)` is where to record it. `done`: every offset is
    /// acked and the checkpoint is gone.
    Acked { revive_qid: i32, done: bool },
    /// Already acked, or not an offset of the batch.
    Unchanged,
    /// No live checkpoint with that key: finished, revived, or never popped here.
    NotFound,
}

#[derive(Default)]
pub(crate) struct CheckpointTable {
    by_id: HashMap<u64, Checkpoint>,
    by_key: HashMap<CkKey, u64>,
    /// Reverse((revive time, id)); entries of finished checkpoints are skipped lazily.
    due: BinaryHeap<Reverse<(i64, u64)>>,
    /// Revive queue → queue offsets of records whose checkpoint is live or being revived.
    records: HashMap<i32, BTreeSet<i64>>,
    next_id: u64,
}

impl CheckpointTable {
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Adds a checkpoint whose record is stored (or replaces one with the same key, as
    /// a record read twice during replay would).
    pub(crate) fn insert(&mut self, ck: Checkpoint) {
        if let Some(old) = self.by_key.get(&ck.key).copied() {
            self.remove_id(old);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.due.push(Reverse((ck.revive_time(), id)));
        self.records
            .entry(ck.revive_qid)
            .or_default()
            .insert(ck.revive_offset);
        self.by_key.insert(ck.key.clone(), id);
        self.by_id.insert(id, ck);
        self.compact();
    }

    pub(crate) fn get(&self, key: &CkKey) -> Option<&Checkpoint> {
        self.by_key.get(key).and_then(|id| self.by_id.get(id))
    }

    /// Marks `offset` of the checkpoint `key` acked; a checkpoint with every offset
    /// acked is removed.
    pub(crate) fn ack(&mut self, key: &CkKey, offset: i64) -> AckOutcome {
        let Some(&id) = self.by_key.get(key) else {
            return AckOutcome::NotFound;
        };
        let Some(ck) = self.by_id.get_mut(&id) else {
            return AckOutcome::NotFound;
        };
        let Some(i) = ck.index_of(offset) else {
            return AckOutcome::Unchanged;
        };
        if ck.is_acked(i) {
            return AckOutcome::Unchanged;
        }
        ck.acked |= 1 << i;
        let revive_qid = ck.revive_qid;
        let done = ck.all_acked();
        if done {
            self.remove_id(id);
        }
        AckOutcome::Acked { revive_qid, done }
    }

    /// True when some live checkpoint of `group` on the queue holds `offset` unacked:
    /// popped, not acked, not yet revived. A scan of the live checkpoints (admin only).
    pub(crate) fn holds_unacked(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        offset: i64,
    ) -> bool {
        self.by_id.values().any(|ck| {
            ck.key.queue_id == queue_id
                && &*ck.key.topic == topic
                && &*ck.key.group == group
                && ck.index_of(offset).is_some_and(|i| !ck.is_acked(i))
        })
    }

    /// Unacked popped messages of `group` on one queue
    /// (`rocketmq_consumer_inflight_messages`).
    pub(crate) fn unacked_count(&self, topic: &str, group: &str, queue_id: i32) -> i64 {
        self.by_id
            .values()
            .filter(|ck| {
                ck.key.queue_id == queue_id && &*ck.key.topic == topic && &*ck.key.group == group
            })
            .map(|ck| (0..ck.diffs.len()).filter(|&i| !ck.is_acked(i)).count() as i64)
            .sum()
    }

    /// True when `offset` of checkpoint `key` is live and not acked.
    pub(crate) fn is_pending(&self, key: &CkKey, offset: i64) -> bool {
        self.get(key)
            .and_then(|ck| ck.index_of(offset).map(|i| !ck.is_acked(i)))
            .unwrap_or(false)
    }

    /// Takes up to `max` checkpoints due at `now` out of the table. Their records stay
    /// counted in the watermark until [`CheckpointTable::finish_revive`].
    pub(crate) fn take_due(&mut self, now: i64, max: usize) -> Vec<Checkpoint> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(Reverse((at, id))) = self.due.peek().copied() else {
                break;
            };
            if at > now {
                break;
            }
            self.due.pop();
            if let Some(ck) = self.by_id.remove(&id) {
                self.by_key.remove(&ck.key);
                out.push(ck);
            }
        }
        out
    }

    /// A checkpoint taken by [`CheckpointTable::take_due`] is revived and recorded.
    pub(crate) fn finish_revive(&mut self, revive_qid: i32, revive_offset: i64) {
        self.forget_record(revive_qid, revive_offset);
    }

    /// Puts back a checkpoint whose revive failed, due again at `retry_at`.
    pub(crate) fn restore(&mut self, mut ck: Checkpoint, retry_at: i64) {
        ck.invisible_time = retry_at.saturating_sub(ck.key.pop_time);
        self.forget_record(ck.revive_qid, ck.revive_offset);
        self.insert(ck);
    }

    /// The first record of `revive_qid` still needed: the lowest live record offset.
    pub(crate) fn first_live_record(&self, revive_qid: i32) -> Option<i64> {
        self.records
            .get(&revive_qid)
            .and_then(|r| r.first().copied())
    }

    /// The earliest revive time, for the revive service's sleep.
    pub(crate) fn next_due(&mut self) -> Option<i64> {
        while let Some(Reverse((at, id))) = self.due.peek().copied() {
            if self.by_id.contains_key(&id) {
                return Some(at);
            }
            self.due.pop();
        }
        None
    }

    fn remove_id(&mut self, id: u64) {
        if let Some(ck) = self.by_id.remove(&id) {
            self.by_key.remove(&ck.key);
            self.forget_record(ck.revive_qid, ck.revive_offset);
        }
    }

    fn forget_record(&mut self, revive_qid: i32, revive_offset: i64) {
        if let Some(r) = self.records.get_mut(&revive_qid) {
            r.remove(&revive_offset);
            if r.is_empty() {
                self.records.remove(&revive_qid);
            }
        }
    }

    /// Drops heap entries of finished checkpoints once they outnumber the live ones.
    fn compact(&mut self) {
        if self.due.len() > 1024 && self.due.len() > 2 * self.by_id.len() {
            let live = &self.by_id;
            self.due.retain(|Reverse((_, id))| live.contains_key(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn ck(start: i64, pop_time: i64, diffs: &[u32], qid: i32, at: i64) -> Checkpoint {
        Checkpoint {
            key: CkKey {
                topic: "T".into(),
                group: "g".into(),
                queue_id: 0,
                start_offset: start,
                pop_time,
            },
            invisible_time: 1000,
            diffs: diffs.into(),
            acked: 0,
            revive_qid: qid,
            revive_offset: at,
        }
    }

    #[test]
    fn acks_set_bits_and_finish_the_checkpoint() {
        let mut t = CheckpointTable::default();
        let c = ck(10, 5, &[0, 2, 3], 1, 7);
        let key = c.key.clone();
        assert_eq!(c.end_offset(), 14);
        t.insert(c);
        assert_eq!(t.first_live_record(1), Some(7));
        assert_eq!(t.ack(&key, 11), AckOutcome::Unchanged, "not in the batch");
        assert_eq!(
            t.ack(&key, 12),
            AckOutcome::Acked {
                revive_qid: 1,
                done: false
            }
        );
        assert_eq!(t.ack(&key, 12), AckOutcome::Unchanged, "twice");
        assert!(t.is_pending(&key, 10) && !t.is_pending(&key, 12));
        assert_eq!(t.get(&key).unwrap().unacked(), vec![10, 13]);
        t.ack(&key, 10);
        assert_eq!(
            t.ack(&key, 13),
            AckOutcome::Acked {
                revive_qid: 1,
                done: true
            }
        );
        assert_eq!(t.len(), 0);
        assert_eq!(t.first_live_record(1), None);
        assert_eq!(t.ack(&key, 13), AckOutcome::NotFound);
    }

    #[test]
    fn due_checkpoints_leave_but_hold_the_watermark_until_revived() {
        let mut t = CheckpointTable::default();
        t.insert(ck(0, 0, &[0], 0, 3)); // due at 1000
        t.insert(ck(5, 500, &[0], 0, 4)); // due at 1500
        assert_eq!(t.next_due(), Some(1000));
        assert!(t.take_due(999, 10).is_empty());
        let due = t.take_due(1200, 10);
        assert_eq!(due.len(), 1);
        assert_eq!(t.len(), 1);
        assert_eq!(t.first_live_record(0), Some(3), "still being revived");
        t.finish_revive(0, 3);
        assert_eq!(t.first_live_record(0), Some(4));
        let failed = t.take_due(2000, 10).pop().unwrap();
        t.restore(failed, 3000);
        assert_eq!(t.next_due(), Some(3000));
        assert_eq!(t.first_live_record(0), Some(4));
    }

    #[test]
    fn a_full_batch_of_64_is_acked_by_its_last_bit() {
        let diffs: Vec<u32> = (0..64).collect();
        let mut c = ck(0, 0, &diffs, 0, 0);
        c.acked = u64::MAX >> 1;
        assert!(!c.all_acked());
        c.acked = u64::MAX;
        assert!(c.all_acked());
    }

    #[test]
    fn the_heap_is_compacted() {
        let mut t = CheckpointTable::default();
        for i in 0..3000 {
            let c = ck(i, 0, &[0], 0, i);
            let key = c.key.clone();
            t.insert(c);
            t.ack(&key, i);
        }
        assert_eq!(t.len(), 0);
        assert!(t.due.len() <= 1025);
        assert_eq!(t.next_due(), None);
    }
}
