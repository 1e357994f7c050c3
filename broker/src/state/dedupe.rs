//! The duplication window (docs/semantics.md#duplication-window): each message's client
//! unique id (`UNIQ_KEY`) per topic, remembered for `duplicationWindowSeconds` (or the
//! topic's `duplication.window.seconds` attribute) with where the message was stored,
//! so that a producer's retry of a send whose answer was lost gets the original
//! answer instead of storing the message twice.
//!
//! Claim, then put: [`DedupeWindow::claim`] answers duplicates and marks the other keys
//! in flight; a second request for a key in flight waits for the first one's outcome,
//! so two concurrent retries never both store. A claim records what was stored
//! ([`Claim::stored`]) or, dropped without storing, releases its keys for the next
//! attempt. Claims of a batch are all-or-nothing, so batches overlapping in opposite
//! orders cannot deadlock.
//!
//! The entries live in an arena in arrival order with a table of their positions
//! (`arena`), cheap to touch on the send path.
//!
//! Bounded: at most `duplicationWindowMaxEntries` entries, the oldest evicted first
//! (counted, and logged, when still inside their window). Each entry costs
//! [`ENTRY_BYTES`] bytes plus the table's slack, and the key's own text when it is not
//! a 32-digit hex id. Rebuilt at start from the commitlog tail ([`rebuild`]).

mod arena;
pub(crate) mod rebuild;

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tracing::warn;
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;

pub use arena::ENTRY_BYTES;
use arena::{Inner, Key, UniqKey};

/// Where the first copy of a message was stored: what its send answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Original {
    pub queue_id: i32,
    pub queue_offset: i64,
    pub commit_offset: i64,
}

/// Counters for GET_BROKER_RUNTIME_INFO.
#[derive(Debug, Default)]
pub(crate) struct DedupeStats {
    /// Sends answered from the window instead of being stored again.
    pub duplicates: AtomicU64,
    /// Entries evicted for room while still inside their window.
    pub evicted_early: AtomicU64,
}

pub(crate) struct DedupeWindow {
    inner: Mutex<Inner>,
    max_entries: usize,
    pub stats: DedupeStats,
}

impl DedupeWindow {
    pub fn new(max_entries: usize) -> Self {
        DedupeWindow {
            inner: Mutex::default(),
            max_entries: max_entries.clamp(1, u32::MAX as usize / 2),
            stats: DedupeStats::default(),
        }
    }

    /// Entries held now (those in flight included).
    pub fn len(&self) -> usize {
        self.inner.locked().table.len()
    }

    /// Looks `uniq_keys` (the messages of one request, in order) up in `topic`'s window
    /// and claims those not stored yet, waiting while another request stores any of
    /// them.
    pub async fn claim(&self, topic: &str, uniq_keys: &[&str], window: Duration) -> Claim<'_> {
        let ttl_ms = window.as_millis().min(i64::MAX as u128) as i64;
        loop {
            let mut rx = {
                let mut inner = self.inner.locked();
                inner.reserve(self.max_entries);
                let topic = inner.topic_id(topic);
                if let [only] = uniq_keys {
                    // A plain send: one lookup, nothing allocated.
                    let key = Key {
                        topic,
                        uniq: UniqKey::new(only),
                    };
                    let hash = inner.hasher.hash_one(&key);
                    let found = inner.find(&key, hash);
                    if !found.is_some_and(|p| inner.slot(p).in_flight()) {
                        let now = now_millis();
                        let m = Self::hold(&mut inner, key, hash, found, now);
                        return self.made(Messages::One(m), ttl_ms, now);
                    }
                    inner.waiters.entry(key)
                } else {
                    let keys: Vec<(Key, u64)> = uniq_keys
                        .iter()
                        .map(|k| {
                            let key = Key {
                                topic,
                                uniq: UniqKey::new(k),
                            };
                            let hash = inner.hasher.hash_one(&key);
                            (key, hash)
                        })
                        .collect();
                    // All or nothing: a request waits before it holds any key. Found in
                    // flight after this check, a key is this request's own earlier message.
                    let busy = keys.iter().find(|(k, h)| {
                        inner.find(k, *h).is_some_and(|p| inner.slot(p).in_flight())
                    });
                    match busy {
                        Some((key, _)) => inner.waiters.entry(key.clone()),
                        None => {
                            let now = now_millis();
                            let messages = keys
                                .into_iter()
                                .map(|(key, hash)| {
                                    let found = inner.find(&key, hash);
                                    Self::hold(&mut inner, key, hash, found, now)
                                })
                                .collect();
                            return self.made(Messages::Many(messages), ttl_ms, now);
                        }
                    }
                }
                .or_insert_with(|| watch::channel(()).0)
                .subscribe()
            };
            // Resolves with an error once the other request releases the key.
            let _ = rx.changed().await;
        }
    }

    fn made(&self, messages: Messages, ttl_ms: i64, now: i64) -> Claim<'_> {
        let duplicates = messages
            .as_slice()
            .iter()
            .filter(|m| m.original.is_some())
            .count();
        if duplicates > 0 {
            self.stats
                .duplicates
                .fetch_add(duplicates as u64, Ordering::Relaxed);
        }
        Claim {
            window: self,
            messages,
            ttl_ms,
            now,
        }
    }

    /// One message's claim (`found`: its key's live slot): its original, or a slot in
    /// flight to store into.
    fn hold(inner: &mut Inner, key: Key, hash: u64, found: Option<u32>, now: i64) -> Claimed {
        let (original, pos, held) = match found.map(|p| (p, inner.slot(p))) {
            Some((p, s)) if s.in_flight() => (None, p, false),
            Some((_, s)) if s.answers_at(now) => (Some(s.original()), 0, false),
            // Absent, or stored too long ago: stored again.
            _ => (None, inner.push(key, hash, found), true),
        };
        Claimed {
            original,
            pos,
            held,
        }
    }

    /// Adds entries rebuilt from the commitlog, oldest first; a key already present
    /// keeps its first copy.
    pub fn restore(&self, topic: &str, uniq_key: &str, original: Original, expire_at: i64) {
        let mut inner = self.inner.locked();
        inner.reserve(self.max_entries);
        let key = Key {
            topic: inner.topic_id(topic),
            uniq: UniqKey::new(uniq_key),
        };
        let hash = inner.hasher.hash_one(&key);
        if inner.find(&key, hash).is_some() {
            return;
        }
        let pos = inner.push(key, hash, None);
        inner.slot_mut(pos).set(original, expire_at);
        self.trim(&mut inner, now_millis());
    }

    /// Drops dead and expired slots from the front and, past the ceiling, the oldest
    /// stored ones; stops at a slot in flight.
    fn trim(&self, inner: &mut Inner, now: i64) {
        let mut evicted = 0u64;
        while let Some(front) = inner.arena.front() {
            if !front.dead() {
                if front.in_flight() {
                    break;
                }
                if front.answers_at(now) {
                    let full = inner.table.len() > self.max_entries
                        || inner.arena.len() > self.max_entries;
                    if !full {
                        break;
                    }
                    evicted += 1;
                }
                let head = inner.head;
                inner.remove(head);
            }
            inner.pop_front();
        }
        if evicted > 0 {
            let total = self
                .stats
                .evicted_early
                .fetch_add(evicted, Ordering::Relaxed)
                + evicted;
            if now - inner.last_eviction_warning >= 10_000 {
                inner.last_eviction_warning = now;
                warn!(
                    max_entries = self.max_entries,
                    evicted_total = total,
                    "duplication window full: entries evicted before their window ended \
                     (raise duplicationWindowMaxEntries or shorten the window)"
                );
            }
        }
    }
}

/// One message of a claim.
struct Claimed {
    original: Option<Original>,
    /// Arena position of the slot this message stores into (no original).
    pos: u32,
    /// This claim holds the slot in flight.
    held: bool,
}

/// A claim's messages: one (a plain send, without allocating) or many (a batch).
enum Messages {
    One(Claimed),
    Many(Vec<Claimed>),
}

impl Messages {
    fn as_slice(&self) -> &[Claimed] {
        match self {
            Messages::One(m) => std::slice::from_ref(m),
            Messages::Many(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Claimed] {
        match self {
            Messages::One(m) => std::slice::from_mut(m),
            Messages::Many(v) => v,
        }
    }
}

/// The window's answer for one request: which messages are duplicates, and a hold on
/// the others until they are stored or the claim is dropped.
pub(crate) struct Claim<'a> {
    window: &'a DedupeWindow,
    messages: Messages,
    ttl_ms: i64,
    /// When the claim was made: the window of what it stores starts here (a put
    /// takes microseconds to milliseconds; one clock read a send is saved).
    now: i64,
}

impl Claim<'_> {
    /// Per message, in request order: the original of a duplicate, `None` for a
    /// message this request stores.
    pub fn originals(&self) -> Vec<Option<Original>> {
        self.messages
            .as_slice()
            .iter()
            .map(|m| m.original)
            .collect()
    }

    /// True when every message of the request was stored before.
    pub fn all_duplicates(&self) -> bool {
        self.messages
            .as_slice()
            .iter()
            .all(|m| m.original.is_some())
    }

    /// Records where the new messages (those with no original, in request order) were
    /// stored, then releases the claim.
    pub fn stored(mut self, placed: impl IntoIterator<Item = Original>) {
        let window = self.window;
        let mut inner = window.inner.locked();
        let now = self.now;
        let expire_at = now.saturating_add(self.ttl_ms);
        let mut placed = placed.into_iter();
        for m in self
            .messages
            .as_slice()
            .iter()
            .filter(|m| m.original.is_none())
        {
            let Some(at) = placed.next() else { break };
            inner.slot_mut(m.pos).set(at, expire_at);
        }
        for m in self.messages.as_mut_slice().iter_mut().filter(|m| m.held) {
            m.held = false;
            // A message not placed (a short put result) gives its slot up.
            if inner.slot(m.pos).in_flight() {
                inner.remove(m.pos);
            }
            inner.wake(m.pos);
        }
        window.trim(&mut inner, now);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.messages.as_slice().iter().any(|m| m.held) {
            return;
        }
        let mut inner = self.window.inner.locked();
        for m in self.messages.as_mut_slice().iter_mut().filter(|m| m.held) {
            m.held = false;
            inner.remove(m.pos);
            inner.wake(m.pos);
        }
    }
}

/// The topic attribute that sets a topic's window, in seconds (0 turns it off).
pub const WINDOW_ATTRIBUTE: &str = "duplication.window.seconds";

/// A topic's window: its [`WINDOW_ATTRIBUTE`], else the broker's default.
pub(crate) fn window_for(default: Duration, topic: &TopicConfig) -> Duration {
    topic
        .attributes
        .get(WINDOW_ATTRIBUTE)
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(default)
}

/// Topics a window applies to: not retry or dead-letter topics, where clients resend
/// a message with its unique id on purpose, nor the broker's own topics.
pub(crate) fn applies_to(topic_name: &str) -> bool {
    !topic::is_retry_topic(topic_name)
        && !topic::is_dlq_topic(topic_name)
        && !topic::is_not_allowed_send_topic(topic_name)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;

    const KEY: &str = "7F0000010001000000000000000000AB";
    const MINUTE: Duration = Duration::from_secs(60);

    fn at(offset: i64) -> Original {
        Original {
            queue_id: 1,
            queue_offset: offset,
            commit_offset: offset * 100,
        }
    }

    #[tokio::test]
    async fn a_stored_key_is_answered_with_its_original() {
        let w = DedupeWindow::new(100);
        let claim = w.claim("T", &[KEY], MINUTE).await;
        assert_eq!(claim.originals(), [None]);
        claim.stored([at(7)]);
        let again = w.claim("T", &[KEY], MINUTE).await;
        assert_eq!(again.originals(), [Some(at(7))]);
        assert!(again.all_duplicates());
        drop(again);
        // Per topic, and the text of other ids is kept as is.
        assert_eq!(w.claim("U", &[KEY], MINUTE).await.originals(), [None]);
        let lower = KEY.to_ascii_lowercase();
        assert_eq!(w.claim("T", &[&lower], MINUTE).await.originals(), [None]);
        assert_eq!(w.stats.duplicates.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_second_claim_waits_for_the_first_outcome() {
        let w = Arc::new(DedupeWindow::new(100));
        let first = w.claim("T", &["a", "b"], MINUTE).await;
        let w2 = w.clone();
        let second = tokio::spawn(async move {
            let claim = w2.claim("T", &["b"], MINUTE).await;
            claim.originals()
        });
        tokio::task::yield_now().await;
        assert!(!second.is_finished());
        first.stored([at(1), at(2)]);
        assert_eq!(second.await.unwrap(), [Some(at(2))]);
        // A claim dropped without storing lets the next one store.
        let failed = w.claim("T", &["c"], MINUTE).await;
        let w3 = w.clone();
        let next = tokio::spawn(async move { w3.claim("T", &["c"], MINUTE).await.originals() });
        tokio::task::yield_now().await;
        drop(failed);
        assert_eq!(next.await.unwrap(), [None]);
    }

    #[tokio::test]
    async fn batches_claim_all_or_nothing() {
        let w = Arc::new(DedupeWindow::new(100));
        let ab = w.claim("T", &["a", "b"], MINUTE).await;
        let w2 = w.clone();
        // The reverse order waits instead of holding "b" while waiting for "a".
        let ba = tokio::spawn(async move { w2.claim("T", &["b", "a"], MINUTE).await.originals() });
        tokio::task::yield_now().await;
        ab.stored([at(1), at(2)]);
        assert_eq!(ba.await.unwrap(), [Some(at(2)), Some(at(1))]);
        let mixed = w.claim("T", &["a", "z"], MINUTE).await;
        assert_eq!(mixed.originals(), [Some(at(1)), None]);
        assert!(!mixed.all_duplicates());
        mixed.stored([at(3)]);
        assert_eq!(
            w.claim("T", &["z"], MINUTE).await.originals(),
            [Some(at(3))]
        );
    }

    #[tokio::test]
    async fn a_key_repeated_in_a_batch_and_failed_claims() {
        let w = DedupeWindow::new(100);
        let claim = w.claim("T", &["r", "r", "s"], MINUTE).await;
        assert_eq!(claim.originals(), [None, None, None]);
        claim.stored([at(1), at(2), at(3)]);
        // The later copy is what the key answers.
        assert_eq!(
            w.claim("T", &["r"], MINUTE).await.originals(),
            [Some(at(2))]
        );
        // A failed claim leaves nothing behind but a dead slot, skipped later.
        drop(w.claim("T", &["f"], MINUTE).await);
        assert_eq!(w.len(), 2);
        w.claim("T", &["f"], MINUTE).await.stored([at(4)]);
        assert_eq!(
            w.claim("T", &["f"], MINUTE).await.originals(),
            [Some(at(4))]
        );
    }

    /// Random claims, stores and failures: a key is only ever answered with the last
    /// place it was stored at, and the ceiling holds.
    #[tokio::test]
    async fn random_operations_answer_only_the_last_store() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let w = DedupeWindow::new(16);
        let mut last: HashMap<String, Original> = HashMap::new();
        let mut answered = 0;
        for step in 0..5_000 {
            let n = rng.random_range(1..=3);
            let keys: Vec<String> = (0..n)
                .map(|_| format!("k{}", rng.random_range(0..40)))
                .collect();
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            let claim = w.claim("T", &refs, MINUTE).await;
            let originals = claim.originals();
            for (k, o) in keys.iter().zip(&originals) {
                if let Some(o) = o {
                    assert_eq!(Some(o), last.get(k), "step {step} key {k}");
                    answered += 1;
                }
            }
            if rng.random_bool(0.8) {
                let mut placed = Vec::new();
                for (k, o) in keys.iter().zip(&originals) {
                    if o.is_none() {
                        let at = at(step * 10 + placed.len() as i64);
                        last.insert(k.clone(), at);
                        placed.push(at);
                    }
                }
                claim.stored(placed);
            } else {
                drop(claim);
            }
            assert!(w.len() <= 16, "step {step}: {} entries", w.len());
        }
        assert!(answered > 1000, "{answered}");
    }

    #[tokio::test]
    async fn bounded_by_the_ceiling_and_the_window() {
        let w = DedupeWindow::new(3);
        for (i, k) in ["a", "b", "c", "d"].iter().enumerate() {
            w.claim("T", &[k], MINUTE).await.stored([at(i as i64)]);
        }
        assert_eq!(w.len(), 3);
        assert_eq!(w.stats.evicted_early.load(Ordering::Relaxed), 1);
        assert_eq!(
            w.claim("T", &["a"], MINUTE).await.originals(),
            [None],
            "oldest went first"
        );
        // Expired entries are not answered.
        w.restore("T", "e", at(9), now_millis() - 2_000);
        assert_eq!(w.claim("T", &["e"], MINUTE).await.originals(), [None]);
        w.restore("T", "f", at(5), now_millis() + 60_000);
        w.restore("T", "f", at(6), now_millis() + 60_000);
        assert_eq!(
            w.claim("T", &["f"], MINUTE).await.originals(),
            [Some(at(5))]
        );
    }
}
