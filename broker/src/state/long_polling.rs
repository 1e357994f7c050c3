//! Long polling (`PullRequestHoldService`): a pull that finds no new message waits here
//! until a message for its queue is dispatched or its suspend time runs out, then the
//! broker runs the pull again. Wake-ups come from the store's dispatcher through
//! [`LongPolling::notify`]; nothing polls on a timer.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use vostok_remoting::support::sync::MutexExt;

struct Held {
    id: u64,
    /// Wake when the queue's max offset passes this (the pull's offset).
    offset: i64,
    /// Tag codes the pull accepts; `None` accepts every message.
    tag_codes: Option<BTreeSet<i32>>,
    waker: oneshot::Sender<()>,
}

struct Registered<'a> {
    polling: &'a LongPolling,
    topic: &'a str,
    queue_id: i32,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.polling.forget(self.topic, self.queue_id, self.id);
    }
}

#[derive(Default)]
pub struct LongPolling {
    /// topic → queue id → held pulls.
    table: Mutex<HashMap<String, HashMap<i32, Vec<Held>>>>,
    next_id: AtomicU64,
    shut_down: AtomicBool,
}

impl LongPolling {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits until a message at or beyond `offset` arrives in the queue (matching
    /// `tag_codes`), `timeout` passes, or the broker shuts down. `max_offset` is read once
    /// after registering, so a message that arrived meanwhile is not missed.
    pub async fn hold(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        tag_codes: Option<BTreeSet<i32>>,
        timeout: Duration,
        max_offset: impl FnOnce() -> i64,
    ) {
        if self.shut_down.load(Ordering::Acquire) {
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut table = self.table.locked();
            table
                .entry(topic.to_owned())
                .or_default()
                .entry(queue_id)
                .or_default()
                .push(Held {
                    id,
                    offset,
                    tag_codes,
                    waker: tx,
                });
        }
        // Unregisters however the wait ends, dropped (the connection closed) included.
        let _registered = Registered {
            polling: self,
            topic,
            queue_id,
            id,
        };
        if max_offset() <= offset && !self.shut_down.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(timeout, rx).await;
        }
    }

    fn forget(&self, topic: &str, queue_id: i32, id: u64) {
        let mut table = self.table.locked();
        if let Some(queues) = table.get_mut(topic) {
            if let Some(held) = queues.get_mut(&queue_id) {
                held.retain(|h| h.id != id);
                if held.is_empty() {
                    queues.remove(&queue_id);
                }
            }
            if queues.is_empty() {
                table.remove(topic);
            }
        }
    }

    /// A message with `tags_code` was dispatched, making the queue's max offset
    /// `max_offset` (its queue offset + 1): wake the pulls it satisfies.
    pub fn notify(&self, topic: &str, queue_id: i32, max_offset: i64, tags_code: i64) {
        let mut table = self.table.locked();
        let Some(held) = table.get_mut(topic).and_then(|q| q.get_mut(&queue_id)) else {
            return;
        };
        let mut i = 0;
        while i < held.len() {
            let h = &held[i];
            let arrived = max_offset > h.offset;
            let matches = h
                .tag_codes
                .as_ref()
                .is_none_or(|codes| codes.contains(&(tags_code as i32)));
            if arrived && matches {
                let _ = held.swap_remove(i).waker.send(());
            } else {
                i += 1;
            }
        }
    }

    /// Releases every held pull (shutdown): they answer with what they have.
    pub fn wake_all(&self) {
        self.shut_down.store(true, Ordering::Release);
        let mut table = self.table.locked();
        for (_, queues) in table.drain() {
            for (_, held) in queues {
                for h in held {
                    let _ = h.waker.send(());
                }
            }
        }
    }

    /// Number of pulls waiting (for runtime info).
    pub fn held_count(&self) -> usize {
        self.table
            .locked()
            .values()
            .flat_map(|q| q.values())
            .map(Vec::len)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[tokio::test]
    async fn wakes_on_arrival_and_respects_tags() {
        let lp = Arc::new(LongPolling::new());
        let waiter = {
            let lp = lp.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                lp.hold(
                    "T",
                    0,
                    5,
                    Some(BTreeSet::from([7])),
                    Duration::from_secs(10),
                    || 5,
                )
                .await;
                start.elapsed()
            })
        };
        while lp.held_count() == 0 {
            tokio::task::yield_now().await;
        }
        lp.notify("T", 1, 6, 7); // other queue
        lp.notify("T", 0, 5, 7); // the message before the awaited offset
        lp.notify("T", 0, 6, 8); // tag does not match
        assert_eq!(lp.held_count(), 1);
        lp.notify("T", 0, 6, 7);
        let waited = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(waited < Duration::from_secs(5));
        assert_eq!(lp.held_count(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn does_not_wait_when_a_message_arrived_before_registration() {
        let lp = LongPolling::new();
        let start = tokio::time::Instant::now();
        lp.hold("T", 0, 5, None, Duration::from_secs(10), || 6)
            .await;
        // Paused time only moves when everything waits: a hold would have moved it.
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_dropped_wait_unregisters() {
        let lp = LongPolling::new();
        let wait = lp.hold("T", 0, 5, None, Duration::from_secs(10), || 5);
        let _ = tokio::time::timeout(Duration::from_millis(10), wait).await;
        assert_eq!(lp.held_count(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn times_out() {
        let lp = LongPolling::new();
        let start = tokio::time::Instant::now();
        lp.hold("T", 0, 5, None, Duration::from_secs(15), || 5)
            .await;
        assert_eq!(start.elapsed(), Duration::from_secs(15));
        assert_eq!(lp.held_count(), 0);
    }
}
