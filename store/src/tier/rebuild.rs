//! The record of what the tier holds, rebuilt from the tier itself: a broker that lost
//! its disk (or only `tier/segments.json`) lists its objects, keeps each segment whose
//! data and queue index agree, and records it as an upload would.
//!
//! * [`continue_after_tier`], at open, before any put, for a store without local
//!   commitlog data: the tier is listed (the open fails if it cannot be, rather than
//!   hand out offsets the tier may already hold), its segments are recorded, and the
//!   commitlog and every queue the tier holds continue after the tier's offsets.
//! * [`catch_up`], on thread `store-tier` before its first upload, for a store with
//!   local data: segments newer than the record (all, when there is none) are added,
//!   those that end within the local commitlog.
//!
//! A segment is recorded only when its data object exists, its queue index decodes,
//! and the index names the same commitlog offset and the data object's exact size:
//! an upload cut short, an object truncated or deleted by hand, or an index without
//! its data is logged and left out (and left in the tier).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use vostok_remoting::support::sync::RwLockExt;

use super::{index_key, SegmentIndex, SegmentMeta, Tier, TierError};
use crate::error::{Result, StoreError};
use crate::store_inner::StoreInner;

/// Objects of one kind listed at most: past it the listing is refused (a bound on the
/// memory a start-up takes; 1 GiB segments would hold about a petabyte).
const MAX_OBJECTS: usize = 1_000_000;

/// What a listing found: the whole segments, oldest first, and how many objects were
/// left out. Objects left out still hold offsets once handed out: `data_end` and
/// `queue_ends` cover them too, as far as they tell (a store continuing after the tier
/// must not give those offsets again).
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) segments: Vec<SegmentMeta>,
    pub(crate) ignored: usize,
    /// Past the last byte of any segment object seen, whole or not (at least one byte
    /// past its base).
    pub(crate) data_end: i64,
    /// Per queue, the end queue offset of any queue index seen, whole segment or not.
    pub(crate) queue_ends: HashMap<(String, i32), i64>,
}

impl Found {
    fn saw_index(&mut self, index: &SegmentIndex) {
        self.data_end = self
            .data_end
            .max(index.base.saturating_add(index.data_len.max(1) as i64));
        for (topic, qid, _, end) in index.ranges() {
            let at = self.queue_ends.entry((topic, qid)).or_default();
            *at = (*at).max(end);
        }
    }
}

/// The queue index of segment `base`, if it is there and whole.
fn fetch_index(tier: &Tier, base: i64) -> Option<SegmentIndex> {
    let raw = tier.backend.get(&index_key(base)).ok()?;
    SegmentIndex::decode(&raw).ok()
}

/// The commitlog offset a key of `dir` names (`commitlog/00000000000000004096`).
fn base_of(key: &str, dir: &str) -> Option<i64> {
    let name = key.strip_prefix(dir)?.strip_prefix('/')?;
    if name.len() != 20 || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// Lists the tier and checks every segment whose base `wanted` accepts; the queues of
/// topics `hidden` (deleted topics) are left out of what is returned.
pub(crate) fn scan_tier(
    tier: &Tier,
    wanted: impl Fn(i64) -> bool,
    hidden: impl Fn(&str, i64) -> bool,
) -> std::result::Result<Found, TierError> {
    let mut found = Found::default();
    let mut data = BTreeMap::new();
    for (key, size) in tier.backend.list("commitlog", MAX_OBJECTS)? {
        match base_of(&key, "commitlog") {
            Some(base) => {
                data.insert(base, size);
            }
            None => {
                tracing::warn!(key = %key, "an object in the tier that is no segment; ignored");
                found.ignored += 1;
            }
        }
    }
    let mut indexes = BTreeSet::new();
    for (key, _) in tier.backend.list("index", MAX_OBJECTS)? {
        match base_of(&key, "index") {
            Some(base) if data.contains_key(&base) => {
                indexes.insert(base);
            }
            Some(base) if wanted(base) => {
                tracing::warn!(key = %key, "a queue index in the tier without its segment data; ignored");
                found.ignored += 1;
                if let Some(index) = fetch_index(tier, base) {
                    found.saw_index(&index);
                }
            }
            Some(_) => {}
            None => {
                tracing::warn!(key = %key, "an object in the tier that is no queue index; ignored");
                found.ignored += 1;
            }
        }
    }
    let mut end = i64::MIN;
    for (base, size) in data {
        if !wanted(base) {
            continue;
        }
        found.data_end = found.data_end.max(base.saturating_add(size.max(1) as i64));
        let ignore = |found: &mut Found, reason: &str| {
            tracing::warn!(
                base,
                data_bytes = size,
                reason,
                "a segment in the tier is not whole; it is not recorded, and stays in the tier"
            );
            found.ignored += 1;
        };
        if !indexes.contains(&base) {
            ignore(&mut found, "no queue index (an upload cut short?)");
            continue;
        }
        let raw = match tier.backend.get(&index_key(base)) {
            Ok(raw) => raw,
            Err(TierError::Store(object_store::Error::NotFound { .. })) => {
                ignore(&mut found, "its queue index went away");
                continue;
            }
            Err(e) => return Err(e),
        };
        let index = match SegmentIndex::decode(&raw) {
            Ok(index) => index,
            Err(e) => {
                ignore(&mut found, &format!("its queue index is damaged: {e}"));
                continue;
            }
        };
        found.saw_index(&index);
        if index.base != base {
            ignore(&mut found, &format!("its queue index is of {}", index.base));
            continue;
        }
        if index.data_len != size {
            let reason = format!("its queue index says {} bytes of data", index.data_len);
            ignore(&mut found, &reason);
            continue;
        }
        if base < end {
            ignore(&mut found, "it overlaps the segment before it");
            continue;
        }
        end = base.saturating_add(size as i64);
        let last = end - 1;
        let last_store_timestamp = index
            .queues
            .values()
            .flatten()
            .map(|e| e.store_timestamp)
            .max()
            .unwrap_or(0);
        let mut queues = index.ranges();
        queues.retain(|(t, ..)| !hidden(t, last));
        found.segments.push(SegmentMeta {
            base,
            size,
            last_store_timestamp,
            queues,
        });
    }
    Ok(found)
}

/// Adds `segments` to the record (those it does not hold yet), durably; returns how
/// many were added.
fn record(tier: &Tier, segments: Vec<SegmentMeta>) -> std::result::Result<usize, TierError> {
    let mut state = tier.state.write_locked();
    let before = state.segments.clone();
    let mut added = 0;
    for s in segments {
        if let std::collections::btree_map::Entry::Vacant(v) = state.segments.entry(s.base) {
            v.insert(s);
            added += 1;
        }
    }
    if added == 0 {
        return Ok(0);
    }
    if let Err(e) = tier.meta.save(&mut state) {
        state.segments = before;
        return Err(e);
    }
    drop(state);
    tier.notify_progress();
    Ok(added)
}

/// The base of the newest recorded segment, if any.
fn last_recorded(tier: &Tier) -> Option<i64> {
    tier.state
        .read_locked()
        .segments
        .keys()
        .next_back()
        .copied()
}

/// At open, after recovery and before any put. A store with no commitlog data (a new
/// disk) rebuilds the record from the tier, then continues after it: the commitlog at
/// the start of the file after the tier's last segment, each queue the tier holds at
/// the tier's end offset. The tier must answer: if it cannot be listed, the open
/// fails.
pub(crate) fn continue_after_tier(inner: &StoreInner, tier: &Tier) -> Result<()> {
    if !inner.commitlog.files().is_empty() {
        return Ok(());
    }
    let fail = |what: String| StoreError::Tier(what);
    let after = last_recorded(tier);
    let found = scan_tier(
        tier,
        |base| after.is_none_or(|a| base > a),
        |topic, phy| inner.tombstones.hides(topic, phy),
    )
    .map_err(|e| {
        fail(format!(
            "the store has no local commitlog and the tier could not be listed ({e}); \
             it would not know which offsets the tier already holds. Start again once \
             the object store answers"
        ))
    })?;
    let (listed, ignored) = (found.segments.len(), found.ignored);
    let (data_end, queue_ends) = (found.data_end, found.queue_ends);
    let added = record(tier, found.segments).map_err(|e| fail(e.to_string()))?;
    tier.listed
        .store(true, std::sync::atomic::Ordering::Release);
    let state = tier.state.read_locked();
    let end = state.data_end().unwrap_or(0).max(data_end);
    if end <= 0 {
        tracing::info!(ignored, "the tier holds no segment yet");
        return Ok(());
    }
    if inner.ha.replica.load(std::sync::atomic::Ordering::Acquire) {
        // A replica's offsets are its master's: it copies from where the master says.
        tracing::info!(
            segments = listed,
            recorded = added,
            ignored,
            "no local commitlog on a replica: the record of the tier is rebuilt from it"
        );
        return Ok(());
    }
    let file_size = inner.config.mapped_file_size_commit_log as i64;
    let next = end.saturating_add(file_size - 1) / file_size * file_size;
    let last_ts = state
        .segments
        .values()
        .map(|s| s.last_store_timestamp)
        .max()
        .unwrap_or(0);
    let mut table: HashMap<String, HashMap<i32, i64>> =
        inner.commitlog.lock_writer().queue_offsets.clone();
    let mut topics = BTreeSet::new();
    let ends = state.queue_ends().map(|(q, end)| (q.clone(), end));
    for ((topic, qid), end) in ends.chain(queue_ends) {
        let at = table
            .entry(topic.clone())
            .or_default()
            .entry(qid)
            .or_default();
        *at = (*at).max(end);
        topics.insert(topic);
    }
    drop(state);
    // Queues left without a commitlog hold no entry since recovery; a queue the tier
    // holds starts again, empty, at the tier's end.
    for topic in inner.queues.topics() {
        if topics.contains(&topic) {
            inner.queues.delete_topic(&topic)?;
        }
    }
    inner.commitlog.set_recovered_end(next, last_ts, table);
    inner.dispatch.set_reput_from(next);
    tracing::info!(
        segments = listed,
        recorded = added,
        ignored,
        next_offset = next,
        queues = topics.len(),
        "no local commitlog: the record of the tier is rebuilt from it, and offsets continue after it"
    );
    Ok(())
}

/// On thread `store-tier`, before its first upload, for a store with local data:
/// records the tier's whole segments newer than the record (every one, when the record
/// is empty) that end within the local commitlog. A segment past the local commitlog's
/// end is logged and left out: its offsets are this store's to write again.
pub(crate) fn catch_up(inner: &StoreInner, tier: &Tier) -> std::result::Result<usize, TierError> {
    if tier.listed.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(0);
    }
    let after = last_recorded(tier);
    let local_end = inner.commitlog.max_offset();
    let found = scan_tier(
        tier,
        |base| after.is_none_or(|a| base > a),
        |topic, phy| inner.tombstones.hides(topic, phy),
    )?;
    let (mut within, mut past) = (Vec::new(), 0);
    for s in found.segments {
        if s.base.saturating_add(s.size as i64) <= local_end {
            within.push(s);
        } else {
            tracing::error!(
                base = s.base,
                local_end,
                "the tier holds a segment past the end of the local commitlog (a local disk \
                 older than the tier?); it is not recorded, and an upload of the same offsets \
                 replaces it"
            );
            past += 1;
        }
    }
    let added = record(tier, within)?;
    tier.listed
        .store(true, std::sync::atomic::Ordering::Release);
    if added > 0 || found.ignored > 0 || past > 0 {
        tracing::info!(
            recorded = added,
            ignored = found.ignored,
            past_local_end = past,
            "segments found in the tier and missing from its record"
        );
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_segment_names_are_read() {
        assert_eq!(
            base_of("commitlog/00000000000000004096", "commitlog"),
            Some(4096)
        );
        assert_eq!(base_of("index/00000000000000004096", "commitlog"), None);
        assert_eq!(base_of("commitlog/0000000000000000409", "commitlog"), None);
        assert_eq!(base_of("commitlog/0000000000000000409x", "commitlog"), None);
        assert_eq!(
            base_of("commitlog/00000000000000004096#1", "commitlog"),
            None
        );
    }
}
