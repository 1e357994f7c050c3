//! POP consumption state (docs/pop.md): live checkpoints, FIFO order info, held POP
//! requests, the queue locks that serialise pops of one queue, and the revive topic's
//! bookkeeping.
//!
//! * [`checkpoint`]: the live checkpoints and their ack bits.
//! * [`journal`]: the revive-topic records that make them survive a restart.
//! * [`replay`]: rebuilding the checkpoints from those records at start-up.
//! * [`order`]: FIFO pops (`ConsumerOrderInfoManager`).
//! * [`polling`]: POP long polling.
//!
//! The operations (pop, ack, change invisible time) are `crate::ops::pop`; the revive
//! service is `service::revive`.

pub(crate) mod checkpoint;
pub(crate) mod journal;
pub(crate) mod order;
pub(crate) mod polling;
pub(crate) mod replay;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use vostok_remoting::protocol::pop::revive_topic;
use vostok_remoting::support::sync::MutexExt;
use vostok_store::MessageStore;

use crate::config::BrokerConfig;
use checkpoint::CheckpointTable;
use order::OrderTable;
use polling::PopPolling;

pub(crate) struct PopState {
    /// `rmq_sys_REVIVE_LOG_<cluster>`.
    pub(crate) revive_topic: String,
    pub(crate) revive_queue_num: i32,
    /// `popCkMaxBufferSize`: live checkpoints beyond which pops are refused.
    pub(crate) max_checkpoints: usize,
    checkpoints: Mutex<CheckpointTable>,
    orders: Mutex<OrderTable>,
    pub(crate) polling: PopPolling,
    /// (topic, group, queue) being popped right now.
    busy: Mutex<HashSet<(String, String, i32)>>,
    revive_counter: AtomicU64,
    /// Per revive queue: records being written whose checkpoint is not in the table yet.
    pending: Vec<AtomicUsize>,
}

/// A pop's exclusive hold on one queue of one group; released on drop.
pub(crate) struct QueueGuard<'a> {
    state: &'a PopState,
    key: (String, String, i32),
}

impl Drop for QueueGuard<'_> {
    fn drop(&mut self) {
        self.state.busy.locked().remove(&self.key);
    }
}

/// A revive-queue record in flight; the watermark of its queue waits for it.
pub(crate) struct PendingWrite<'a> {
    counter: &'a AtomicUsize,
}

impl Drop for PendingWrite<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::SeqCst);
    }
}

impl PopState {
    pub(crate) fn new(config: &BrokerConfig) -> Self {
        let queues = config.pop.revive_queue_num.max(1);
        PopState {
            revive_topic: revive_topic(&config.broker_cluster_name),
            revive_queue_num: queues,
            max_checkpoints: config.pop.pop_ck_max_buffer_size.max(1),
            checkpoints: Mutex::new(CheckpointTable::default()),
            orders: Mutex::new(OrderTable::default()),
            polling: PopPolling::new(config.pop.pop_polling_size, config.pop.max_pop_polling_size),
            busy: Mutex::new(HashSet::new()),
            revive_counter: AtomicU64::new(0),
            pending: (0..queues).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    pub(crate) fn checkpoints(&self) -> MutexGuard<'_, CheckpointTable> {
        self.checkpoints.locked()
    }

    /// Popped and not yet acked messages of `group` on one queue.
    pub(crate) fn unacked_on(&self, topic: &str, group: &str, queue_id: i32) -> i64 {
        self.checkpoints().unacked_count(topic, group, queue_id)
    }

    pub(crate) fn orders(&self) -> MutexGuard<'_, OrderTable> {
        self.orders.locked()
    }

    /// Holds the queue for one pop, or `None` while another pop of it runs.
    pub(crate) fn try_lock_queue(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
    ) -> Option<QueueGuard<'_>> {
        let key = (topic.to_owned(), group.to_owned(), queue_id);
        // The table's lock is released before a guard exists: a guard dropped under it
        // would lock it again (and free the queue another pop holds).
        let free = self.busy.locked().insert(key.clone());
        free.then(|| QueueGuard { state: self, key })
    }

    /// The revive queue of the next checkpoint (round robin).
    pub(crate) fn next_revive_qid(&self) -> i32 {
        (self.revive_counter.fetch_add(1, Ordering::Relaxed) % self.revive_queue_num as u64) as i32
    }

    /// Announces a record about to be written to `revive_qid`; hold the guard until its
    /// checkpoint is in the table (or the write failed).
    pub(crate) fn begin_write(&self, revive_qid: i32) -> PendingWrite<'_> {
        let counter = &self.pending[revive_qid.clamp(0, self.revive_queue_num - 1) as usize];
        counter.fetch_add(1, Ordering::SeqCst);
        PendingWrite { counter }
    }

    /// How far revive queue `qid` may be skipped after a restart: its first record whose
    /// checkpoint is still live, else its end. `None` while a write to it is in flight.
    pub(crate) fn watermark(&self, store: &MessageStore, qid: i32) -> Option<i64> {
        // The end first: a record below it that is not in the table yet has its write
        // counted as pending.
        let end = store.max_offset_in_queue(&self.revive_topic, qid);
        if self.pending[qid as usize].load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(
            self.checkpoints()
                .first_live_record(qid)
                .map_or(end, |first| first.min(end)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_queue_is_refused_and_stays_held() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let state = PopState::new(&BrokerConfig::default());
            let first = state.try_lock_queue("T", "g", 0);
            assert!(first.is_some());
            assert!(
                state.try_lock_queue("T", "g", 0).is_none(),
                "held by the first"
            );
            assert!(
                state.try_lock_queue("T", "g", 0).is_none(),
                "a refusal does not free the first pop's hold"
            );
            assert!(state.try_lock_queue("T", "g", 1).is_some());
            drop(first);
            assert!(state.try_lock_queue("T", "g", 0).is_some());
            let _ = done.send(());
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("a second pop of a busy queue returns at once");
    }
}
