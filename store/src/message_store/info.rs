//! `runtime_info`: counters and positions for the broker's admin commands.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::time::now_millis;

use super::MessageStore;
use crate::stats::Stats;

impl MessageStore {
    /// Counters and positions, with RocketMQ's `getRuntimeInfo` key names where one exists.
    pub fn runtime_info(&self) -> BTreeMap<String, String> {
        let i = &self.inner;
        let s = &i.stats;
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            m.insert(k.to_owned(), v);
        };
        put("putMessageTimesTotal", Stats::get(&s.put_times).to_string());
        put("putMessageSizeTotal", Stats::get(&s.put_bytes).to_string());
        put(
            "putMessageFailedTimes",
            Stats::get(&s.put_failed).to_string(),
        );
        put(
            "putMessageFlushTimeoutTimes",
            Stats::get(&s.flush_timeouts).to_string(),
        );
        put("getFoundTimes", Stats::get(&s.get_found).to_string());
        put("getMissTimes", Stats::get(&s.get_miss).to_string());
        put(
            "getTransferedMsgCount",
            Stats::get(&s.get_transferred).to_string(),
        );
        if let Some(pool) = i.commitlog.pool() {
            put(
                "commitLogWriteBufferCommits",
                pool.commits.load(Ordering::Relaxed).to_string(),
            );
            put(
                "commitLogWriteBufferUnitCommits",
                pool.unit_commits.load(Ordering::Relaxed).to_string(),
            );
            put(
                "commitLogWriteBufferWaits",
                pool.full_waits.load(Ordering::Relaxed).to_string(),
            );
        }
        put("commitLogMinOffset", i.commitlog.min_offset().to_string());
        put("commitLogMaxOffset", i.commitlog.max_offset().to_string());
        put(
            "commitLogFlushedOffset",
            i.commitlog.flushed_offset().to_string(),
        );
        put("commitLogFileCount", i.commitlog.files().len().to_string());
        put(
            "commitLogDiskRatio",
            format!(
                "{:.3}",
                i.state.disk_ratio_permille.load(Ordering::Relaxed) as f64 / 1000.0
            ),
        );
        put(
            "dispatchBehindBytes",
            (i.commitlog.max_offset() - i.dispatch.reput_from())
                .max(0)
                .to_string(),
        );
        put("consumeQueueCount", i.queues.all().len().to_string());
        put("deletedTopicTombstones", i.tombstones.len().to_string());
        put(
            "indexFileCount",
            i.index.as_ref().map_or(0, |x| x.file_count()).to_string(),
        );
        put(
            "pageCacheLockTimeMills",
            i.commitlog.lock_held_ms().to_string(),
        );
        if let Some(t) = self.tier_status() {
            tier_runtime_info(&t, &mut put);
        }
        put(
            "diskFull",
            i.state.disk_full.load(Ordering::Relaxed).to_string(),
        );
        let alloc = &i.commitlog.allocator;
        put(
            "commitLogNextFileReady",
            (i.commitlog.files().ready_base() == Some(i.commitlog.next_file_base())).to_string(),
        );
        put(
            "commitLogFilesAllocatedAhead",
            alloc.ahead.load(Ordering::Relaxed).to_string(),
        );
        put(
            "commitLogFilesAllocatedOnAppend",
            alloc.fallbacks.load(Ordering::Relaxed).to_string(),
        );
        put("commitLogNoRoomForNextFile", alloc.is_blocked().to_string());
        put(
            "forcedDeleteUnconsumedRefused",
            Stats::get(&s.forced_unconsumed_refused).to_string(),
        );
        put(
            "forcedDeleteUnconsumedDropped",
            Stats::get(&s.forced_unconsumed_dropped).to_string(),
        );
        put("writeError", i.write_failed().to_string());
        put(
            "flushDiskType",
            i.config.flush_disk_type.as_str().to_owned(),
        );
        let gc = &i.commitlog.group_commit;
        let rounds = gc.rounds.load(Ordering::Relaxed);
        put("groupCommitRounds", rounds.to_string());
        put(
            "groupCommitWaiters",
            gc.waiters_served.load(Ordering::Relaxed).to_string(),
        );
        put(
            "groupCommitAvgSyncMicros",
            (gc.sync_nanos.load(Ordering::Relaxed) / rounds.max(1) / 1000).to_string(),
        );
        put(
            "earliestMessageTimeStamp",
            self.earliest_commit_log_time().unwrap_or(0).to_string(),
        );
        m
    }

    fn earliest_commit_log_time(&self) -> Option<i64> {
        let offset = self.inner.commitlog.min_offset();
        let raw = self.inner.commitlog.read_record(offset)?;
        MessageExt::decode(&raw, false)
            .ok()
            .map(|m| m.store_timestamp)
    }

    /// The tier's state, `None` when tiered storage is off.
    pub fn tier_status(&self) -> Option<crate::tier::TierStatus> {
        let tier = self.inner().tier.as_deref()?;
        let mut status = tier.status();
        // From the first local file not in the tier (the writer's at best) to the end.
        let first_missing = self
            .inner()
            .commitlog
            .files()
            .files()
            .iter()
            .map(|f| f.base())
            .find(|b| !tier.holds(*b));
        if let Some(base) = first_missing {
            let max = self.max_phy_offset();
            status.upload_lag_bytes = (max - base).max(0);
            if max > base {
                status.upload_lag_ms = self
                    .look_message_by_offset(base)
                    .map_or(0, |m| (now_millis() - m.store_timestamp).max(0));
            }
        }
        Some(status)
    }

    /// Waits until `done` holds for the tier's state (re-checked whenever the tier
    /// records or expires a segment); `false` on timeout or with the tier off.
    /// Blocking: for tests and tools.
    pub fn wait_tier(
        &self,
        timeout: std::time::Duration,
        done: impl Fn(&crate::tier::TierStatus) -> bool,
    ) -> bool {
        self.inner()
            .tier
            .as_deref()
            .is_some_and(|t| t.wait_for(timeout, done))
    }
}

/// The tier's figures in `runtime_info` (`mqadmin brokerStatus`), all named `tier*`.
fn tier_runtime_info(t: &crate::tier::TierStatus, put: &mut impl FnMut(&str, String)) {
    put("tierBackend", t.backend.clone());
    put(
        "tierState",
        if t.failing { "UPLOAD_FAILING" } else { "OK" }.to_owned(),
    );
    put("tierSegments", t.segments.to_string());
    put("tierMinOffset", t.min_offset.map_or(-1, |o| o).to_string());
    put("tierSegmentsUploaded", t.segments_uploaded.to_string());
    put("tierBytesUploaded", t.bytes_uploaded.to_string());
    put("tierUploadFailures", t.upload_failures.to_string());
    // The last upload error since start (kept once uploads recover; `tierState` says
    // whether they did), credentials never in it.
    let (error_at, error) = t
        .last_upload_error
        .clone()
        .unwrap_or((0, "none".to_owned()));
    put("tierLastUploadErrorTime", error_at.to_string());
    put("tierLastUploadError", error);
    put("tierUploadLagBytes", t.upload_lag_bytes.to_string());
    put("tierUploadLagSeconds", (t.upload_lag_ms / 1000).to_string());
    put("tierSegmentsExpired", t.segments_expired.to_string());
    put("tierMessagesRead", t.reads.to_string());
    put("tierObjectReads", t.object_reads.to_string());
    put("tierObjectReadFailures", t.object_read_failures.to_string());
    put(
        "tierObjectReadAvgMillis",
        format!(
            "{:.1}",
            t.read_latency_micros as f64 / 1000.0 / t.object_reads.max(1) as f64
        ),
    );
    put("tierReadsPending", t.reads_pending.to_string());
    put("tierReadsOverBudget", t.reads_over_budget.to_string());
    put("tierCacheHits", t.cache_hits.to_string());
    put("tierCacheMisses", t.cache_misses.to_string());
    put("tierCacheBytes", t.cache_bytes.to_string());
}
