//! Retention: deleting old commitlog files, then the consume-queue and index files
//! that only point into them (RocketMQ `CleanCommitLogService` and
//! `CleanConsumeQueueService`).
//!
//! A pass deletes, from the oldest, commitlog files last modified more than
//! `fileReservedTime` ago when it is the `deleteWhen` hour, or right away when disk
//! usage is above `diskMaxUsedSpaceRatio`; above `diskSpaceCleanForciblyRatio` the
//! oldest files go even if they are not expired. The newest file and files the
//! dispatcher has not finished are never deleted; at most 10 files go per pass.
//! Above `diskSpaceWarningLevelRatio` puts are refused with DISK_FULL until usage
//! drops. Passes take the time and the disk usage as arguments so tests can drive
//! them.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use vostok_remoting::support::time::{millis_of, LocalTime};

use crate::error::Result;
use crate::store_inner::StoreInner;

/// Files deleted per pass at most (RocketMQ `DELETE_FILES_BATCH_MAX`).
const DELETE_FILES_BATCH_MAX: usize = 10;

/// Used fraction (0.0–1.0) of the file system holding `path`.
pub(crate) fn disk_used_ratio(path: &Path) -> Option<f64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes only the struct we own; `c` is a valid C string.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    let total = st.f_blocks as f64 * st.f_frsize as f64;
    let free = st.f_bfree as f64 * st.f_frsize as f64;
    (total > 0.0).then(|| (total - free) / total)
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub commit_log_files_deleted: usize,
    pub consume_queue_files_deleted: usize,
    pub index_files_deleted: usize,
    /// Puts are refused with DISK_FULL after this pass.
    pub disk_full: bool,
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

    /// The used fraction of the disks holding the commitlog and the root directory.
    pub(crate) fn measure_disk(&self) -> f64 {
        disk_used_ratio(&self.config.commit_log_dir())
            .into_iter()
            .chain(disk_used_ratio(&self.config.store_path_root_dir))
            .fold(0.0f64, f64::max)
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
        let forcibly =
            c.clean_file_forcibly_enable && percent > c.disk_space_clean_forcibly_ratio as f64;
        let manual = self
            .state
            .manual_delete
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();

        let mut report = RetentionReport {
            disk_full,
            ..Default::default()
        };
        if time_up || space_to_delete || manual || forcibly {
            report.commit_log_files_deleted = self.delete_commit_log_files(now, forcibly)?;
        }
        let min = self.commitlog.min_offset();
        for cq in self.queues.all() {
            report.consume_queue_files_deleted += cq.delete_expired_files(min)?;
            cq.correct_min_offset(min);
        }
        if let Some(index) = &self.index {
            report.index_files_deleted = index.delete_expired(min)?;
        }
        Ok(report)
    }

    fn delete_commit_log_files(&self, now: SystemTime, forcibly: bool) -> Result<usize> {
        let reserved = self.config.file_reserved_time;
        let dispatched = self.dispatch.reput_from();
        let files = self.commitlog.files().files();
        let mut n = 0;
        for f in files.iter().take(files.len().saturating_sub(1)) {
            if n >= DELETE_FILES_BATCH_MAX || f.end() > dispatched {
                break;
            }
            let expired = f.modified().map(|m| now >= m + reserved).unwrap_or(false);
            if !(expired || forcibly) {
                break;
            }
            n += 1;
        }
        if n > 0 {
            for f in self.commitlog.files().remove_first(n)? {
                tracing::info!(path = %f.path().display(), forcibly, "deleted a commitlog file");
            }
        }
        Ok(n)
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
