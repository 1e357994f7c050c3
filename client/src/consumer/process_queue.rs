//! The messages of one assigned queue between pull and consumption (Java
//! `ProcessQueue`): a tree by queue offset, counters for flow control, and the flags
//! rebalancing and orderly consumption need.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::Notify;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;

#[derive(Default)]
struct Inner {
    msgs: BTreeMap<i64, MessageExt>,
    /// Orderly: messages taken for the listener and not yet committed.
    consuming: BTreeMap<i64, MessageExt>,
    /// Concurrent: when each message's listener call began (consume timeout).
    started: BTreeMap<i64, Instant>,
    queue_offset_max: i64,
    /// Orderly: a consume loop is running for this queue.
    dispatching: bool,
}

#[derive(Default)]
pub(crate) struct ProcessQueue {
    inner: Mutex<Inner>,
    count: AtomicUsize,
    size: AtomicU64,
    dropped: AtomicBool,
    locked: AtomicBool,
    pub last_lock_ms: AtomicI64,
    pub last_pull_ms: AtomicI64,
    pub last_consume_ms: AtomicI64,
    /// Listener calls running on this queue, and a wake-up when one ends.
    in_flight: AtomicUsize,
    idle: Notify,
    /// Orderly: one listener call at a time per queue.
    pub consume_lock: tokio::sync::Mutex<()>,
}

/// A lock older than this is not trusted by the consumer (the broker keeps it 60 s).
pub(crate) const LOCK_MAX_LIVE_MS: i64 = 30_000;

impl ProcessQueue {
    pub fn new() -> Self {
        let pq = ProcessQueue::default();
        pq.last_pull_ms.store(now_millis(), Ordering::Relaxed);
        pq
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.locked()
    }

    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub fn set_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
        self.idle.notify_waiters();
    }

    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Acquire)
    }

    pub fn set_locked(&self, locked: bool) {
        self.locked.store(locked, Ordering::Release);
        if locked {
            self.last_lock_ms.store(now_millis(), Ordering::Relaxed);
        }
    }

    pub fn is_lock_expired(&self) -> bool {
        now_millis() - self.last_lock_ms.load(Ordering::Relaxed) > LOCK_MAX_LIVE_MS
    }

    pub fn msg_count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    pub fn msg_size(&self) -> u64 {
        self.size.load(Ordering::Relaxed)
    }

    /// Adds pulled messages; for orderly consumers, true when a consume loop must start.
    pub fn put(&self, msgs: &[MessageExt]) -> bool {
        let mut inner = self.lock();
        let mut added = 0;
        let mut bytes = 0;
        for m in msgs {
            if inner.msgs.insert(m.queue_offset, m.clone()).is_none() {
                added += 1;
                bytes += m.body.len() as u64;
            }
            inner.queue_offset_max = inner.queue_offset_max.max(m.queue_offset);
        }
        self.count.fetch_add(added, Ordering::Relaxed);
        self.size.fetch_add(bytes, Ordering::Relaxed);
        if !inner.msgs.is_empty() && !inner.dispatching {
            inner.dispatching = true;
            true
        } else {
            false
        }
    }

    /// Records that the pull went through `offset`: when every cached message is
    /// consumed, [`Self::remove`] answers `offset + 1` even if the last messages were
    /// filtered out on the client and never cached.
    pub fn pulled_through(&self, offset: i64) {
        let mut inner = self.lock();
        inner.queue_offset_max = inner.queue_offset_max.max(offset);
    }

    /// Offset span of the cached messages (concurrent flow control).
    pub fn max_span(&self) -> i64 {
        let inner = self.lock();
        match (inner.msgs.keys().next(), inner.msgs.keys().next_back()) {
            (Some(first), Some(last)) => last - first,
            _ => 0,
        }
    }

    /// Removes consumed messages; returns the offset to commit (the smallest offset
    /// still cached, else one past the largest seen), or `None` if nothing was cached.
    pub fn remove(&self, offsets: impl IntoIterator<Item = i64>) -> Option<i64> {
        let mut inner = self.lock();
        if inner.msgs.is_empty() {
            return None;
        }
        let mut removed = 0;
        let mut bytes = 0;
        for o in offsets {
            inner.started.remove(&o);
            if let Some(m) = inner.msgs.remove(&o) {
                removed += 1;
                bytes += m.body.len() as u64;
            }
        }
        self.count.fetch_sub(removed, Ordering::Relaxed);
        self.size.fetch_sub(bytes, Ordering::Relaxed);
        self.last_consume_ms.store(now_millis(), Ordering::Relaxed);
        Some(match inner.msgs.keys().next() {
            Some(first) => *first,
            None => inner.queue_offset_max + 1,
        })
    }

    pub fn mark_started(&self, offsets: impl IntoIterator<Item = i64>) {
        let now = Instant::now();
        let mut inner = self.lock();
        for o in offsets {
            inner.started.insert(o, now);
        }
    }

    /// Messages whose listener call began more than `timeout` ago (at most 16).
    pub fn expired(&self, timeout: std::time::Duration) -> Vec<MessageExt> {
        let inner = self.lock();
        inner
            .started
            .iter()
            .filter(|(_, t)| t.elapsed() > timeout)
            .filter_map(|(o, _)| inner.msgs.get(o).cloned())
            .take(16)
            .collect()
    }

    // ---- orderly ----

    /// Takes up to `n` messages in offset order; when none are left, ends the
    /// dispatching (atomically with [`Self::put`]'s check) and returns an empty list.
    pub fn take(&self, n: usize) -> Vec<MessageExt> {
        let mut inner = self.lock();
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some((o, m)) = inner.msgs.pop_first() else {
                break;
            };
            inner.consuming.insert(o, m.clone());
            out.push(m);
        }
        if out.is_empty() {
            inner.dispatching = false;
        }
        out
    }

    /// Ends a consume loop early (dropped queue).
    pub fn stop_dispatching(&self) {
        self.lock().dispatching = false;
    }

    /// Commits the taken messages; returns the next offset to consume.
    pub fn commit(&self) -> Option<i64> {
        let mut inner = self.lock();
        let last = inner.consuming.keys().next_back().copied();
        let consumed = std::mem::take(&mut inner.consuming);
        let bytes: u64 = consumed.values().map(|m| m.body.len() as u64).sum();
        self.count.fetch_sub(consumed.len(), Ordering::Relaxed);
        self.size.fetch_sub(bytes, Ordering::Relaxed);
        self.last_consume_ms.store(now_millis(), Ordering::Relaxed);
        last.map(|o| o + 1)
    }

    /// Puts taken messages back to be consumed again (suspend), with updated copies.
    pub fn make_again(&self, msgs: &[MessageExt]) {
        let mut inner = self.lock();
        for m in msgs {
            inner.consuming.remove(&m.queue_offset);
            inner.msgs.insert(m.queue_offset, m.clone());
        }
    }

    // ---- in-flight tracking for clean hand-over ----

    pub fn begin_consume(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
    }

    pub fn end_consume(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.idle.notify_waiters();
        }
    }

    /// Waits until no listener call runs on this queue, at most `timeout`.
    pub async fn wait_idle(&self, timeout: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight.load(Ordering::Acquire) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }

    /// Min/max cached offsets for running info.
    pub fn cached_range(&self) -> (i64, i64) {
        let inner = self.lock();
        (
            inner.msgs.keys().next().copied().unwrap_or(0),
            inner.msgs.keys().next_back().copied().unwrap_or(0),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn msg(offset: i64) -> MessageExt {
        MessageExt {
            queue_offset: offset,
            born_host: "127.0.0.1:1".parse().unwrap(),
            ..MessageExt::new(
                "T",
                0,
                Bytes::from_static(b"abc"),
                Default::default(),
                "127.0.0.1:2".parse().unwrap(),
            )
        }
    }

    #[test]
    fn commit_offset_is_the_smallest_still_cached() {
        let pq = ProcessQueue::new();
        assert!(pq.put(&[msg(10), msg(11), msg(12)]));
        assert_eq!(pq.msg_count(), 3);
        assert_eq!(pq.msg_size(), 9);
        assert_eq!(pq.max_span(), 2);
        assert_eq!(pq.remove([11]), Some(10), "10 is still being consumed");
        assert_eq!(pq.remove([10]), Some(12));
        assert_eq!(pq.remove([12]), Some(13));
        assert_eq!(pq.remove([12]), None);
        assert_eq!(pq.msg_count(), 0);
        // 13 and 14 were filtered out on the client behind 15.
        pq.put(&[msg(15)]);
        pq.pulled_through(17);
        assert_eq!(pq.remove([15]), Some(18));
    }

    #[test]
    fn orderly_take_commit_and_again() {
        let pq = ProcessQueue::new();
        assert!(pq.put(&[msg(0), msg(1), msg(2)]));
        assert!(!pq.put(&[msg(3)]), "a loop is already dispatching");
        let first = pq.take(2);
        assert_eq!(
            first.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
            [0, 1]
        );
        pq.make_again(&first);
        let again = pq.take(1);
        assert_eq!(again[0].queue_offset, 0);
        assert_eq!(pq.commit(), Some(1));
        assert_eq!(pq.take(10).len(), 3);
        assert_eq!(pq.commit(), Some(4));
        assert!(pq.take(1).is_empty());
        assert!(
            pq.put(&[msg(4)]),
            "dispatching ended when the queue ran dry"
        );
    }
}
