//! Where the duplication window keeps its entries: an arena of slots in arrival order
//! (a ring, appended at the back, expired and evicted from the front) and a hash table
//! of their positions, hashed by the key each points at. A new key touches the table's
//! small control and position arrays (5 bytes a slot) and the arena's tail, never a
//! random slot of a large table: this is what keeps the window cheap on the send
//! path. Positions wrap; fewer than 2^32 slots are ever held.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;

use hashbrown::HashTable;
use tokio::sync::watch;

use super::Original;

/// A client unique id: 16 bytes when it is 32 uppercase hex digits (what RocketMQ
/// clients generate for IPv4 hosts), else its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum UniqKey {
    Hex([u8; 16]),
    Text(Box<str>),
}

impl UniqKey {
    pub(super) fn new(key: &str) -> UniqKey {
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
pub(super) struct Key {
    pub topic: u32,
    pub uniq: UniqKey,
}

/// A slot's `expire_at` while a request is storing its message.
const IN_FLIGHT: u32 = 0;
/// A slot's `expire_at` once given up (its request failed, or its key was stored again).
const DEAD: u32 = 1;
/// Set in a slot's `topic` when its key is text (kept in [`Inner::texts`]).
const TEXT: u32 = 1 << 31;

/// One arena slot: 44 bytes, so that a full window of the default 900,000 entries
/// stays near 45 MB. Offsets are kept as two `u32` halves to stay 4-byte aligned, and
/// the expiry in whole seconds (rounded up, so an entry is never forgotten early).
#[derive(Debug, Clone)]
pub(super) struct Slot {
    /// The key's 16 bytes ([`UniqKey::Hex`]); zeros for a text key.
    id: [u8; 16],
    commit_offset: [u32; 2],
    queue_offset: [u32; 2],
    /// The interned topic, with [`TEXT`] set for a text key.
    topic: u32,
    queue_id: i32,
    /// Unix seconds after which the entry no longer answers, or [`IN_FLIGHT`] or
    /// [`DEAD`] (real times are far past both).
    expire_at: u32,
}

fn halves(v: i64) -> [u32; 2] {
    [v as u32, (v as u64 >> 32) as u32]
}

fn joined([low, high]: [u32; 2]) -> i64 {
    (u64::from(high) << 32 | u64::from(low)) as i64
}

impl Slot {
    fn new(key: &Key) -> Slot {
        let (id, topic) = match &key.uniq {
            UniqKey::Hex(id) => (*id, key.topic),
            UniqKey::Text(_) => ([0; 16], key.topic | TEXT),
        };
        Slot {
            id,
            commit_offset: [0; 2],
            queue_offset: [0; 2],
            topic,
            queue_id: 0,
            expire_at: IN_FLIGHT,
        }
    }

    pub(super) fn in_flight(&self) -> bool {
        self.expire_at == IN_FLIGHT
    }

    /// Given up: out of the table, waiting to leave the arena's front.
    pub(super) fn dead(&self) -> bool {
        self.expire_at == DEAD
    }

    /// Stored, and its window not over at `now_ms`.
    pub(super) fn answers_at(&self, now_ms: i64) -> bool {
        self.expire_at > DEAD && i64::from(self.expire_at) * 1000 > now_ms
    }

    pub(super) fn original(&self) -> Original {
        Original {
            queue_id: self.queue_id,
            queue_offset: joined(self.queue_offset),
            commit_offset: joined(self.commit_offset),
        }
    }

    /// Records where the message was stored and when its window ends (`expire_at_ms`,
    /// kept as the second after it).
    pub(super) fn set(&mut self, at: Original, expire_at_ms: i64) {
        self.queue_id = at.queue_id;
        self.queue_offset = halves(at.queue_offset);
        self.commit_offset = halves(at.commit_offset);
        let secs = expire_at_ms.div_euclid(1000) + i64::from(expire_at_ms.rem_euclid(1000) > 0);
        self.expire_at = secs.clamp(i64::from(DEAD) + 1, i64::from(u32::MAX)) as u32;
    }

    fn give_up(&mut self) {
        self.expire_at = DEAD;
    }
}

/// Bytes of one entry: its arena slot, its table position and control byte.
pub const ENTRY_BYTES: usize = std::mem::size_of::<Slot>() + std::mem::size_of::<u32>() + 1;
// What the docs and `duplicationWindowMaxEntries` were worked out with.
const _: () = assert!(ENTRY_BYTES <= 49);

/// The arena and its index, and what waits on keys in flight.
#[derive(Default)]
pub(super) struct Inner {
    pub topic_ids: HashMap<String, u32>,
    pub hasher: std::collections::hash_map::RandomState,
    /// Arena positions of the live slots (stored, or in flight), by key.
    pub table: HashTable<u32>,
    pub arena: VecDeque<Slot>,
    /// The text of the keys that are not 16 bytes of hex, by arena position, for as
    /// long as their slot is in the arena.
    texts: HashMap<u32, Box<str>>,
    /// Position of `arena[0]`; positions wrap, and fewer than 2^32 slots are ever held.
    pub head: u32,
    /// Requests waiting for a key in flight listen here (the first waiter makes the
    /// channel); removing the sender wakes them.
    pub waiters: HashMap<Key, watch::Sender<()>>,
    pub last_eviction_warning: i64,
}

/// The key of the slot at `pos`, from the parts of [`Inner`] it lives in.
fn key_at(arena: &VecDeque<Slot>, texts: &HashMap<u32, Box<str>>, head: u32, pos: u32) -> Key {
    let slot = &arena[pos.wrapping_sub(head) as usize];
    let uniq = match slot.topic & TEXT {
        0 => UniqKey::Hex(slot.id),
        _ => UniqKey::Text(texts.get(&pos).cloned().unwrap_or_default()),
    };
    Key {
        topic: slot.topic & !TEXT,
        uniq,
    }
}

impl Inner {
    pub(super) fn topic_id(&mut self, topic: &str) -> u32 {
        if let Some(id) = self.topic_ids.get(topic) {
            return *id;
        }
        // Ids stay below the text flag: 2^31 topic names would not fit in memory.
        let id = (self.topic_ids.len() as u32).min(TEXT - 1);
        self.topic_ids.insert(topic.to_owned(), id);
        id
    }

    /// Sizes the table and the arena for the ceiling on first use, so that neither
    /// ever grows (a rehash pauses every send). The table is small (5 bytes a slot);
    /// the arena's memory is touched as it fills.
    pub(super) fn reserve(&mut self, max_entries: usize) {
        if self.arena.capacity() == 0 {
            self.arena.reserve(max_entries + 1);
            let Inner {
                table,
                arena,
                texts,
                head,
                hasher,
                ..
            } = self;
            table.reserve(max_entries + 1, |p| {
                hasher.hash_one(key_at(arena, texts, *head, *p))
            });
        }
    }

    pub(super) fn slot(&self, pos: u32) -> &Slot {
        &self.arena[pos.wrapping_sub(self.head) as usize]
    }

    pub(super) fn slot_mut(&mut self, pos: u32) -> &mut Slot {
        let i = pos.wrapping_sub(self.head) as usize;
        &mut self.arena[i]
    }

    /// Whether the slot at `pos` holds `key`.
    fn holds(&self, pos: u32, key: &Key) -> bool {
        let slot = self.slot(pos);
        match &key.uniq {
            UniqKey::Hex(id) => slot.topic == key.topic && slot.id == *id,
            UniqKey::Text(text) => {
                slot.topic == key.topic | TEXT && self.texts.get(&pos).is_some_and(|t| t == text)
            }
        }
    }

    /// The position of `key`'s live slot.
    pub(super) fn find(&self, key: &Key, hash: u64) -> Option<u32> {
        self.table.find(hash, |p| self.holds(*p, key)).copied()
    }

    /// Appends a slot for `key` and points the table at it (replacing `old`, a slot of
    /// the same key that is given up).
    pub(super) fn push(&mut self, key: Key, hash: u64, old: Option<u32>) -> u32 {
        let pos = self.head.wrapping_add(self.arena.len() as u32);
        self.arena.push_back(Slot::new(&key));
        if let UniqKey::Text(text) = key.uniq {
            self.texts.insert(pos, text);
        }
        match old {
            Some(old) => {
                self.slot_mut(old).give_up();
                if let Some(p) = self.table.find_mut(hash, |p| *p == old) {
                    *p = pos;
                }
            }
            None => {
                let Inner {
                    table,
                    arena,
                    texts,
                    head,
                    hasher,
                    ..
                } = self;
                table.insert_unique(hash, pos, |p| {
                    hasher.hash_one(key_at(arena, texts, *head, *p))
                });
            }
        }
        pos
    }

    /// Gives up the slot at `pos`: out of the table, dead in the arena.
    pub(super) fn remove(&mut self, pos: u32) {
        let hash = self
            .hasher
            .hash_one(key_at(&self.arena, &self.texts, self.head, pos));
        if let Ok(entry) = self.table.find_entry(hash, |p| *p == pos) {
            entry.remove();
        }
        self.slot_mut(pos).give_up();
    }

    /// Drops the arena's front slot, which must be dead (see [`Inner::remove`]).
    pub(super) fn pop_front(&mut self) {
        if self.arena.pop_front().is_some_and(|s| s.topic & TEXT != 0) {
            self.texts.remove(&self.head);
        }
        self.head = self.head.wrapping_add(1);
    }

    /// Wakes the requests waiting for `pos`'s key.
    pub(super) fn wake(&mut self, pos: u32) {
        if !self.waiters.is_empty() {
            let key = key_at(&self.arena, &self.texts, self.head, pos);
            self.waiters.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn original(queue_offset: i64, commit_offset: i64) -> Original {
        Original {
            queue_id: -3,
            queue_offset,
            commit_offset,
        }
    }

    #[test]
    fn a_slot_keeps_what_the_send_answered() {
        let mut slot = Slot::new(&Key {
            topic: 7,
            uniq: UniqKey::new("7F0000010001000000000000000000AB"),
        });
        assert!(slot.in_flight() && !slot.answers_at(0));
        for (q, c) in [
            (0, 0),
            (1 << 40, i64::MAX),
            (-1, i64::MIN),
            (u32::MAX as i64, 1 << 32),
        ] {
            slot.set(original(q, c), 10_000);
            assert_eq!(slot.original(), original(q, c));
        }
        assert_eq!(std::mem::size_of::<Slot>(), 44);
    }

    #[test]
    fn the_window_ends_at_the_second_after_it() {
        let mut slot = Slot::new(&Key {
            topic: 0,
            uniq: UniqKey::new("x"),
        });
        slot.set(original(1, 1), 5_000);
        assert!(slot.answers_at(4_999) && !slot.answers_at(5_000));
        slot.set(original(1, 1), 5_001);
        assert!(
            slot.answers_at(5_999) && !slot.answers_at(6_000),
            "never forgotten early"
        );
        // Times before 1970 or past 2106 are clamped, never read as in flight or dead.
        slot.set(original(1, 1), -5_000);
        assert!(!slot.in_flight() && !slot.dead() && !slot.answers_at(5_000));
        slot.set(original(1, 1), i64::MAX);
        assert!(slot.answers_at(i64::from(u32::MAX - 1) * 1000));
    }

    #[test]
    fn text_keys_are_compared_whole_and_leave_with_their_slot() {
        let mut inner = Inner::default();
        inner.reserve(8);
        let key = |t: &str| Key {
            topic: 1,
            uniq: UniqKey::new(t),
        };
        let hash = |inner: &Inner, k: &Key| inner.hasher.hash_one(k);
        let long = "FE80000000000000000000000000000100010000000000000000AB";
        let (a, b) = (key(long), key("7f0000010001000000000000000000ab"));
        let (ha, hb) = (hash(&inner, &a), hash(&inner, &b));
        let pa = inner.push(a.clone(), ha, None);
        let pb = inner.push(b.clone(), hb, None);
        assert_eq!(inner.find(&a, ha), Some(pa));
        assert_eq!(inner.find(&b, hb), Some(pb));
        // Same topic, another text of the same length: not the same key.
        let c = key(&long.replace("AB", "AC"));
        assert_eq!(inner.find(&c, hash(&inner, &c)), None);
        // The same id in upper case (16 bytes) is another key than its lower-case text.
        let hex = key("7F0000010001000000000000000000AB");
        assert_eq!(inner.find(&hex, hash(&inner, &hex)), None);
        inner.remove(pa);
        inner.pop_front();
        assert_eq!(inner.find(&a, ha), None);
        assert_eq!(inner.texts.len(), 1, "only b's text is left");
        inner.remove(pb);
        inner.pop_front();
        assert!(inner.texts.is_empty() && inner.table.is_empty());
    }
}
