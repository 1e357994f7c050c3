//! What the producers were told and what the broker holds: every scenario ends by
//! comparing the acknowledged bodies with a full read of the topic.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use vostok_remoting::protocol::message::MessageExt;

/// What identifies a body: the text before its padding (`|`).
pub fn key(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.split('|').next().unwrap_or_default().to_owned()
}

/// Acknowledged bodies and the outcomes of the sends that were not.
#[derive(Default)]
pub struct Ledger {
    acked: Mutex<HashSet<String>>,
    failures: Mutex<BTreeMap<String, u64>>,
    attempts: AtomicU64,
}

impl Ledger {
    pub fn attempt(&self) {
        self.attempts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ack(&self, body: String) {
        self.acked.lock().expect("ledger lock").insert(body);
    }

    /// A send that did not end in SEND_OK, by outcome (a response code name, a status,
    /// an error kind).
    pub fn fail(&self, outcome: impl Into<String>) {
        *self
            .failures
            .lock()
            .expect("ledger lock")
            .entry(outcome.into())
            .or_default() += 1;
    }

    pub fn acked(&self) -> usize {
        self.acked.lock().expect("ledger lock").len()
    }

    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Relaxed)
    }

    pub fn failures(&self) -> BTreeMap<String, u64> {
        self.failures.lock().expect("ledger lock").clone()
    }

    pub fn is_acked(&self, body: &str) -> bool {
        self.acked.lock().expect("ledger lock").contains(body)
    }

    /// Compares the acknowledged bodies with what the broker stores.
    pub fn verify(&self, stored: &[MessageExt]) -> Verdict {
        let acked = self.acked.lock().expect("ledger lock");
        // body -> the commitlog offsets holding it
        let mut copies: HashMap<String, Vec<i64>> = HashMap::new();
        for m in stored {
            copies
                .entry(key(&m.body))
                .or_default()
                .push(m.commit_log_offset);
        }
        let mut verdict = Verdict {
            acked: acked.len(),
            stored: stored.len(),
            ..Default::default()
        };
        for body in acked.iter() {
            if !copies.contains_key(body) {
                verdict.lost += 1;
                if verdict.lost_examples.len() < 5 {
                    verdict.lost_examples.push(body.clone());
                }
            }
        }
        for (body, offsets) in &copies {
            let distinct: HashSet<i64> = offsets.iter().copied().collect();
            // A second record of a body is a client's retry after a lost answer; a second
            // queue entry for one record would be the broker's own duplicate.
            verdict.retry_duplicates += distinct.len() - 1;
            verdict.queue_duplicates += offsets.len() - distinct.len();
            if !acked.contains(body) {
                verdict.stored_unacked += 1;
            }
        }
        verdict
    }
}

#[derive(Debug, Default)]
pub struct Verdict {
    pub acked: usize,
    pub stored: usize,
    /// Acknowledged but not stored: must be 0.
    pub lost: usize,
    pub lost_examples: Vec<String>,
    /// Extra records of a body (a send retried after its answer was lost).
    pub retry_duplicates: usize,
    /// Extra queue entries pointing at one record: must be 0.
    pub queue_duplicates: usize,
    /// Stored, never acknowledged (the broker died before answering): allowed.
    pub stored_unacked: usize,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.lost == 0 && self.queue_duplicates == 0
    }

    pub fn describe(&self) -> String {
        format!(
            "acknowledged {}, stored {}, lost {}{}, duplicates {} (client retries) + {} (queue), stored but unacknowledged {}",
            self.acked,
            self.stored,
            self.lost,
            if self.lost_examples.is_empty() {
                String::new()
            } else {
                format!(" (e.g. {:?})", self.lost_examples)
            },
            self.retry_duplicates,
            self.queue_duplicates,
            self.stored_unacked
        )
    }
}
