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
//! Bounded: at most `duplicationWindowMaxEntries` entries, the oldest evicted first
//! (counted, and logged, when still inside their window). Each entry costs one table
//! slot and one slot of the arrival queue: [`ENTRY_BYTES`] bytes plus the tables'
//! growth slack, and the key's own text when it is not a 32-digit hex id. Rebuilt at
//! start from the commitlog tail (`dedupe_rebuild`).

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tracing::warn;
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;

/// A client unique id: 16 bytes when it is 32 uppercase hex digits (what RocketMQ
/// clients generate for IPv4 hosts), else its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum UniqKey {
    Hex([u8; 16]),
    Text(Box<str>),
}

impl UniqKey {
    fn new(key: &str) -> UniqKey {
        let b = key.as_bytes();
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        };
        if b.len() == 32 {
            let mut out = [0u8; 16];
            let parsed = out.iter_mut().enumerate().all(|(i, o)| {
                match (nibble(b[2 * i]), nibble(b[2 * i + 1])) {
                    (Some(h), Some(l)) => {
                        *o = h << 4 | l;
                        true
                    }
                    _ => false,
                }
            });
            if parsed {
                return UniqKey::Hex(out);
            }
        }
        UniqKey::Text(key.into())
    }
}

/// A key of the window: topic (interned) and unique id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    topic: u32,
    uniq: UniqKey,
}

/// Where the first copy of a message was stored: what its send answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Original {
    pub queue_id: i32,
    pub queue_offset: i64,
    pub commit_offset: i64,
}

/// An entry, laid out flat (32 bytes).
#[derive(Debug, Clone, Copy)]
struct Entry {
    queue_offset: i64,
    commit_offset: i64,
    expire_at: i64,
    queue_id: i32,
    /// Which arrival-queue slot owns this entry (a key stored again after expiring
    /// leaves a stale slot behind). Wraps after 2^32 inserts, long after any stale
    /// slot has left the queue.
    seq: u32,
}

/// `expire_at` of an entry whose message a request is storing now.
const IN_FLIGHT: i64 = i64::MIN;
/// `seq` of an entry that owns no arrival slot (one in flight).
const NO_SLOT: u32 = u32::MAX;

impl Entry {
    const MARKER: Entry = Entry {
        queue_offset: 0,
        commit_offset: 0,
        expire_at: IN_FLIGHT,
        queue_id: 0,
        seq: NO_SLOT,
    };

    fn in_flight(&self) -> bool {
        self.expire_at == IN_FLIGHT
    }

    fn original(&self) -> Original {
        Original {
            queue_id: self.queue_id,
            queue_offset: self.queue_offset,
            commit_offset: self.commit_offset,
        }
    }
}

/// Bytes of one entry's table slot and arrival-queue slot, before the tables' slack.
pub const ENTRY_BYTES: usize =
    std::mem::size_of::<(Key, Entry)>() + 1 + std::mem::size_of::<(Key, u32)>();
// What the docs and `duplicationWindowMaxEntries` were worked out with.
const _: () = assert!(ENTRY_BYTES <= 105);

#[derive(Default)]
struct Inner {
    topic_ids: HashMap<String, u32>,
    /// Stored messages, and markers of those being stored.
    entries: HashMap<Key, Entry>,
    /// Keys of stored messages in arrival order, for expiry and eviction.
    arrivals: VecDeque<(Key, u32)>,
    /// Requests waiting for a key in flight listen here (the first waiter makes the
    /// channel); removing the sender wakes them.
    waiters: HashMap<Key, watch::Sender<()>>,
    next_seq: u32,
    last_eviction_warning: i64,
}

impl Inner {
    fn topic_id(&mut self, topic: &str) -> u32 {
        if let Some(id) = self.topic_ids.get(topic) {
            return *id;
        }
        let id = self.topic_ids.len() as u32;
        self.topic_ids.insert(topic.to_owned(), id);
        id
    }

    /// Sizes the tables for the ceiling on first use, so that no rehash (a pause of
    /// every send, hundreds of ms for a large table) ever follows. The hash table's
    /// pages are touched as entries spread over it: a broker with a window soon holds
    /// most of the table (about 68 MB at the default ceiling); the arrival queue grows
    /// with use.
    fn reserve(&mut self, max_entries: usize) {
        if self.entries.capacity() == 0 {
            self.entries.reserve(max_entries + 1);
            self.arrivals.reserve(max_entries + 1);
        }
    }

    fn next_seq(&mut self) -> u32 {
        let seq = self.next_seq;
        self.next_seq = if seq + 1 == NO_SLOT { 0 } else { seq + 1 };
        seq
    }

    /// A key some request is storing now, if any of `keys` is.
    fn busy<'k>(&self, keys: &'k [Key]) -> Option<&'k Key> {
        keys.iter()
            .find(|k| self.entries.get(*k).is_some_and(Entry::in_flight))
    }
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
            max_entries: max_entries.max(1),
            stats: DedupeStats::default(),
        }
    }

    /// Entries held now (those in flight included).
    pub fn len(&self) -> usize {
        self.inner.locked().entries.len()
    }

    /// Looks `uniq_keys` (the messages of one request, in order) up in `topic`'s window
    /// and claims those not stored yet, waiting while another request stores any of
    /// them.
    pub async fn claim(&self, topic: &str, uniq_keys: &[&str], window: Duration) -> Claim<'_> {
        loop {
            let mut rx = {
                let mut inner = self.inner.locked();
                inner.reserve(self.max_entries);
                let topic = inner.topic_id(topic);
                let keys: Vec<Key> = uniq_keys
                    .iter()
                    .map(|k| Key {
                        topic,
                        uniq: UniqKey::new(k),
                    })
                    .collect();
                // All or nothing: a request waits before it holds any key.
                let busy = if keys.len() > 1 {
                    inner.busy(&keys).cloned()
                } else {
                    None
                };
                let busy = match busy {
                    Some(key) => key,
                    None => match self.hold(&mut inner, keys, window) {
                        Ok(claim) => return claim,
                        Err(key) => key,
                    },
                };
                inner
                    .waiters
                    .entry(busy)
                    .or_insert_with(|| watch::channel(()).0)
                    .subscribe()
            };
            // Resolves with an error once the other request releases the key.
            let _ = rx.changed().await;
        }
    }

    /// Marks the keys no original answers as in flight. A key in flight is this
    /// request's own earlier message, except for a request of one message, which gets
    /// the key back to wait for (with nothing held).
    fn hold(&self, inner: &mut Inner, keys: Vec<Key>, window: Duration) -> Result<Claim<'_>, Key> {
        let now = now_millis();
        let single = keys.len() == 1;
        let mut messages = Vec::with_capacity(keys.len());
        let mut duplicates = 0;
        for key in keys {
            let (original, held) = match inner.entries.entry(key.clone()) {
                MapEntry::Occupied(e) if e.get().in_flight() => {
                    if single {
                        return Err(key);
                    }
                    (None, false)
                }
                MapEntry::Occupied(e) if e.get().expire_at > now => {
                    (Some(e.get().original()), false)
                }
                MapEntry::Occupied(mut e) => {
                    *e.get_mut() = Entry::MARKER;
                    (None, true)
                }
                MapEntry::Vacant(v) => {
                    v.insert(Entry::MARKER);
                    (None, true)
                }
            };
            duplicates += u64::from(original.is_some());
            messages.push(Claimed {
                key,
                original,
                held,
            });
        }
        self.stats
            .duplicates
            .fetch_add(duplicates, Ordering::Relaxed);
        Ok(Claim {
            window: self,
            messages,
            ttl_ms: window.as_millis().min(i64::MAX as u128) as i64,
        })
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
        if inner.entries.contains_key(&key) {
            return;
        }
        inner.entries.insert(key.clone(), Entry::MARKER);
        self.settle(&mut inner, &key, original, expire_at, now_millis());
    }

    /// Turns `key`'s entry into a stored message with an arrival slot.
    fn settle(&self, inner: &mut Inner, key: &Key, original: Original, expire_at: i64, now: i64) {
        let seq = inner.next_seq();
        let Some(entry) = inner.entries.get_mut(key) else {
            return;
        };
        *entry = Entry {
            queue_offset: original.queue_offset,
            commit_offset: original.commit_offset,
            expire_at,
            queue_id: original.queue_id,
            seq,
        };
        inner.arrivals.push_back((key.clone(), seq));
        self.trim(inner, now);
    }

    /// Drops expired entries from the front and, past the ceiling, the oldest ones.
    fn trim(&self, inner: &mut Inner, now: i64) {
        let mut evicted = 0u64;
        while let Some((key, seq)) = inner.arrivals.front() {
            let entry = inner.entries.get(key).filter(|e| e.seq == *seq).copied();
            let full = inner.entries.len() > self.max_entries;
            match entry {
                // A stale slot: the key was stored again later.
                None => {}
                Some(e) if e.expire_at <= now => {}
                Some(_) if full => evicted += 1,
                Some(_) => break,
            }
            if let Some((key, seq)) = inner.arrivals.pop_front() {
                if inner.entries.get(&key).is_some_and(|e| e.seq == seq) {
                    inner.entries.remove(&key);
                }
            }
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
    key: Key,
    original: Option<Original>,
    /// This claim holds the key in flight.
    held: bool,
}

/// The window's answer for one request: which messages are duplicates, and a hold on
/// the others until they are stored or the claim is dropped.
pub(crate) struct Claim<'a> {
    window: &'a DedupeWindow,
    messages: Vec<Claimed>,
    ttl_ms: i64,
}

impl Claim<'_> {
    /// Per message, in request order: the original of a duplicate, `None` for a
    /// message this request stores.
    pub fn originals(&self) -> Vec<Option<Original>> {
        self.messages.iter().map(|m| m.original).collect()
    }

    /// True when every message of the request was stored before.
    pub fn all_duplicates(&self) -> bool {
        self.messages.iter().all(|m| m.original.is_some())
    }

    /// Records where the new messages (those with no original, in request order) were
    /// stored, then releases the claim.
    pub fn stored(mut self, placed: impl IntoIterator<Item = Original>) {
        let window = self.window;
        let mut inner = window.inner.locked();
        let now = now_millis();
        let expire_at = now.saturating_add(self.ttl_ms);
        let mut placed = placed.into_iter();
        for m in &mut self.messages {
            if m.original.is_some() {
                continue;
            }
            let Some(at) = placed.next() else { break };
            window.settle(&mut inner, &m.key, at, expire_at, now);
            if m.held {
                m.held = false;
                if !inner.waiters.is_empty() {
                    inner.waiters.remove(&m.key);
                }
            }
        }
        release(&mut inner, &mut self.messages);
    }
}

/// Gives up the keys still held: their entries go, and their waiters wake.
fn release(inner: &mut Inner, messages: &mut [Claimed]) {
    for m in messages.iter_mut().filter(|m| m.held) {
        m.held = false;
        if inner.entries.get(&m.key).is_some_and(Entry::in_flight) {
            inner.entries.remove(&m.key);
        }
        if !inner.waiters.is_empty() {
            inner.waiters.remove(&m.key);
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.messages.iter().any(|m| m.held) {
            let mut inner = self.window.inner.locked();
            release(&mut inner, &mut self.messages);
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
        // Expired entries are not answered and leave at the next insert.
        w.claim("T", &["e"], Duration::ZERO).await.stored([at(9)]);
        assert_eq!(w.claim("T", &["e"], MINUTE).await.originals(), [None]);
        w.restore("T", "f", at(5), now_millis() + 60_000);
        w.restore("T", "f", at(6), now_millis() + 60_000);
        assert_eq!(
            w.claim("T", &["f"], MINUTE).await.originals(),
            [Some(at(5))]
        );
    }
}
