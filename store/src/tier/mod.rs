//! Tiered storage (docs/tiered-storage.md): a second tier behind the local store, in
//! an object store (S3-compatible, a directory, or memory).
//!
//! | part | role |
//! |---|---|
//! | `config` | the keys (Apache's names where Apache has them) |
//! | `backend` | the object store, behind a small blocking trait |
//! | `segment` | a segment's queue index (consume-queue entries of its messages) |
//! | `meta` | the durable record of uploaded segments |
//! | `rebuild` | the record rebuilt from the tier (a lost disk); offsets continuing after the tier |
//! | `upload` | thread `store-tier`: uploads sealed commitlog files, expires old segments |
//! | `cache` | the bounded read cache |
//! | `budget` | the I/O budget of reads: threads `store-tier-read`, reads in flight, bytes a second |
//! | `stats` | the tier's counters and the snapshot of its state (`TierStatus`) |
//! | this module | the tier's state and the read side, with its bounded cache |
//!
//! A tier segment is one sealed local commitlog file (its record data), stored as
//! `commitlog/<offset>`, with its queue index as `index/<offset>`. Reads that the local
//! store can no longer answer (`MessageStore::get_message`) come here.

pub mod backend;
mod budget;
mod cache;
pub mod config;
mod meta;
pub(crate) mod rebuild;
mod segment;
mod stats;
pub(crate) mod upload;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

pub use backend::{TierBackend, TierError};
pub use config::{StorageLevel, TierConfig, TierProvider};
pub(crate) use meta::{SegmentMeta, TierMeta, TierState};
pub(crate) use segment::{IndexEntry, SegmentIndex};
pub use stats::{TierStats, TierStatus, READ_LATENCY_BOUNDS_MS};

use crate::mapped_file::offset_file_name;
use budget::{ReadBudget, Readers};
use cache::{Cache, CacheKey, Cached};
use stats::bump;

pub(crate) fn data_key(base: i64) -> String {
    format!("commitlog/{}", offset_file_name(base))
}

pub(crate) fn index_key(base: i64) -> String {
    format!("index/{}", offset_file_name(base))
}

/// The most tier segments a query by key reads (newest first).
pub const KEY_QUERY_MAX_SEGMENTS: usize = 256;

/// The tier: its backend, what it holds, and the read cache.
pub(crate) struct Tier {
    pub(crate) config: TierConfig,
    pub(crate) backend: Box<dyn TierBackend>,
    pub(crate) meta: TierMeta,
    pub(crate) state: RwLock<TierState>,
    cache: Mutex<Cache>,
    /// Cache keys being read from the object store, and a wake-up when one is done.
    loading: (Mutex<HashSet<CacheKey>>, Condvar),
    pub(crate) stats: TierStats,
    /// Expired local files already warned about for not being uploaded yet.
    pub(crate) warned: Mutex<HashSet<i64>>,
    /// Bumped whenever the recorded segments change.
    progress: (Mutex<u64>, Condvar),
    /// Whether the tier has been listed since the start (`rebuild`).
    pub(crate) listed: std::sync::atomic::AtomicBool,
    /// Object-store reads in flight and their pace.
    budget: ReadBudget,
    /// The threads that serve reads of cold data.
    readers: Readers,
}

impl Tier {
    pub(crate) fn open(
        config: TierConfig,
        root: &std::path::Path,
        backend: Box<dyn TierBackend>,
    ) -> Result<Self, TierError> {
        let meta = TierMeta::new(root);
        let state = meta.load()?;
        tracing::info!(
            backend = %backend.describe(),
            segments = state.segments.len(),
            "tiered storage on"
        );
        let budget = ReadBudget::new(config.read_concurrency, config.read_bandwidth);
        let readers = Readers::start(
            config.read_concurrency,
            config.max_pending_limit,
            config.read_timeout,
        )?;
        Ok(Tier {
            budget,
            readers,
            config,
            backend,
            meta,
            state: RwLock::new(state),
            cache: Mutex::new(Cache::default()),
            loading: (Mutex::new(HashSet::new()), Condvar::new()),
            stats: TierStats::default(),
            warned: Mutex::new(HashSet::new()),
            progress: (Mutex::new(0), Condvar::new()),
            listed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The store is shutting down: uploads and reads waiting give up.
    pub(crate) fn stop(&self) {
        self.backend.stop();
        self.budget.stop();
    }

    pub(crate) fn notify_progress(&self) {
        *self.progress.0.locked() += 1;
        self.progress.1.notify_all();
    }

    /// Waits until `done` holds for the tier's status, re-checking whenever the
    /// recorded segments change; `false` on timeout.
    pub(crate) fn wait_for(&self, timeout: Duration, done: impl Fn(&TierStatus) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut seen = self.progress.0.locked();
        loop {
            if done(&self.status()) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            seen = match self.progress.1.wait_timeout(seen, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// The tier the store configuration turns on, if any.
    pub(crate) fn open_configured(
        c: &crate::config::StoreConfig,
    ) -> crate::error::Result<Option<Arc<Tier>>> {
        if !c.tier.enabled() {
            return Ok(None);
        }
        let fail = |e: TierError| crate::error::StoreError::Tier(e.to_string());
        let backend = backend::ObjectBackend::from_config(&c.tier).map_err(fail)?;
        let tier =
            Tier::open(c.tier.clone(), &c.store_path_root_dir, Box::new(backend)).map_err(fail)?;
        Ok(Some(Arc::new(tier)))
    }

    /// Whether reads may come here.
    pub(crate) fn serves_reads(&self) -> bool {
        self.config.storage_level != StorageLevel::Disable
    }

    /// Whether the local commitlog file starting at `base` is in the tier.
    pub(crate) fn holds(&self, base: i64) -> bool {
        self.state.read_locked().segments.contains_key(&base)
    }

    /// The tier's first and end queue offset of a queue.
    pub(crate) fn queue_range(&self, topic: &str, qid: i32) -> Option<(i64, i64)> {
        self.state.read_locked().queue_range(topic, qid)
    }

    pub(crate) fn status(&self) -> TierStatus {
        let s = self.state.read_locked();
        let st = &self.stats;
        TierStatus {
            segments: s.segments.len(),
            min_offset: s.segments.keys().next().copied(),
            last_segment: s.segments.keys().next_back().copied(),
            segments_uploaded: st.segments_uploaded.load(Ordering::Relaxed),
            bytes_uploaded: st.bytes_uploaded.load(Ordering::Relaxed),
            upload_failures: st.upload_failures.load(Ordering::Relaxed),
            segments_expired: st.segments_expired.load(Ordering::Relaxed),
            reads: st.reads.load(Ordering::Relaxed),
            cache_hits: st.cache_hits.load(Ordering::Relaxed),
            cache_misses: st.cache_misses.load(Ordering::Relaxed),
            cache_bytes: self.cache.locked().bytes,
            failing: st.failing.load(Ordering::Relaxed),
            object_reads: st.object_reads.load(Ordering::Relaxed),
            object_read_bytes: st.object_read_bytes.load(Ordering::Relaxed),
            object_read_failures: st.object_read_failures.load(Ordering::Relaxed),
            read_latency_buckets: st
                .read_latency_buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            read_latency_micros: st.read_latency_micros.load(Ordering::Relaxed),
            reads_pending: self.readers.pending() as u64,
            reads_over_budget: self.budget.timeouts.load(Ordering::Relaxed)
                + self.readers.refused.load(Ordering::Relaxed),
            upload_lag_bytes: 0,
            upload_lag_ms: 0,
            backend: self.backend.describe(),
            last_upload_ms: st.last_upload_ms.load(Ordering::Relaxed),
            last_upload_error: st.last_upload_error.locked().clone(),
        }
    }

    /// When a read of the tier that starts now must be done: `tieredStoreReadTimeout`
    /// from now. A request makes one and passes it to every object it reads, so that
    /// a pull or a query that needs several objects waits for all of them within one
    /// read timeout, not one each.
    pub(crate) fn deadline(&self) -> Instant {
        Instant::now() + self.config.read_timeout
    }

    /// At most `limit` queue entries from `offset`: those of the segment holding it (or
    /// of the next segment with the queue, when `offset` fell in a gap), with the
    /// segment's base.
    pub(crate) fn entries_from(
        &self,
        topic: &str,
        qid: i32,
        offset: i64,
        limit: usize,
        deadline: Instant,
    ) -> Result<Option<(i64, Vec<IndexEntry>)>, TierError> {
        let Some((base, from)) = self.state.read_locked().segment_for(topic, qid, offset) else {
            return Ok(None);
        };
        let index = self.index(base, deadline)?;
        let entries = index.entries_from(topic, qid, from);
        Ok(Some((base, entries[..entries.len().min(limit)].to_vec())))
    }

    /// The queue offset of the first message of a queue the tier holds that was stored
    /// at or after `timestamp_ms`; `None` when every one is older.
    pub(crate) fn offset_by_time(
        &self,
        topic: &str,
        qid: i32,
        timestamp_ms: i64,
        deadline: Instant,
    ) -> Result<Option<i64>, TierError> {
        let segments = self.state.read_locked().queue_segments(topic, qid);
        for (base, newest) in segments {
            if newest < timestamp_ms {
                continue; // every message in it is older
            }
            let index = self.index(base, deadline)?;
            let found = index
                .entries_from(topic, qid, i64::MIN)
                .iter()
                .find(|e| e.store_timestamp >= timestamp_ms);
            if let Some(e) = found {
                return Ok(Some(e.queue_offset));
            }
        }
        Ok(None)
    }

    /// The whole record starting at commitlog offset `phy`, from the segment holding it.
    pub(crate) fn read_record(
        &self,
        phy: i64,
        deadline: Instant,
    ) -> Result<Option<Bytes>, TierError> {
        let Some((base, size)) = self
            .state
            .read_locked()
            .segments
            .range(..=phy)
            .next_back()
            .map(|(b, s)| (*b, s.size))
        else {
            return Ok(None);
        };
        if phy + 4 > base + size as i64 {
            return Ok(None);
        }
        let head = self.read(base, phy, 4, deadline)?;
        let total = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        if total <= 4 || phy + total as i64 > base + size as i64 {
            return Ok(None);
        }
        self.read(base, phy, total as usize, deadline).map(Some)
    }

    /// Up to `max` messages of `topic` with `key` among their keys (`UNIQ_KEY`,
    /// `KEYS`) stored within `begin_ms..=end_ms`, newest first: segment base and entry.
    /// Only the segments below commitlog offset `below` (those the local index no
    /// longer covers) that may hold that time span are read, at most
    /// [`KEY_QUERY_MAX_SEGMENTS`] of them, newest first.
    pub(crate) fn find_by_key(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        (begin_ms, end_ms): (i64, i64),
        below: i64,
        deadline: Instant,
    ) -> Result<Vec<(i64, IndexEntry)>, TierError> {
        let candidates: Vec<i64> = {
            let state = self.state.read_locked();
            // A segment's messages are newer than the previous segment's newest.
            let mut older_than = i64::MIN;
            let mut out = Vec::new();
            for s in state.segments.values() {
                let lower = older_than;
                older_than = s.last_store_timestamp;
                if s.base < below
                    && s.last_store_timestamp >= begin_ms
                    && lower <= end_ms
                    && s.queues.iter().any(|(t, ..)| t == topic)
                {
                    out.push(s.base);
                }
            }
            out
        };
        let mut found = Vec::new();
        if candidates.len() > KEY_QUERY_MAX_SEGMENTS {
            tracing::debug!(
                topic,
                segments = candidates.len(),
                "a query by key reads only the newest tier segments of its time span"
            );
        }
        for base in candidates.into_iter().rev().take(KEY_QUERY_MAX_SEGMENTS) {
            let index = self.index(base, deadline)?;
            let mut here: Vec<IndexEntry> = index
                .with_key(topic, key)
                .filter(|e| (begin_ms..=end_ms).contains(&e.store_timestamp))
                .copied()
                .collect();
            here.sort_by_key(|e| std::cmp::Reverse(e.phy));
            found.extend(here.into_iter().map(|e| (base, e)));
            if found.len() >= max {
                found.truncate(max);
                break;
            }
        }
        Ok(found)
    }

    fn index(&self, base: i64, deadline: Instant) -> Result<Arc<SegmentIndex>, TierError> {
        let (cached, _) = self.cached_or_load(CacheKey::Index(base), deadline, || {
            // Its size is known once read: charged to the pace then.
            let permit = self.budget.acquire(0, deadline, self.config.read_timeout)?;
            let started = Instant::now();
            let raw = self.backend.get(&index_key(base));
            self.stats.object_read(
                started.elapsed(),
                raw.as_ref().ok().map(|r: &Bytes| r.len()),
            );
            let raw = raw?;
            permit.charge(raw.len() as u64);
            drop(permit);
            let index = SegmentIndex::decode(&raw)?;
            let weight = index.weight();
            Ok((Cached::Index(Arc::new(index)), weight))
        })?;
        match cached {
            Cached::Index(i) => Ok(i),
            Cached::Block(_) => Err(mixed_up(base)),
        }
    }

    /// The cached value of `key`, or else `load`ed into the cache, once: a reader
    /// that finds another loading the same key waits for it (until `deadline`)
    /// rather than reading it again. With whether it was a cache hit.
    fn cached_or_load(
        &self,
        key: CacheKey,
        deadline: Instant,
        load: impl FnOnce() -> Result<(Cached, u64), TierError>,
    ) -> Result<(Cached, bool), TierError> {
        let timeout = self.config.read_timeout;
        let (loading, loaded) = &self.loading;
        let mut l = loading.locked();
        loop {
            if let Some(v) = self.cache.locked().get(&key) {
                return Ok((v, true));
            }
            if !l.contains(&key) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(TierError::Busy(timeout));
            }
            l = match loaded.wait_timeout(l, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        l.insert(key.clone());
        drop(l);
        let r = load();
        if let Ok((v, weight)) = &r {
            self.cache.locked().put(
                key.clone(),
                v.clone(),
                *weight,
                self.config.read_cache_max_size,
            );
        }
        loading.locked().remove(&key);
        loaded.notify_all();
        r.map(|(v, _)| (v, false))
    }

    /// The `size` bytes at commitlog offset `phy` of the segment at `base`, read in
    /// blocks of `tieredStoreReadBlockSize` (the whole segment when it is smaller)
    /// through the cache, every block by `deadline`.
    pub(crate) fn read(
        &self,
        base: i64,
        phy: i64,
        size: usize,
        deadline: Instant,
    ) -> Result<Bytes, TierError> {
        bump(&self.stats.reads);
        let seg_size = self
            .state
            .read_locked()
            .segments
            .get(&base)
            .map(|m| m.size)
            .ok_or_else(|| TierError::Corrupt {
                what: data_key(base),
                reason: "no longer in the tier".to_owned(),
            })?;
        let block = self.config.read_block_size.max(1);
        let from = (phy - base) as u64;
        let to = from + size as u64;
        if to > seg_size {
            return Err(TierError::Corrupt {
                what: data_key(base),
                reason: format!("record at {phy} ends past the segment's {seg_size} bytes"),
            });
        }
        let (first, last) = (from / block, (to - 1) / block);
        if first == last {
            let b = self.block(base, first, (block, seg_size), deadline)?;
            let at = (from - first * block) as usize;
            return Ok(b.slice(at..at + size));
        }
        let mut out = BytesMut::with_capacity(size);
        for n in first..=last {
            let b = self.block(base, n, (block, seg_size), deadline)?;
            let start = from.max(n * block) - n * block;
            let end = to.min((n + 1) * block) - n * block;
            out.extend_from_slice(&b[start as usize..end as usize]);
        }
        Ok(out.freeze())
    }

    fn block(
        &self,
        base: i64,
        n: u64,
        (block, seg_size): (u64, u64),
        deadline: Instant,
    ) -> Result<Bytes, TierError> {
        let (cached, hit) = self.cached_or_load(CacheKey::Block(base, n), deadline, || {
            let range = n * block..((n + 1) * block).min(seg_size);
            let want = range.end - range.start;
            let permit = self
                .budget
                .acquire(want, deadline, self.config.read_timeout)?;
            let started = Instant::now();
            let b = self.backend.get_range(&data_key(base), range);
            drop(permit);
            self.stats
                .object_read(started.elapsed(), b.as_ref().ok().map(|r: &Bytes| r.len()));
            let b = b?;
            if b.len() as u64 != want {
                return Err(TierError::Corrupt {
                    what: data_key(base),
                    reason: format!("read {} bytes where {want} were asked", b.len()),
                });
            }
            Ok((Cached::Block(b), want))
        })?;
        bump(if hit {
            &self.stats.cache_hits
        } else {
            &self.stats.cache_misses
        });
        match cached {
            Cached::Block(b) => Ok(b),
            Cached::Index(_) => Err(mixed_up(base)),
        }
    }

    /// Forgets the queues of `topic` in every segment that ends at or before commitlog
    /// offset `end` (the topic's deletion point): the tier no longer serves them, and a
    /// topic re-created with the same name starts afresh. Their bytes stay in the
    /// segments' objects, unread, until those expire; a segment left without any queue
    /// goes at once (`upload::expire`). Returns the segments changed.
    pub(crate) fn forget_topic(&self, topic: &str, end: i64) -> Result<usize, TierError> {
        let mut state = self.state.write_locked();
        let before = state.segments.clone();
        let mut changed = 0;
        for s in state.segments.values_mut() {
            if s.base.saturating_add(s.size as i64) > end {
                continue;
            }
            let n = s.queues.len();
            s.queues.retain(|(t, ..)| t != topic);
            if s.queues.len() != n {
                changed += 1;
            }
        }
        if changed == 0 {
            return Ok(0);
        }
        if let Err(e) = self.meta.save(&mut state) {
            state.segments = before;
            return Err(e);
        }
        drop(state);
        tracing::info!(
            topic,
            segments = changed,
            "deleted topic forgotten by the tier"
        );
        self.notify_progress();
        Ok(changed)
    }

    /// Runs `f` on the threads that serve reads of cold data; `None` when more than
    /// `tieredStoreMaxPendingLimit` reads wait, or `f` waited past
    /// `tieredStoreReadTimeout` for a thread (it never runs then).
    pub(crate) fn on_readers<T, F>(&self, f: F) -> impl std::future::Future<Output = Option<T>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.readers.run(f)
    }

    pub(crate) fn forget_cached(&self, base: i64) {
        self.cache.locked().forget(base);
    }
}

/// A cache entry of the other kind than its key says: never stored so.
fn mixed_up(base: i64) -> TierError {
    TierError::Corrupt {
        what: data_key(base),
        reason: "the read cache holds another kind of entry".to_owned(),
    }
}
