//! Long polling for POP_MESSAGE and NOTIFICATION (`PopLongPollingService`,
//! docs/pop.md#long-polling): a request that finds nothing waits here, keyed by (topic,
//! group, queue id or -1 for every queue), until a message arrives in that queue, an
//! ack frees a FIFO queue, a revive puts a retry message, or its poll time ends.
//!
//! Bounded like RocketMQ: more than `popPollingSize` requests held for one key, or
//! `maxPopPollingSize` in all, and the next one answers POLLING_FULL at once. An
//! arrival wakes one held request per key, as RocketMQ does.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use vostok_remoting::support::sync::MutexExt;

/// The request could not be held: too many are waiting.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PollingFull;

struct Held {
    id: u64,
    waker: oneshot::Sender<()>,
}

#[derive(Default)]
struct Table {
    /// topic → (group, queue id) → held requests, oldest first.
    topics: HashMap<String, HashMap<(String, i32), VecDeque<Held>>>,
    total: usize,
}

pub(crate) struct PopPolling {
    table: Mutex<Table>,
    per_key_max: usize,
    total_max: usize,
    next_id: AtomicU64,
    shut_down: AtomicBool,
}

struct Registered<'a> {
    polling: &'a PopPolling,
    topic: &'a str,
    key: (String, i32),
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut t = self.polling.table.locked();
        let Some(keys) = t.topics.get_mut(self.topic) else {
            return;
        };
        let mut removed = false;
        if let Some(held) = keys.get_mut(&self.key) {
            let before = held.len();
            held.retain(|h| h.id != self.id);
            removed = held.len() < before;
            if held.is_empty() {
                keys.remove(&self.key);
            }
        }
        if keys.is_empty() {
            t.topics.remove(self.topic);
        }
        if removed {
            t.total -= 1;
        }
    }
}

impl PopPolling {
    pub(crate) fn new(per_key_max: usize, total_max: usize) -> Self {
        PopPolling {
            table: Mutex::new(Table::default()),
            per_key_max,
            total_max,
            next_id: AtomicU64::new(0),
            shut_down: AtomicBool::new(false),
        }
    }

    /// Waits until woken, `timeout` passes or the broker shuts down. `recheck` runs once
    /// after registering: true (something arrived meanwhile) returns at once.
    pub(crate) async fn hold(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        timeout: Duration,
        recheck: impl FnOnce() -> bool,
    ) -> Result<(), PollingFull> {
        if self.shut_down.load(Ordering::Acquire) {
            return Ok(());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let key = (group.to_owned(), queue_id.max(-1));
        {
            let mut t = self.table.locked();
            if t.total >= self.total_max {
                return Err(PollingFull);
            }
            let held = t
                .topics
                .entry(topic.to_owned())
                .or_default()
                .entry(key.clone())
                .or_default();
            if held.len() >= self.per_key_max {
                return Err(PollingFull);
            }
            held.push_back(Held { id, waker: tx });
            t.total += 1;
        }
        let _registered = Registered {
            polling: self,
            topic,
            key,
            id,
        };
        if !recheck() && !self.shut_down.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(timeout, rx).await;
        }
        Ok(())
    }

    /// A message arrived in `topic`'s queue `queue_id`: wake one request per group held
    /// on that queue and one per group held on every queue.
    pub(crate) fn notify(&self, topic: &str, queue_id: i32) {
        let mut t = self.table.locked();
        let Some(keys) = t.topics.get_mut(topic) else {
            return;
        };
        let mut woken = 0;
        for ((_, q), held) in keys.iter_mut() {
            if *q == queue_id || *q < 0 {
                woken += wake_one(held);
            }
        }
        t.total -= woken;
    }

    /// Wakes one request of `group` per key on `topic` (a revive put a retry message, or
    /// an ack unblocked a FIFO queue).
    pub(crate) fn notify_group(&self, topic: &str, group: &str) {
        let mut t = self.table.locked();
        let Some(keys) = t.topics.get_mut(topic) else {
            return;
        };
        let mut woken = 0;
        for ((g, _), held) in keys.iter_mut() {
            if g == group {
                woken += wake_one(held);
            }
        }
        t.total -= woken;
    }

    /// Requests held for one key (POLLING_INFO).
    pub(crate) fn count(&self, topic: &str, group: &str, queue_id: i32) -> usize {
        self.table
            .locked()
            .topics
            .get(topic)
            .and_then(|k| k.get(&(group.to_owned(), queue_id.max(-1))))
            .map_or(0, VecDeque::len)
    }

    #[cfg(test)]
    pub(crate) fn total(&self) -> usize {
        self.table.locked().total
    }

    /// Shutdown: every held request answers with what it has.
    pub(crate) fn wake_all(&self) {
        self.shut_down.store(true, Ordering::Release);
        let mut t = self.table.locked();
        for (_, keys) in t.topics.drain() {
            for (_, held) in keys {
                for h in held {
                    let _ = h.waker.send(());
                }
            }
        }
        t.total = 0;
    }
}

/// Wakes the oldest request still waiting; returns how many entries left the queue.
fn wake_one(held: &mut VecDeque<Held>) -> usize {
    let mut removed = 0;
    while let Some(h) = held.pop_front() {
        removed += 1;
        if h.waker.send(()).is_ok() {
            break;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    async fn until(p: &PopPolling, n: usize) {
        while p.total() != n {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn an_arrival_wakes_one_request_per_key() {
        let p = Arc::new(PopPolling::new(8, 100));
        let mut waiters = Vec::new();
        for q in [0, 0, -1] {
            let p = p.clone();
            waiters.push(tokio::spawn(async move {
                p.hold("T", "g", q, Duration::from_secs(30), || false).await
            }));
        }
        until(&p, 3).await;
        assert_eq!(p.count("T", "g", 0), 2);
        p.notify("T", 1); // wakes the every-queue request only
        until(&p, 2).await;
        p.notify("T", 0);
        until(&p, 1).await;
        p.notify_group("T", "g");
        for w in waiters {
            assert_eq!(w.await.unwrap(), Ok(()));
        }
        assert_eq!(p.total(), 0);
    }

    #[tokio::test]
    async fn full_per_key_and_in_total() {
        let p = Arc::new(PopPolling::new(1, 2));
        let a = {
            let p = p.clone();
            tokio::spawn(
                async move { p.hold("T", "g", 0, Duration::from_secs(30), || false).await },
            )
        };
        until(&p, 1).await;
        let full = p.hold("T", "g", 0, Duration::from_secs(30), || false).await;
        assert_eq!(full, Err(PollingFull));
        let b = {
            let p = p.clone();
            tokio::spawn(
                async move { p.hold("T", "g", 1, Duration::from_secs(30), || false).await },
            )
        };
        until(&p, 2).await;
        let full = p.hold("U", "h", 0, Duration::from_secs(30), || false).await;
        assert_eq!(full, Err(PollingFull), "total bound");
        p.wake_all();
        assert!(a.await.unwrap().is_ok() && b.await.unwrap().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn times_out_and_rechecks() {
        let p = PopPolling::new(8, 8);
        let start = tokio::time::Instant::now();
        p.hold("T", "g", 0, Duration::from_secs(5), || false)
            .await
            .unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        p.hold("T", "g", 0, Duration::from_secs(5), || true)
            .await
            .unwrap();
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(5),
            "recheck found a message"
        );
        assert_eq!(p.total(), 0);
    }
}
