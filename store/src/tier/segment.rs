//! A segment's queue index: for every queue with messages in one uploaded commitlog
//! file, the consume-queue entries (queue offset, commitlog offset, size, tag code,
//! store time) of those messages. It is uploaded beside the segment, so a reader finds
//! a queue offset in the tier without the local consume queue.
//!
//! Layout (big-endian): `VTQ2`, base i64, data length u64, queue count u32; per queue:
//! topic length u16, topic, queue id i32, entry count u32, then per entry queue offset
//! i64, commitlog offset i64, size i32, tag code i64, store time i64, then per entry
//! its keys (`UNIQ_KEY` and `KEYS`, space-separated): length u16, bytes. `VTQ1` is the
//! same without the keys.

use std::collections::BTreeMap;

use super::backend::TierError;

const MAGIC: &[u8; 4] = b"VTQ2";
const MAGIC_NO_KEYS: &[u8; 4] = b"VTQ1";
const ENTRY_LEN: usize = 8 + 8 + 4 + 8 + 8;

/// One message of a queue, as its consume-queue entry says, plus its store time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    pub(crate) queue_offset: i64,
    pub(crate) phy: i64,
    pub(crate) size: i32,
    pub(crate) tags_code: i64,
    pub(crate) store_timestamp: i64,
}

/// The queue index of one segment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct SegmentIndex {
    pub(crate) base: i64,
    /// Bytes of record data in the segment (up to its end-of-file blank).
    pub(crate) data_len: u64,
    /// Entries per (topic, queue id), in queue-offset order.
    pub(crate) queues: BTreeMap<(String, i32), Vec<IndexEntry>>,
    /// The keys of each entry of `queues`, in the same order.
    pub(crate) keys: BTreeMap<(String, i32), Vec<String>>,
}

fn take<'a>(buf: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], TierError> {
    if buf.len() < n {
        return Err(TierError::Corrupt {
            what: "queue index".to_owned(),
            reason: format!("truncated in {what}"),
        });
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Ok(head)
}

fn i64_of(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    i64::from_be_bytes(a)
}

fn i32_of(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl SegmentIndex {
    pub(crate) fn new(base: i64) -> Self {
        SegmentIndex {
            base,
            ..Default::default()
        }
    }

    /// Adds a message; `keys` longer than 65535 bytes are not kept.
    pub(crate) fn push(&mut self, topic: &str, queue_id: i32, entry: IndexEntry, keys: &str) {
        let q = (topic.to_owned(), queue_id);
        self.queues.entry(q.clone()).or_default().push(entry);
        let keys = if keys.len() <= u16::MAX as usize {
            keys
        } else {
            ""
        };
        self.keys.entry(q).or_default().push(keys.to_owned());
    }

    /// The entries of `topic` (any queue) with `key` among their keys.
    pub(crate) fn with_key<'a>(
        &'a self,
        topic: &'a str,
        key: &'a str,
    ) -> impl Iterator<Item = &'a IndexEntry> + 'a {
        self.queues
            .range((topic.to_owned(), i32::MIN)..=(topic.to_owned(), i32::MAX))
            .flat_map(move |(q, entries)| {
                let keys = self.keys.get(q).map(Vec::as_slice).unwrap_or(&[]);
                entries
                    .iter()
                    .zip(keys)
                    .filter(move |(_, k)| k.split(' ').any(|k| k == key))
                    .map(|(e, _)| e)
            })
    }

    /// Messages in the segment.
    pub(crate) fn len(&self) -> usize {
        self.queues.values().map(Vec::len).sum()
    }

    /// About the memory it takes, for the read cache's budget.
    pub(crate) fn weight(&self) -> u64 {
        self.queues
            .iter()
            .map(|((t, _), e)| 64 + t.len() + e.len() * std::mem::size_of::<IndexEntry>())
            .sum::<usize>() as u64
            + self
                .keys
                .values()
                .flatten()
                .map(|k| k.len() + std::mem::size_of::<String>())
                .sum::<usize>() as u64
    }

    /// First and end (last + 1) queue offset of each queue.
    pub(crate) fn ranges(&self) -> Vec<(String, i32, i64, i64)> {
        self.queues
            .iter()
            .filter_map(|((t, q), e)| {
                let first = e.first()?.queue_offset;
                let last = e.last()?.queue_offset;
                Some((t.clone(), *q, first, last + 1))
            })
            .collect()
    }

    /// Entries of a queue from `offset` on.
    pub(crate) fn entries_from(&self, topic: &str, queue_id: i32, offset: i64) -> &[IndexEntry] {
        let Some(e) = self.queues.get(&(topic.to_owned(), queue_id)) else {
            return &[];
        };
        let from = e.partition_point(|x| x.queue_offset < offset);
        &e[from..]
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + self.len() * ENTRY_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.base.to_be_bytes());
        out.extend_from_slice(&self.data_len.to_be_bytes());
        out.extend_from_slice(&(self.queues.len() as u32).to_be_bytes());
        for ((topic, qid), entries) in &self.queues {
            out.extend_from_slice(&(topic.len() as u16).to_be_bytes());
            out.extend_from_slice(topic.as_bytes());
            out.extend_from_slice(&qid.to_be_bytes());
            out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
            for e in entries {
                out.extend_from_slice(&e.queue_offset.to_be_bytes());
                out.extend_from_slice(&e.phy.to_be_bytes());
                out.extend_from_slice(&e.size.to_be_bytes());
                out.extend_from_slice(&e.tags_code.to_be_bytes());
                out.extend_from_slice(&e.store_timestamp.to_be_bytes());
            }
            let keys = self.keys.get(&(topic.clone(), *qid));
            for i in 0..entries.len() {
                let k = keys.and_then(|k| k.get(i)).map_or("", String::as_str);
                out.extend_from_slice(&(k.len() as u16).to_be_bytes());
                out.extend_from_slice(k.as_bytes());
            }
        }
        out
    }

    pub(crate) fn decode(mut buf: &[u8]) -> Result<Self, TierError> {
        let b = &mut buf;
        let with_keys = match take(b, 4, "magic")? {
            m if m == MAGIC => true,
            m if m == MAGIC_NO_KEYS => false,
            _ => {
                return Err(TierError::Corrupt {
                    what: "queue index".to_owned(),
                    reason: "bad magic".to_owned(),
                })
            }
        };
        let base = i64_of(take(b, 8, "header")?);
        let data_len = i64_of(take(b, 8, "header")?) as u64;
        let queues = i32_of(take(b, 4, "header")?) as u32;
        let mut index = SegmentIndex {
            base,
            data_len,
            queues: BTreeMap::new(),
            keys: BTreeMap::new(),
        };
        for _ in 0..queues {
            let h = take(b, 2, "topic")?;
            let len = u16::from_be_bytes([h[0], h[1]]) as usize;
            let topic = std::str::from_utf8(take(b, len, "topic")?)
                .map_err(|_| TierError::Corrupt {
                    what: "queue index".to_owned(),
                    reason: "topic is not UTF-8".to_owned(),
                })?
                .to_owned();
            let qid = i32_of(take(b, 4, "queue id")?);
            let n = i32_of(take(b, 4, "entry count")?) as u32 as usize;
            let raw = take(b, n.saturating_mul(ENTRY_LEN), "entries")?;
            let entries: Vec<IndexEntry> = raw
                .chunks_exact(ENTRY_LEN)
                .map(|e| IndexEntry {
                    queue_offset: i64_of(&e[0..]),
                    phy: i64_of(&e[8..]),
                    size: i32_of(&e[16..]),
                    tags_code: i64_of(&e[20..]),
                    store_timestamp: i64_of(&e[28..]),
                })
                .collect();
            let mut keys = Vec::with_capacity(entries.len());
            for _ in 0..entries.len() {
                if !with_keys {
                    keys.push(String::new());
                    continue;
                }
                let h = take(b, 2, "keys")?;
                let len = u16::from_be_bytes([h[0], h[1]]) as usize;
                keys.push(String::from_utf8_lossy(take(b, len, "keys")?).into_owned());
            }
            index.keys.insert((topic.clone(), qid), keys);
            index.queues.insert((topic, qid), entries);
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_truncation() {
        let mut index = SegmentIndex::new(4096);
        index.data_len = 1234;
        for (i, q) in [(0, 1), (1, 1), (2, 0)] {
            index.push(
                "TopicA",
                q,
                IndexEntry {
                    queue_offset: i,
                    phy: 4096 + i * 100,
                    size: 100,
                    tags_code: -7,
                    store_timestamp: 1_700_000_000_000 + i,
                },
                &format!("UNIQ{i} order-{i} shared"),
            );
        }
        let bytes = index.encode();
        assert_eq!(SegmentIndex::decode(&bytes).unwrap(), index);
        assert_eq!(index.entries_from("TopicA", 1, 1).len(), 1);
        assert_eq!(index.ranges()[1], ("TopicA".to_owned(), 1, 0, 2));
        assert_eq!(index.with_key("TopicA", "order-1").count(), 1);
        assert_eq!(index.with_key("TopicA", "shared").count(), 3);
        assert_eq!(index.with_key("TopicA", "order").count(), 0);
        assert_eq!(index.with_key("TopicB", "shared").count(), 0);
        for cut in [0, 3, 20, bytes.len() - 1] {
            assert!(SegmentIndex::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
