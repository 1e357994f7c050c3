//! FIFO POP state (`ConsumerOrderInfoManager`, docs/pop.md#fifo-pop): per (topic,
//! group, queue) the batch last popped, which of it is acked, when each offset becomes
//! visible again and how often each was handed out.
//!
//! A FIFO pop of a queue is blocked while any offset of its last batch is unacked and
//! still invisible, unless it repeats that pop's `attemptId` (a client retrying the
//! same request, which gets the same messages again). Memory: one entry per queue of a
//! group popped in FIFO mode, at most [`MAX_ORDER_ENTRIES`]; entries idle for a day go.

use std::collections::HashMap;

/// Most (topic, group, queue) entries kept; FIFO pops of new queues beyond it are refused.
pub(crate) const MAX_ORDER_ENTRIES: usize = 100_000;
/// An entry untouched this long is dropped (`CLEAN_SPAN_FROM_LAST`).
const IDLE_MS: i64 = 24 * 3600 * 1000;

pub(crate) type OrderKey = (String, String, i32);

#[derive(Debug, Clone, Default)]
pub(crate) struct OrderInfo {
    pub(crate) pop_time: i64,
    pub(crate) invisible_time: i64,
    /// Queue offsets of the last batch, ascending.
    pub(crate) offsets: Vec<i64>,
    /// Offset → when it becomes visible again, after CHANGE_MESSAGE_INVISIBLETIME.
    pub(crate) next_visible: HashMap<i64, i64>,
    /// Offset → times handed out before (0 for the first delivery).
    pub(crate) consumed: HashMap<i64, i32>,
    /// Bit i: `offsets[i]` acked.
    pub(crate) acked: u64,
    pub(crate) attempt_id: Option<String>,
    pub(crate) last_used: i64,
}

impl OrderInfo {
    fn is_acked(&self, i: usize) -> bool {
        i < 64 && self.acked & (1 << i) != 0
    }

    /// `needBlock`: an unacked offset of the batch is still invisible at `now`.
    pub(crate) fn blocks(&self, attempt_id: Option<&str>, now: i64) -> bool {
        if self.attempt_id.is_some() && self.attempt_id.as_deref() == attempt_id {
            return false;
        }
        self.offsets.iter().enumerate().any(|(i, off)| {
            !self.is_acked(i)
                && now
                    < self
                        .next_visible
                        .get(off)
                        .copied()
                        .unwrap_or(self.pop_time + self.invisible_time)
        })
    }

    /// The first unacked offset, or the one after the batch when all are acked.
    pub(crate) fn next_offset(&self) -> Option<i64> {
        let last = *self.offsets.last()?;
        Some(
            self.offsets
                .iter()
                .enumerate()
                .find(|(i, _)| !self.is_acked(*i))
                .map_or(last + 1, |(_, o)| *o),
        )
    }
}

/// Why an ack or invisible-time change of a FIFO message was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum OrderError {
    /// No batch of that queue, or the offset is not in it.
    NotFound,
    /// The handle's pop time is not the batch's: a stale handle.
    StalePopTime,
}

#[derive(Default)]
pub(crate) struct OrderTable {
    map: HashMap<OrderKey, OrderInfo>,
}

impl OrderTable {
    /// True when a FIFO pop of the queue must skip it now.
    pub(crate) fn check_block(&self, key: &OrderKey, attempt_id: Option<&str>, now: i64) -> bool {
        self.map.get(key).is_some_and(|o| o.blocks(attempt_id, now))
    }

    /// Room for an entry of `key` (an existing one, or a free slot after cleaning).
    pub(crate) fn has_room(&mut self, key: &OrderKey, now: i64) -> bool {
        if self.map.contains_key(key) || self.map.len() < MAX_ORDER_ENTRIES {
            return true;
        }
        self.map
            .retain(|_, o| now - o.last_used < IDLE_MS && o.blocks(None, now));
        self.map.len() < MAX_ORDER_ENTRIES
    }

    /// Records a FIFO pop of `offsets`; returns each offset's earlier deliveries and the
    /// smallest of them (for `orderCountInfo`).
    pub(crate) fn update(
        &mut self,
        key: OrderKey,
        attempt_id: Option<String>,
        pop_time: i64,
        invisible_time: i64,
        offsets: Vec<i64>,
    ) -> (Vec<(i64, i32)>, i32) {
        let previous = self.map.remove(&key);
        let consumed: HashMap<i64, i32> = match &previous {
            Some(prev) if prev.attempt_id.is_some() && prev.attempt_id == attempt_id => {
                prev.consumed.clone()
            }
            Some(prev) => offsets
                .iter()
                .filter(|o| prev.offsets.contains(o))
                .map(|o| (*o, prev.consumed.get(o).copied().unwrap_or(0) + 1))
                .collect(),
            None => HashMap::new(),
        };
        let counts: Vec<(i64, i32)> = offsets
            .iter()
            .map(|o| (*o, consumed.get(o).copied().unwrap_or(0)))
            .collect();
        let min = counts.iter().map(|(_, c)| *c).min().unwrap_or(0);
        self.map.insert(
            key,
            OrderInfo {
                pop_time,
                invisible_time,
                offsets,
                next_visible: HashMap::new(),
                consumed,
                acked: 0,
                attempt_id,
                last_used: pop_time,
            },
        );
        (counts, min)
    }

    /// `commitAndNext`: marks `offset` acked and returns the offset to commit.
    pub(crate) fn commit_and_next(
        &mut self,
        key: &OrderKey,
        offset: i64,
        pop_time: i64,
    ) -> Result<i64, OrderError> {
        let Some(info) = self.map.get_mut(key) else {
            // Nothing known of the queue (a restart): the ack moves past the offset.
            return Ok(offset + 1);
        };
        if info.pop_time != pop_time {
            return Err(OrderError::StalePopTime);
        }
        let i = info
            .offsets
            .iter()
            .position(|o| *o == offset)
            .filter(|i| *i < 64)
            .ok_or(OrderError::NotFound)?;
        info.acked |= 1 << i;
        info.last_used = pop_time.max(info.last_used);
        info.next_offset().ok_or(OrderError::NotFound)
    }

    /// `updateNextVisibleTime`.
    pub(crate) fn set_next_visible(
        &mut self,
        key: &OrderKey,
        offset: i64,
        pop_time: i64,
        at: i64,
    ) -> Result<(), OrderError> {
        let info = self.map.get_mut(key).ok_or(OrderError::NotFound)?;
        if info.pop_time != pop_time {
            return Err(OrderError::StalePopTime);
        }
        if !info.offsets.contains(&offset) {
            return Err(OrderError::NotFound);
        }
        info.next_visible.insert(offset, at);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> OrderKey {
        ("T".into(), "g".into(), 0)
    }

    #[test]
    fn a_popped_batch_blocks_until_acked_or_visible_again() {
        let mut t = OrderTable::default();
        t.update(key(), Some("a1".into()), 1000, 500, vec![4, 5]);
        assert!(t.check_block(&key(), None, 1200));
        assert!(!t.check_block(&key(), Some("a1"), 1200), "same attempt");
        assert!(t.check_block(&key(), Some("a2"), 1200));
        assert!(!t.check_block(&key(), None, 1500), "invisible time over");
        assert_eq!(t.commit_and_next(&key(), 5, 1000), Ok(4), "4 still unacked");
        assert_eq!(
            t.commit_and_next(&key(), 4, 999),
            Err(OrderError::StalePopTime)
        );
        assert_eq!(t.commit_and_next(&key(), 4, 1000), Ok(6));
        assert!(!t.check_block(&key(), None, 1200), "all acked");
        assert_eq!(
            t.commit_and_next(&key(), 9, 1000),
            Err(OrderError::NotFound)
        );
    }

    #[test]
    fn changed_invisible_time_and_consume_counts() {
        let mut t = OrderTable::default();
        let (counts, min) = t.update(key(), None, 1000, 500, vec![4, 5]);
        assert_eq!((counts, min), (vec![(4, 0), (5, 0)], 0));
        t.set_next_visible(&key(), 4, 1000, 3000).unwrap();
        assert!(t.check_block(&key(), None, 2000));
        assert!(!t.check_block(&key(), None, 3000));
        // Popped again after the lapse: both come back with a count of 1.
        let (counts, min) = t.update(key(), None, 3000, 500, vec![4, 5, 6]);
        assert_eq!(counts, vec![(4, 1), (5, 1), (6, 0)]);
        assert_eq!(min, 0);
        // The same attempt keeps the counts.
        t.update(key(), Some("x".into()), 4000, 500, vec![4]);
        let (counts, _) = t.update(key(), Some("x".into()), 4100, 500, vec![4]);
        assert_eq!(counts, vec![(4, 2)]);
        assert_eq!(
            t.set_next_visible(&key(), 9, 4100, 1),
            Err(OrderError::NotFound)
        );
    }
}
