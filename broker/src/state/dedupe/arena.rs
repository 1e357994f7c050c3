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

/// `expire_at` of an entry whose message a request is storing now.
pub(super) const IN_FLIGHT: i64 = i64::MIN;
/// `expire_at` of a slot given up (its request failed, or its key was stored again).
pub(super) const DEAD: i64 = i64::MIN + 1;

/// One arena slot (64 bytes).
#[derive(Debug, Clone)]
pub(super) struct Slot {
    pub key: Key,
    pub queue_offset: i64,
    pub commit_offset: i64,
    /// Store time plus the window, or [`IN_FLIGHT`] or [`DEAD`].
    pub expire_at: i64,
    pub queue_id: i32,
}

impl Slot {
    pub(super) fn in_flight(&self) -> bool {
        self.expire_at == IN_FLIGHT
    }

    pub(super) fn original(&self) -> Original {
        Original {
            queue_id: self.queue_id,
            queue_offset: self.queue_offset,
            commit_offset: self.commit_offset,
        }
    }

    pub(super) fn set(&mut self, at: Original, expire_at: i64) {
        self.queue_id = at.queue_id;
        self.queue_offset = at.queue_offset;
        self.commit_offset = at.commit_offset;
        self.expire_at = expire_at;
    }
}

/// Bytes of one entry: its arena slot, its table position and control byte.
pub const ENTRY_BYTES: usize = std::mem::size_of::<Slot>() + std::mem::size_of::<u32>() + 1;
// What the docs and `duplicationWindowMaxEntries` were worked out with.
const _: () = assert!(ENTRY_BYTES <= 69);

/// The arena and its index, and what waits on keys in flight.
#[derive(Default)]
pub(super) struct Inner {
    pub topic_ids: HashMap<String, u32>,
    pub hasher: std::collections::hash_map::RandomState,
    /// Arena positions of the live slots (stored, or in flight), by key.
    pub table: HashTable<u32>,
    pub arena: VecDeque<Slot>,
    /// Position of `arena[0]`; positions wrap, and fewer than 2^32 slots are ever held.
    pub head: u32,
    /// Requests waiting for a key in flight listen here (the first waiter makes the
    /// channel); removing the sender wakes them.
    pub waiters: HashMap<Key, watch::Sender<()>>,
    pub last_eviction_warning: i64,
}

impl Inner {
    pub(super) fn topic_id(&mut self, topic: &str) -> u32 {
        if let Some(id) = self.topic_ids.get(topic) {
            return *id;
        }
        let id = self.topic_ids.len() as u32;
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
                head,
                hasher,
                ..
            } = self;
            table.reserve(max_entries + 1, |p| {
                hasher.hash_one(&arena[p.wrapping_sub(*head) as usize].key)
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

    /// The position of `key`'s live slot.
    pub(super) fn find(&self, key: &Key, hash: u64) -> Option<u32> {
        self.table
            .find(hash, |p| self.slot(*p).key == *key)
            .copied()
    }

    /// Appends a slot for `key` and points the table at it (replacing `old`, a slot of
    /// the same key that is given up).
    pub(super) fn push(&mut self, key: Key, hash: u64, old: Option<u32>) -> u32 {
        let pos = self.head.wrapping_add(self.arena.len() as u32);
        self.arena.push_back(Slot {
            key,
            queue_offset: 0,
            commit_offset: 0,
            expire_at: IN_FLIGHT,
            queue_id: 0,
        });
        match old {
            Some(old) => {
                self.slot_mut(old).expire_at = DEAD;
                if let Some(p) = self.table.find_mut(hash, |p| *p == old) {
                    *p = pos;
                }
            }
            None => {
                let Inner {
                    table,
                    arena,
                    head,
                    hasher,
                    ..
                } = self;
                table.insert_unique(hash, pos, |p| {
                    hasher.hash_one(&arena[p.wrapping_sub(*head) as usize].key)
                });
            }
        }
        pos
    }

    /// Gives up the slot at `pos`: out of the table, dead in the arena.
    pub(super) fn remove(&mut self, pos: u32) {
        let hash = self.hasher.hash_one(&self.slot(pos).key);
        if let Ok(entry) = self.table.find_entry(hash, |p| *p == pos) {
            entry.remove();
        }
        self.slot_mut(pos).expire_at = DEAD;
    }

    /// Wakes the requests waiting for `pos`'s key.
    pub(super) fn wake(&mut self, pos: u32) {
        if !self.waiters.is_empty() {
            let i = pos.wrapping_sub(self.head) as usize;
            let Inner { waiters, arena, .. } = self;
            waiters.remove(&arena[i].key);
        }
    }
}
