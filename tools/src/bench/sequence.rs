//! Sequence numbers for `e2e`: every message body starts with a [`Stamp`] (run, task,
//! sequence number, send time), the consumer marks each one in a per-task bitmap, and
//! at the end a [`SequenceCheck`] over the whole run: `lost` = acknowledged by the
//! broker but never received, `duplicates` = deliveries after the first.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "MQBS"
//!      4     4  run id (u32, big-endian): other runs' messages are "foreign"
//!      8     4  producer task (u32)
//!     12     8  sequence number within the task (u64), dense from 0
//!     20     8  send time, µs since the Unix epoch (u64)
//! ```
//!
//! The run's first send, which makes sure the topic exists before the consumer
//! starts, carries task [`PROBE_TASK`]: a new group on a fresh topic receives it (the
//! broker starts such a group at offset 0), and it is no part of any figure.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes a stamp takes at the start of a body.
pub const STAMP_LEN: usize = 28;
/// The task of the run's first send (the topic probe), not a producer task.
pub const PROBE_TASK: u32 = u32::MAX;
const MAGIC: &[u8; 4] = b"MQBS";

/// What `e2e` writes at the start of every body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub run_id: u32,
    pub task: u32,
    pub seq: u64,
    pub sent_at_us: u64,
}

impl Stamp {
    /// Writes the stamp into the first [`STAMP_LEN`] bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) {
        buf[..4].copy_from_slice(MAGIC);
        buf[4..8].copy_from_slice(&self.run_id.to_be_bytes());
        buf[8..12].copy_from_slice(&self.task.to_be_bytes());
        buf[12..20].copy_from_slice(&self.seq.to_be_bytes());
        buf[20..28].copy_from_slice(&self.sent_at_us.to_be_bytes());
    }

    /// The stamp at the start of `body`, if it has one.
    pub fn read(body: &[u8]) -> Option<Stamp> {
        if body.len() < STAMP_LEN || &body[..4] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes(body[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_be_bytes(body[i..i + 8].try_into().expect("8 bytes"));
        Some(Stamp {
            run_id: u32_at(4),
            task: u32_at(8),
            seq: u64_at(12),
            sent_at_us: u64_at(20),
        })
    }
}

/// Wall-clock microseconds since the Unix epoch (comparable across processes on one
/// machine).
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Bits per lazily allocated chunk (32 KiB).
const CHUNK_BITS: u64 = 1 << 18;
const CHUNK_WORDS: usize = (CHUNK_BITS / 64) as usize;
/// Chunks per set: sequence numbers below 2^30 per task.
const MAX_CHUNKS: usize = 1 << 12;

/// A set of sequence numbers that many threads mark at once without a lock; memory
/// grows with the highest number seen, 32 KiB at a time.
pub struct SeqSet {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

/// What [`SeqSet::insert`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    New,
    Again,
    /// Beyond the set's range (2^30): not tracked.
    OutOfRange,
}

impl Default for SeqSet {
    fn default() -> Self {
        SeqSet {
            chunks: (0..MAX_CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }
}

impl SeqSet {
    /// Largest trackable sequence number plus one.
    pub const CAPACITY: u64 = CHUNK_BITS * MAX_CHUNKS as u64;

    fn locate(seq: u64) -> Option<(usize, usize, u64)> {
        if seq >= Self::CAPACITY {
            return None;
        }
        let chunk = (seq / CHUNK_BITS) as usize;
        let bit = seq % CHUNK_BITS;
        Some((chunk, (bit / 64) as usize, 1u64 << (bit % 64)))
    }

    pub fn insert(&self, seq: u64) -> Insert {
        let Some((chunk, word, mask)) = Self::locate(seq) else {
            return Insert::OutOfRange;
        };
        let words = self.chunks[chunk]
            .get_or_init(|| (0..CHUNK_WORDS).map(|_| AtomicU64::new(0)).collect());
        if words[word].fetch_or(mask, Ordering::Relaxed) & mask == 0 {
            Insert::New
        } else {
            Insert::Again
        }
    }

    pub fn contains(&self, seq: u64) -> bool {
        let Some((chunk, word, mask)) = Self::locate(seq) else {
            return false;
        };
        self.chunks[chunk]
            .get()
            .is_some_and(|w| w[word].load(Ordering::Relaxed) & mask != 0)
    }
}

/// The sequence numbers one producer task had acknowledged: written by that task
/// alone, so a plain bitmap.
#[derive(Debug, Default, Clone)]
pub struct AckedSet {
    words: Vec<u64>,
    count: u64,
}

impl AckedSet {
    pub fn insert(&mut self, seq: u64) {
        let word = (seq / 64) as usize;
        if word >= self.words.len() {
            self.words.resize(word + 1 + self.words.len() / 2, 0);
        }
        let mask = 1u64 << (seq % 64);
        if self.words[word] & mask == 0 {
            self.words[word] |= mask;
            self.count += 1;
        }
    }

    pub fn len(&self) -> u64 {
        self.count
    }

    /// Adds every number of `other`.
    pub fn merge(&mut self, other: &AckedSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (mine, theirs) in self.words.iter_mut().zip(&other.words) {
            *mine |= theirs;
        }
        self.count = self.words.iter().map(|w| u64::from(w.count_ones())).sum();
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let base = i as u64 * 64;
            (0..64u64)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| base + b)
        })
    }
}

/// What the consumer side of `e2e` learned from one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// First delivery of one of this run's messages.
    New,
    Duplicate,
    /// Not stamped by this run (another run, another producer).
    Foreign,
    /// This run's first send, the topic probe: not counted.
    Probe,
}

/// The receiving side: one [`SeqSet`] per producer task of this run.
pub struct SeqTracker {
    run_id: u32,
    tasks: Box<[SeqSet]>,
    new: AtomicU64,
    duplicates: AtomicU64,
    foreign: AtomicU64,
}

impl SeqTracker {
    pub fn new(run_id: u32, tasks: usize) -> Self {
        SeqTracker {
            run_id,
            tasks: (0..tasks).map(|_| SeqSet::default()).collect(),
            new: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            foreign: AtomicU64::new(0),
        }
    }

    pub fn run_id(&self) -> u32 {
        self.run_id
    }

    /// Marks the stamp of a received body.
    pub fn observe(&self, stamp: Option<&Stamp>) -> Seen {
        if stamp.is_some_and(|s| s.run_id == self.run_id && s.task == PROBE_TASK) {
            return Seen::Probe;
        }
        let set = stamp
            .filter(|s| s.run_id == self.run_id)
            .and_then(|s| self.tasks.get(s.task as usize).map(|set| (set, s.seq)));
        match set.map(|(set, seq)| set.insert(seq)) {
            Some(Insert::New) => {
                self.new.fetch_add(1, Ordering::Relaxed);
                Seen::New
            }
            Some(Insert::Again) => {
                self.duplicates.fetch_add(1, Ordering::Relaxed);
                Seen::Duplicate
            }
            Some(Insert::OutOfRange) | None => {
                self.foreign.fetch_add(1, Ordering::Relaxed);
                Seen::Foreign
            }
        }
    }

    /// Distinct messages of this run received.
    pub fn received(&self) -> u64 {
        self.new.load(Ordering::Relaxed)
    }

    pub fn duplicates(&self) -> u64 {
        self.duplicates.load(Ordering::Relaxed)
    }

    pub fn foreign(&self) -> u64 {
        self.foreign.load(Ordering::Relaxed)
    }

    /// Acknowledged messages (task `i` acknowledged `acked[i]`) never received.
    pub fn lost(&self, acked: &[AckedSet]) -> u64 {
        acked
            .iter()
            .zip(self.tasks.iter())
            .map(|(a, set)| a.iter().filter(|&seq| !set.contains(seq)).count() as u64)
            .sum()
    }

    /// The figures of every delivery observed so far against every acknowledged send
    /// (task `i` acknowledged `acked[i]`). Taken once the consumer has stopped, all of
    /// them cover the same deliveries.
    pub fn check(&self, acked: &[AckedSet]) -> SequenceCheck {
        SequenceCheck {
            acknowledged: acked.iter().map(AckedSet::len).sum(),
            received: self.received(),
            lost: self.lost(acked),
            duplicates: self.duplicates(),
            foreign: self.foreign(),
        }
    }
}

/// The sequence accounting of a whole `e2e` run: warm-up, window and drain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SequenceCheck {
    /// Sends the broker acknowledged.
    pub acknowledged: u64,
    /// Distinct messages of this run received, acknowledged or not.
    pub received: u64,
    /// Acknowledged, never received.
    pub lost: u64,
    /// Deliveries of a message of this run after its first.
    pub duplicates: u64,
    /// Deliveries not stamped by this run.
    pub foreign: u64,
}

impl SequenceCheck {
    /// Acknowledged messages that were received.
    pub fn received_acknowledged(&self) -> u64 {
        self.acknowledged.saturating_sub(self.lost)
    }

    /// Received messages whose send was not acknowledged (it failed or timed out, yet
    /// the broker stored the message).
    pub fn received_unacknowledged(&self) -> u64 {
        self.received.saturating_sub(self.received_acknowledged())
    }

    /// Every delivery: `received_acknowledged + received_unacknowledged + duplicates +
    /// foreign`.
    pub fn deliveries(&self) -> u64 {
        self.received + self.duplicates + self.foreign
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_round_trips_and_rejects_plain_bodies() {
        let s = Stamp {
            run_id: 0xDEADBEEF,
            task: 7,
            seq: 1 << 40,
            sent_at_us: 1_700_000_000_123_456,
        };
        let mut body = vec![b'x'; 64];
        s.write(&mut body);
        assert_eq!(&body[..4], b"MQBS");
        assert_eq!(Stamp::read(&body), Some(s));
        assert_eq!(Stamp::read(&body[..STAMP_LEN - 1]), None);
        assert_eq!(Stamp::read(&[b'x'; 64]), None);
    }

    #[test]
    fn seq_set_marks_once_across_chunks() {
        let set = SeqSet::default();
        for seq in [0, 1, 63, 64, CHUNK_BITS - 1, CHUNK_BITS, 5 * CHUNK_BITS + 3] {
            assert!(!set.contains(seq));
            assert_eq!(set.insert(seq), Insert::New);
            assert_eq!(set.insert(seq), Insert::Again);
            assert!(set.contains(seq));
        }
        assert!(!set.contains(2));
        assert_eq!(set.insert(SeqSet::CAPACITY), Insert::OutOfRange);
        assert!(!set.contains(SeqSet::CAPACITY));
    }

    #[test]
    fn acked_set_counts_distinct_numbers() {
        let mut a = AckedSet::default();
        for seq in [5, 1, 5, 1000, 64] {
            a.insert(seq);
        }
        assert_eq!(a.len(), 4);
        assert_eq!(a.iter().collect::<Vec<_>>(), [1, 5, 64, 1000]);
        let mut b = AckedSet::default();
        b.insert(5);
        b.insert(5000);
        b.merge(&a);
        assert_eq!(b.len(), 5);
        assert_eq!(b.iter().collect::<Vec<_>>(), [1, 5, 64, 1000, 5000]);
    }

    fn stamp(run_id: u32, task: u32, seq: u64) -> Stamp {
        Stamp {
            run_id,
            task,
            seq,
            sent_at_us: 0,
        }
    }

    #[test]
    fn lost_and_duplicates_are_counted_per_task() {
        let tracker = SeqTracker::new(42, 2);
        let mut acked = vec![AckedSet::default(), AckedSet::default()];
        // Task 0 sent 0..10, task 1 sent 0..5; all acknowledged.
        for seq in 0..10 {
            acked[0].insert(seq);
        }
        for seq in 0..5 {
            acked[1].insert(seq);
        }
        // Received: task 0 all but 3 and 7, seq 2 twice; task 1 all, seq 4 three times.
        for seq in (0..10).filter(|s| *s != 3 && *s != 7) {
            assert_eq!(tracker.observe(Some(&stamp(42, 0, seq))), Seen::New);
        }
        assert_eq!(tracker.observe(Some(&stamp(42, 0, 2))), Seen::Duplicate);
        for seq in 0..5 {
            tracker.observe(Some(&stamp(42, 1, seq)));
        }
        tracker.observe(Some(&stamp(42, 1, 4)));
        tracker.observe(Some(&stamp(42, 1, 4)));
        // Other runs, unknown tasks and unstamped bodies are foreign.
        assert_eq!(tracker.observe(Some(&stamp(41, 0, 3))), Seen::Foreign);
        assert_eq!(tracker.observe(Some(&stamp(42, 9, 3))), Seen::Foreign);
        assert_eq!(tracker.observe(None), Seen::Foreign);
        // This run's probe is neither foreign nor one of its messages.
        assert_eq!(
            tracker.observe(Some(&stamp(42, PROBE_TASK, 0))),
            Seen::Probe
        );
        assert_eq!(
            tracker.observe(Some(&stamp(41, PROBE_TASK, 0))),
            Seen::Foreign
        );

        assert_eq!(tracker.lost(&acked), 2);
        assert_eq!(tracker.received(), 13);
        assert_eq!(tracker.duplicates(), 3);
        assert_eq!(tracker.foreign(), 4);
        let check = tracker.check(&acked);
        assert_eq!(
            check,
            SequenceCheck {
                acknowledged: 15,
                received: 13,
                lost: 2,
                duplicates: 3,
                foreign: 4,
            }
        );
        assert_eq!(check.received_unacknowledged(), 0);
        assert_eq!(check.deliveries(), 13 + 3 + 4);
    }

    #[test]
    fn received_but_unacknowledged_is_not_lost() {
        // A send that timed out may still be stored: receiving it is fine.
        let tracker = SeqTracker::new(1, 1);
        let mut acked = vec![AckedSet::default()];
        acked[0].insert(0);
        tracker.observe(Some(&stamp(1, 0, 0)));
        tracker.observe(Some(&stamp(1, 0, 1)));
        assert_eq!(tracker.lost(&acked), 0);
        assert_eq!(tracker.duplicates(), 0);
        let check = tracker.check(&acked);
        assert_eq!(
            (
                check.received_acknowledged(),
                check.received_unacknowledged()
            ),
            (1, 1)
        );
    }

    #[test]
    fn concurrent_marking_counts_each_number_once() {
        let tracker = std::sync::Arc::new(SeqTracker::new(1, 1));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let t = tracker.clone();
                std::thread::spawn(move || {
                    let mut new = 0;
                    for seq in 0..20_000 {
                        if t.observe(Some(&stamp(1, 0, seq))) == Seen::New {
                            new += 1;
                        }
                    }
                    new
                })
            })
            .collect();
        let new: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(new, 20_000);
        assert_eq!(tracker.duplicates(), 3 * 20_000);
    }
}
