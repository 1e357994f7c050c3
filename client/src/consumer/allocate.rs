//! Queue allocation strategies (Java `AllocateMessageQueueStrategy`): which of a
//! topic's queues a member of a consumer group consumes. Every member computes the
//! same answer from the same sorted inputs, so no coordination is needed.

use std::collections::BTreeMap;

use vostok_remoting::protocol::body::MessageQueue;

pub trait AllocateStrategy: Send + Sync {
    fn name(&self) -> &str;
    /// `mq_all` and `cid_all` are sorted; returns this client's share.
    fn allocate(
        &self,
        current_cid: &str,
        mq_all: &[MessageQueue],
        cid_all: &[String],
    ) -> Vec<MessageQueue>;
}

/// Contiguous blocks, the first `n % c` clients taking one more (the default).
/// 8 queues, 3 clients: q0–q2, q3–q5, q6–q7.
pub struct AllocateMessageQueueAveragely;

impl AllocateStrategy for AllocateMessageQueueAveragely {
    fn name(&self) -> &str {
        "AVG"
    }

    fn allocate(
        &self,
        current_cid: &str,
        mq_all: &[MessageQueue],
        cid_all: &[String],
    ) -> Vec<MessageQueue> {
        let Some(index) = cid_all.iter().position(|c| c == current_cid) else {
            return Vec::new();
        };
        let (n, c) = (mq_all.len(), cid_all.len());
        let modulo = n % c;
        let avg = if n <= c {
            1
        } else if modulo > 0 && index < modulo {
            n / c + 1
        } else {
            n / c
        };
        let start = if modulo > 0 && index < modulo {
            index * avg
        } else {
            index * avg + modulo
        };
        let range = avg.min(n.saturating_sub(start));
        mq_all.iter().skip(start).take(range).cloned().collect()
    }
}

/// Round robin: queue `i` goes to client `i % c`.
pub struct AllocateMessageQueueAveragelyByCircle;

impl AllocateStrategy for AllocateMessageQueueAveragelyByCircle {
    fn name(&self) -> &str {
        "AVG_BY_CIRCLE"
    }

    fn allocate(
        &self,
        current_cid: &str,
        mq_all: &[MessageQueue],
        cid_all: &[String],
    ) -> Vec<MessageQueue> {
        let Some(index) = cid_all.iter().position(|c| c == current_cid) else {
            return Vec::new();
        };
        mq_all
            .iter()
            .enumerate()
            .filter(|(i, _)| i % cid_all.len() == index)
            .map(|(_, q)| q.clone())
            .collect()
    }
}

/// Consistent hashing with virtual nodes: a member joining or leaving moves only the
/// queues near it on the ring. Hashes with CRC-32 (Java uses MD5), so all members of a
/// group using this strategy must be Vostok clients.
pub struct AllocateMessageQueueConsistentHash {
    pub virtual_nodes: usize,
}

impl Default for AllocateMessageQueueConsistentHash {
    fn default() -> Self {
        AllocateMessageQueueConsistentHash { virtual_nodes: 10 }
    }
}

impl AllocateStrategy for AllocateMessageQueueConsistentHash {
    fn name(&self) -> &str {
        "CONSISTENT_HASH"
    }

    fn allocate(
        &self,
        current_cid: &str,
        mq_all: &[MessageQueue],
        cid_all: &[String],
    ) -> Vec<MessageQueue> {
        if !cid_all.iter().any(|c| c == current_cid) {
            return Vec::new();
        }
        let mut ring: BTreeMap<u32, &str> = BTreeMap::new();
        for cid in cid_all {
            for v in 0..self.virtual_nodes.max(1) {
                ring.insert(crc32fast::hash(format!("{cid}-{v}").as_bytes()), cid);
            }
        }
        mq_all
            .iter()
            .filter(|mq| {
                let key = crc32fast::hash(
                    format!("{}-{}-{}", mq.topic, mq.broker_name, mq.queue_id).as_bytes(),
                );
                let owner = ring
                    .range(key..)
                    .next()
                    .or_else(|| ring.iter().next())
                    .map(|(_, c)| *c);
                owner == Some(current_cid)
            })
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(n: i32) -> Vec<MessageQueue> {
        (0..n).map(|i| MessageQueue::new("T", "b", i)).collect()
    }

    fn cids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    fn ids(v: Vec<MessageQueue>) -> Vec<i32> {
        v.into_iter().map(|q| q.queue_id).collect()
    }

    #[test]
    fn averagely_matches_the_documented_example() {
        let (mqs, c) = (queues(8), cids(3));
        let s = AllocateMessageQueueAveragely;
        assert_eq!(ids(s.allocate("c0", &mqs, &c)), [0, 1, 2]);
        assert_eq!(ids(s.allocate("c1", &mqs, &c)), [3, 4, 5]);
        assert_eq!(ids(s.allocate("c2", &mqs, &c)), [6, 7]);
        assert!(s.allocate("stranger", &mqs, &c).is_empty());
        // More clients than queues: the extra ones get nothing.
        let many = cids(10);
        assert_eq!(ids(s.allocate("c7", &mqs, &many)), [7]);
        assert!(s.allocate("c8", &mqs, &many).is_empty());
    }

    #[test]
    fn by_circle_and_consistent_hash_cover_every_queue_once() {
        let mqs = queues(16);
        let c = cids(3);
        let circle = AllocateMessageQueueAveragelyByCircle;
        assert_eq!(ids(circle.allocate("c1", &mqs, &c)), [1, 4, 7, 10, 13]);
        for s in [
            &circle as &dyn AllocateStrategy,
            &AllocateMessageQueueConsistentHash::default(),
            &AllocateMessageQueueAveragely,
        ] {
            let mut all: Vec<i32> = c
                .iter()
                .flat_map(|id| ids(s.allocate(id, &mqs, &c)))
                .collect();
            all.sort();
            assert_eq!(all, (0..16).collect::<Vec<_>>(), "{}", s.name());
        }
        // Consistent hash: a fourth member only takes queues, nobody else's move.
        let h = AllocateMessageQueueConsistentHash::default();
        let c4 = cids(4);
        for id in &c {
            let after = h.allocate(id, &mqs, &c4);
            let before = h.allocate(id, &mqs, &c);
            assert!(after.iter().all(|q| before.contains(q)));
        }
    }
}
