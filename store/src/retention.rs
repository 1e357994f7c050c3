//! Retention: deleting old commitlog files, then the consume-queue and index files
//! that only point into them (RocketMQ `CleanCommitLogService` and
//! `CleanConsumeQueueService`).
//!
//! A pass deletes, from the oldest, commitlog files last modified more than
//! `fileReservedTime` ago when it is the `deleteWhen` hour, or right away when disk
//! usage is above `diskMaxUsedSpaceRatio`: time retention, the operator's choice,
//! whether or not the messages were consumed (as RocketMQ does).
//!
//! Under space pressure (usage above `diskSpaceCleanForciblyRatio`, or no room for the
//! next commitlog file) the oldest files go even if they are not expired: a *forced*
//! deletion. It takes files whose messages every consumer group has consumed (the
//! broker tells, through [`crate::ConsumedOffsets`]; a group that consumes a topic but
//! has not committed an offset on a queue has consumed nothing there); a file holding
//! messages some group has not consumed goes only when `cleanFileForciblyEnable` is
//! set. Otherwise the pass stops there, logs how many unconsumed messages that
//! deletion would drop and exposes the count (`forcedDeleteUnconsumedRefused`); with
//! the key set, the messages dropped are logged and counted
//! (`forcedDeleteUnconsumedDropped`). Without a [`crate::ConsumedOffsets`], no message
//! counts as consumed.
//!
//! The newest file and files the dispatcher has not finished are never deleted; at
//! most 10 files go per pass. Above `diskSpaceWarningLevelRatio` puts are refused
//! with DISK_FULL until usage drops. Passes take the time and the disk usage as
//! arguments so tests can drive them; the thread reads the usage from the file system
//! (`allocate` says why a failed allocation cannot distort it).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::{millis_of, LocalTime};

use crate::error::Result;
use crate::stats::Stats;
use crate::store_inner::StoreInner;

/// Files deleted per pass at most (RocketMQ `DELETE_FILES_BATCH_MAX`).
const DELETE_FILES_BATCH_MAX: usize = 10;

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub commit_log_files_deleted: usize,
    pub consume_queue_files_deleted: usize,
    pub index_files_deleted: usize,
    /// Puts are refused with DISK_FULL after this pass.
    pub disk_full: bool,
    /// Messages no longer stored that some consumer group had not consumed: dropped
    /// by a forced deletion allowed by `cleanFileForciblyEnable`.
    pub unconsumed_dropped: u64,
    /// Unconsumed messages the next forced deletion would drop, which this pass
    /// refused (`cleanFileForciblyEnable` off).
    pub unconsumed_refused: u64,
}

/// What the consumer groups had consumed, per topic, asked once per pass.
#[derive(Default)]
struct Consumed(HashMap<String, HashMap<i32, i64>>);

impl Consumed {
    fn of(&mut self, inner: &StoreInner, topic: &str) -> &HashMap<i32, i64> {
        if !self.0.contains_key(topic) {
            let offsets = inner
                .consumed_offsets()
                .map(|c| c.min_committed_offsets(topic))
                .unwrap_or_default();
            self.0.insert(topic.to_owned(), offsets);
        }
        &self.0[topic]
    }
}

/// What deleting commitlog files did.
#[derive(Debug, Default)]
struct Deleted {
    files: usize,
    unconsumed_dropped: u64,
    unconsumed_refused: u64,
}

impl StoreInner {
    /// Records the disk usage and sets or clears the DISK_FULL state; returns it.
    pub(crate) fn update_disk_state(&self, used_ratio: f64) -> bool {
        let percent = used_ratio * 100.0;
        let disk_full = percent > self.config.disk_space_warning_level_ratio as f64;
        if disk_full != self.state.disk_full.swap(disk_full, Ordering::AcqRel) {
            if disk_full {
                tracing::error!(used_percent = percent, "disk nearly full: refusing puts");
            } else {
                tracing::info!(
                    used_percent = percent,
                    "disk usage back to normal: accepting puts"
                );
            }
        }
        self.state
            .disk_ratio_permille
            .store((used_ratio * 1000.0) as u32, Ordering::Relaxed);
        disk_full
    }

    /// The used fraction of the disks holding the commitlog and the root directory,
    /// read from the file system while no allocation is in flight.
    pub(crate) fn measure_disk(&self) -> f64 {
        let commit_log_dir = self.config.commit_log_dir();
        self.commitlog
            .allocator
            .used_ratio(&[&commit_log_dir, &self.config.store_path_root_dir])
    }

    /// One retention pass at `now` with the disk `used_ratio` (0.0–1.0).
    pub(crate) fn clean_once(&self, now: SystemTime, used_ratio: f64) -> Result<RetentionReport> {
        let c = &self.config;
        let percent = used_ratio * 100.0;
        let disk_full = self.update_disk_state(used_ratio);

        let now_ms = millis_of(now);
        let hour = LocalTime::of_millis(now_ms).map_or(u32::MAX, |t| t.hour);
        let time_up = c.delete_hours().contains(&hour);
        let space_to_delete = percent > c.disk_max_used_space_ratio as f64;
        let pressure = percent > c.disk_space_clean_forcibly_ratio as f64
            || self.commitlog.allocator.is_blocked();
        let manual = self
            .state
            .manual_delete
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();

        let mut report = RetentionReport {
            disk_full,
            ..Default::default()
        };
        let mut deleted = Deleted::default();
        if time_up || space_to_delete || manual || pressure {
            deleted = self.delete_commit_log_files(now, pressure)?;
        }
        self.note_forced(&deleted);
        report.commit_log_files_deleted = deleted.files;
        report.unconsumed_dropped = deleted.unconsumed_dropped;
        report.unconsumed_refused = deleted.unconsumed_refused;
        let min = self.commitlog.min_offset();
        for cq in self.queues.all() {
            report.consume_queue_files_deleted += cq.delete_expired_files(min)?;
            cq.correct_min_offset(min);
        }
        if let Some(index) = &self.index {
            report.index_files_deleted = index.delete_expired(min)?;
        }
        // A deleted topic's tombstone is needed only while its old records exist.
        self.tombstones.prune(min)?;
        if deleted.files > 0 {
            // Room may exist now for a next file that could not be allocated.
            self.commitlog.allocator.request();
        }
        Ok(report)
    }

    fn delete_commit_log_files(&self, now: SystemTime, pressure: bool) -> Result<Deleted> {
        let reserved = self.config.file_reserved_time;
        let dispatched = self.dispatch.reput_from();
        let files = self.commitlog.files().files();
        let mut d = Deleted::default();
        let mut forced_from = None;
        let mut consumed = Consumed::default();
        for f in files.iter().take(files.len().saturating_sub(1)) {
            if d.files >= DELETE_FILES_BATCH_MAX || f.end() > dispatched {
                break;
            }
            let expired = f.modified().map(|m| now >= m + reserved).unwrap_or(false);
            if let Some(tier) = &self.tier {
                // A file not yet in the tier is kept, whatever its age or the disk's
                // state: losing it would lose its messages for good.
                if (expired || pressure) && !tier.holds(f.base()) {
                    if tier.warned.locked().insert(f.base()) {
                        tracing::warn!(
                            path = %f.path().display(),
                            "a commitlog file due for deletion is not in the tier yet: kept until its upload succeeds"
                        );
                    }
                    break;
                }
            }
            if expired {
                d.files += 1;
                continue;
            }
            if !pressure {
                break;
            }
            // Forced: the unconsumed messages from the first forced file to this one's
            // end (those in expired files go by time retention, whatever their state).
            let before = match forced_from {
                Some(n) => n,
                None => *forced_from.insert(self.unconsumed_below(f.base(), &mut consumed)),
            };
            let unconsumed = self
                .unconsumed_below(f.end(), &mut consumed)
                .saturating_sub(before);
            if unconsumed > 0 && !self.config.clean_file_forcibly_enable {
                d.unconsumed_refused = unconsumed;
                break;
            }
            d.unconsumed_dropped = unconsumed;
            d.files += 1;
        }
        if d.files > 0 {
            for f in self.commitlog.files().remove_first(d.files)? {
                tracing::info!(path = %f.path().display(), forced = pressure, "deleted a commitlog file");
            }
        }
        Ok(d)
    }

    /// Messages with a consume-queue entry whose record lies below commitlog offset
    /// `end` and that some consumer group has not consumed. `consumed` caches, per
    /// topic, what [`crate::ConsumedOffsets`] answered during this pass.
    fn unconsumed_below(&self, end: i64, consumed: &mut Consumed) -> u64 {
        self.queues
            .all()
            .iter()
            .map(|cq| {
                let (min, max) = (cq.min_offset(), cq.max_offset());
                let from = consumed
                    .of(self, cq.topic())
                    .get(&cq.queue_id())
                    .copied()
                    .unwrap_or(min)
                    .clamp(min, max);
                (cq.offset_of_phy(end) - from).max(0) as u64
            })
            .sum()
    }

    /// Logs and counts what a forced deletion dropped or was refused.
    fn note_forced(&self, d: &Deleted) {
        let s = &self.stats;
        if d.unconsumed_dropped > 0 {
            Stats::add(&s.forced_unconsumed_dropped, d.unconsumed_dropped);
            tracing::warn!(
                messages = d.unconsumed_dropped,
                "forced deletion (cleanFileForciblyEnable) dropped messages that a consumer group had not consumed"
            );
        }
        let before = s
            .forced_unconsumed_refused
            .swap(d.unconsumed_refused, Ordering::Relaxed);
        if d.unconsumed_refused > 0 && before == 0 {
            tracing::warn!(
                messages = d.unconsumed_refused,
                "disk space is short, but deleting the oldest commitlog file would drop messages that a consumer group has not consumed: refused (set cleanFileForciblyEnable=true to allow it)"
            );
        }
    }
}

/// The retention thread body: a pass every `cleanResourceInterval`.
pub(crate) fn run(inner: &StoreInner) {
    let interval = inner
        .config
        .clean_resource_interval
        .max(Duration::from_millis(100));
    while !inner.stopper.wait(interval) {
        let ratio = inner.measure_disk();
        if let Err(e) = inner.clean_once(SystemTime::now(), ratio) {
            tracing::error!(error = %e, "retention pass failed");
        }
    }
}
