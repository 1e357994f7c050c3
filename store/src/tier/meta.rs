//! What the tier holds, recorded durably (`<storePathRootDir>/tier/segments.json`,
//! written to a temporary file, fsynced and renamed over the old one). A segment is
//! recorded only once its data and queue index are both in the tier; at start the
//! uploader checks the tier for any sealed file not recorded, so a crash between the
//! upload and the record neither loses the segment nor uploads it twice.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::backend::TierError;

/// One uploaded segment: a whole local commitlog file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SegmentMeta {
    /// Commitlog offset of its first byte (its file name).
    pub(crate) base: i64,
    /// Bytes of record data uploaded.
    pub(crate) size: u64,
    /// Store time of its newest message (0: none); tier retention counts from it.
    pub(crate) last_store_timestamp: i64,
    /// Per queue: topic, queue id, first queue offset, end queue offset.
    pub(crate) queues: Vec<(String, i32, i64, i64)>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct MetaFile {
    version: u32,
    segments: Vec<SegmentMeta>,
}

/// The recorded segments and, derived from them, where each queue's offsets are.
#[derive(Debug, Default)]
pub(crate) struct TierState {
    pub(crate) segments: BTreeMap<i64, SegmentMeta>,
    /// (topic, queue id) → first queue offset → (end queue offset, segment base).
    queues: HashMap<(String, i32), BTreeMap<i64, (i64, i64)>>,
}

impl TierState {
    fn rebuild(&mut self) {
        self.queues.clear();
        for s in self.segments.values() {
            for (topic, qid, first, end) in &s.queues {
                self.queues
                    .entry((topic.clone(), *qid))
                    .or_default()
                    .insert(*first, (*end, s.base));
            }
        }
    }

    /// The segment holding `offset` of a queue, or the first one after it (a gap
    /// left by expired segments): `(segment base, first offset there)`.
    pub(crate) fn segment_for(&self, topic: &str, qid: i32, offset: i64) -> Option<(i64, i64)> {
        let ranges = self.queues.get(&(topic.to_owned(), qid))?;
        if let Some((_, (end, base))) = ranges.range(..=offset).next_back() {
            if offset < *end {
                return Some((*base, offset));
            }
        }
        ranges
            .range(offset + 1..)
            .next()
            .map(|(first, (_, base))| (*base, *first))
    }

    /// The segments holding a queue, oldest first: segment base and the store time of
    /// the segment's newest message.
    pub(crate) fn queue_segments(&self, topic: &str, qid: i32) -> Vec<(i64, i64)> {
        let Some(ranges) = self.queues.get(&(topic.to_owned(), qid)) else {
            return Vec::new();
        };
        ranges
            .values()
            .filter_map(|(_, base)| {
                let s = self.segments.get(base)?;
                Some((*base, s.last_store_timestamp))
            })
            .collect()
    }

    /// Every queue the tier holds, with its end queue offset.
    pub(crate) fn queue_ends(&self) -> impl Iterator<Item = (&(String, i32), i64)> + '_ {
        self.queues
            .iter()
            .filter_map(|(q, ranges)| Some((q, ranges.values().map(|(end, _)| *end).max()?)))
    }

    /// The commitlog offset past the last byte the tier holds, if it holds any.
    pub(crate) fn data_end(&self) -> Option<i64> {
        self.segments
            .values()
            .map(|s| s.base.saturating_add(s.size as i64))
            .max()
    }

    /// The smallest and the end queue offset the tier holds for a queue.
    pub(crate) fn queue_range(&self, topic: &str, qid: i32) -> Option<(i64, i64)> {
        let ranges = self.queues.get(&(topic.to_owned(), qid))?;
        let min = *ranges.keys().next()?;
        let end = ranges.values().map(|(end, _)| *end).max()?;
        Some((min, end))
    }
}

/// The durable record.
pub(crate) struct TierMeta {
    path: PathBuf,
}

impl TierMeta {
    pub(crate) fn new(root: &Path) -> Self {
        TierMeta {
            path: root.join("tier").join("segments.json"),
        }
    }

    pub(crate) fn load(&self) -> Result<TierState, TierError> {
        let mut state = TierState::default();
        let text = match std::fs::read(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(state),
            Err(source) => {
                return Err(TierError::Io {
                    op: "read",
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let file: MetaFile = serde_json::from_slice(&text).map_err(|e| TierError::Corrupt {
            what: self.path.display().to_string(),
            reason: e.to_string(),
        })?;
        state.segments = file.segments.into_iter().map(|s| (s.base, s)).collect();
        state.rebuild();
        Ok(state)
    }

    /// Writes `state`'s segments atomically and durably, then refreshes its lookups.
    pub(crate) fn save(&self, state: &mut TierState) -> Result<(), TierError> {
        state.rebuild();
        let file = MetaFile {
            version: 1,
            segments: state.segments.values().cloned().collect(),
        };
        let io = |op, path: &Path, source| TierError::Io {
            op,
            path: path.to_path_buf(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| io("create directory", dir, e))?;
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_vec(&file).map_err(|e| TierError::Corrupt {
            what: self.path.display().to_string(),
            reason: e.to_string(),
        })?;
        let mut f = std::fs::File::create(&tmp).map_err(|e| io("create", &tmp, e))?;
        f.write_all(&text).map_err(|e| io("write", &tmp, e))?;
        f.sync_all().map_err(|e| io("fsync", &tmp, e))?;
        drop(f);
        std::fs::rename(&tmp, &self.path).map_err(|e| io("rename", &tmp, e))?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("fsync", dir, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64, queues: Vec<(String, i32, i64, i64)>) -> SegmentMeta {
        SegmentMeta {
            base,
            size: 100,
            last_store_timestamp: 1,
            queues,
        }
    }

    #[test]
    fn saves_atomically_and_finds_queue_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let meta = TierMeta::new(dir.path());
        let mut state = meta.load().unwrap();
        assert!(state.segments.is_empty());
        state
            .segments
            .insert(0, seg(0, vec![("T".into(), 0, 0, 10)]));
        state
            .segments
            .insert(1000, seg(1000, vec![("T".into(), 0, 10, 25)]));
        meta.save(&mut state).unwrap();
        let back = meta.load().unwrap();
        assert_eq!(back.segments, state.segments);
        assert_eq!(back.segment_for("T", 0, 9), Some((0, 9)));
        assert_eq!(back.segment_for("T", 0, 10), Some((1000, 10)));
        assert_eq!(back.segment_for("T", 0, 25), None);
        assert_eq!(back.queue_range("T", 0), Some((0, 25)));
        assert_eq!(back.data_end(), Some(1100));
        let ends: Vec<_> = back.queue_ends().collect();
        assert_eq!(ends, vec![(&("T".to_owned(), 0), 25)]);
        assert!(!dir.path().join("tier/segments.json.tmp").exists());
    }
}
