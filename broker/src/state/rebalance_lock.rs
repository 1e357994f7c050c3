//! Queue locks of orderly consumers (`RebalanceLockManager`, docs/commands.md#queue-locks):
//! a queue of a group belongs to one client id until the lock is released or 60 s pass
//! without renewal.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::support::sync::MutexExt;

/// `rocketmq.broker.rebalance.lockMaxLiveTime`.
pub const LOCK_MAX_LIVE_TIME: Duration = Duration::from_secs(60);

struct LockEntry {
    client_id: String,
    last_update: Instant,
}

impl LockEntry {
    fn expired(&self, now: Instant, ttl: Duration) -> bool {
        now.saturating_duration_since(self.last_update) > ttl
    }
}

pub struct RebalanceLockManager {
    ttl: Duration,
    table: Mutex<HashMap<String, HashMap<MessageQueue, LockEntry>>>,
}

impl Default for RebalanceLockManager {
    fn default() -> Self {
        Self::new(LOCK_MAX_LIVE_TIME)
    }
}

impl RebalanceLockManager {
    pub fn new(ttl: Duration) -> Self {
        RebalanceLockManager {
            ttl,
            table: Mutex::new(HashMap::new()),
        }
    }

    /// Locks (or renews) every queue that is free, expired or already held by
    /// `client_id`; returns the queues now held by it.
    pub fn try_lock_batch(
        &self,
        group: &str,
        mqs: &BTreeSet<MessageQueue>,
        client_id: &str,
        now: Instant,
    ) -> BTreeSet<MessageQueue> {
        let mut table = self.table.locked();
        let locks = table.entry(group.to_owned()).or_default();
        // Expired locks of queues not asked for go, so the table cannot grow without end.
        let ttl = self.ttl;
        locks.retain(|mq, e| !e.expired(now, ttl) || mqs.contains(mq));
        let mut locked = BTreeSet::new();
        for mq in mqs {
            match locks.get_mut(mq) {
                Some(entry) if entry.client_id == client_id || entry.expired(now, self.ttl) => {
                    if entry.client_id != client_id {
                        tracing::info!(group, %mq, old = %entry.client_id, new = client_id, "queue lock taken over after expiry");
                        entry.client_id = client_id.to_owned();
                    }
                    entry.last_update = now;
                    locked.insert(mq.clone());
                }
                Some(_) => {}
                None => {
                    locks.insert(
                        mq.clone(),
                        LockEntry {
                            client_id: client_id.to_owned(),
                            last_update: now,
                        },
                    );
                    locked.insert(mq.clone());
                }
            }
        }
        locked
    }

    /// Releases the queues `client_id` holds.
    pub fn unlock_batch(&self, group: &str, mqs: &BTreeSet<MessageQueue>, client_id: &str) {
        let mut table = self.table.locked();
        if let Some(locks) = table.get_mut(group) {
            for mq in mqs {
                if locks.get(mq).is_some_and(|e| e.client_id == client_id) {
                    locks.remove(mq);
                }
            }
            if locks.is_empty() {
                table.remove(group);
            }
        }
    }

    /// True while the group holds any unexpired lock (its retry messages go to the DLQ).
    pub fn group_holds_locks(&self, group: &str, now: Instant) -> bool {
        self.table
            .locked()
            .get(group)
            .is_some_and(|locks| locks.values().any(|e| !e.expired(now, self.ttl)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_are_exclusive_until_released_or_expired() {
        let m = RebalanceLockManager::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let mqs: BTreeSet<_> = (0..4).map(|q| MessageQueue::new("T", "b", q)).collect();
        assert_eq!(m.try_lock_batch("g", &mqs, "c1", t0).len(), 4);
        assert!(m.try_lock_batch("g", &mqs, "c2", t0).is_empty());
        assert_eq!(m.try_lock_batch("g", &mqs, "c1", t0).len(), 4, "renewal");
        assert_eq!(
            m.try_lock_batch("other", &mqs, "c2", t0).len(),
            4,
            "groups are independent"
        );

        let first: BTreeSet<_> = mqs.iter().take(1).cloned().collect();
        m.unlock_batch("g", &first, "c2"); // not the owner: no effect
        assert!(m.try_lock_batch("g", &first, "c2", t0).is_empty());
        m.unlock_batch("g", &first, "c1");
        assert_eq!(m.try_lock_batch("g", &first, "c2", t0).len(), 1);

        let later = t0 + Duration::from_secs(61);
        assert_eq!(
            m.try_lock_batch("g", &mqs, "c2", later).len(),
            4,
            "expired locks move"
        );
        assert!(m.group_holds_locks("g", later));
        assert!(!m.group_holds_locks("g", later + Duration::from_secs(61)));
    }
}
