//! The flush threads (RocketMQ `FlushRealTimeService`, `GroupCommitService` and
//! `FlushConsumeQueueService`): the commitlog's periodic flush or group commit, and the
//! periodic flush of consume queues, index (its entries, not its slot table) and
//! checkpoint.

use std::time::{Duration, Instant};

use crate::config::FlushDiskType;
use crate::index::IndexFlush;
use crate::store_inner::StoreInner;

/// The commitlog flush thread body.
pub(crate) fn run_commit_log_flush(inner: &StoreInner) {
    let c = &inner.config;
    match c.flush_disk_type {
        FlushDiskType::SyncFlush => {
            while !inner.stopper.is_stopped() {
                match inner
                    .commitlog
                    .group_commit_round(Duration::from_millis(10), || inner.commit_write_buffer())
                {
                    Some(Ok(f)) if f.store_timestamp > 0 => {
                        inner.checkpoint.set_physic_msg_timestamp(f.store_timestamp)
                    }
                    Some(Err(e)) => {
                        inner.flush_failed(&e);
                        inner.stopper.wait(Duration::from_millis(100));
                    }
                    _ => {}
                }
            }
        }
        FlushDiskType::AsyncFlush => {
            let least = (c.flush_commit_log_least_pages * crate::mapped_file::PAGE_SIZE) as i64;
            let mut last_flush = Instant::now();
            loop {
                let stopping = inner.stopper.wait(c.flush_interval_commit_log);
                let thorough = last_flush.elapsed() >= c.flush_commit_log_thorough_interval;
                let dirty = inner.commitlog.unflushed_bytes();
                if dirty > 0 && (stopping || thorough || dirty >= least) {
                    if inner.flush_commit_log().is_ok() {
                        last_flush = Instant::now();
                    }
                } else if dirty == 0 {
                    last_flush = Instant::now();
                }
                if stopping {
                    break;
                }
            }
        }
    }
}

/// The consume-queue / index / checkpoint flush thread body.
pub(crate) fn run_logics_flush(inner: &StoreInner) {
    while !inner
        .stopper
        .wait(inner.config.flush_interval_consume_queue)
    {
        if let Err(e) = inner.flush_logics(IndexFlush::Entries) {
            tracing::error!(error = %e, "consume queue / index flush failed");
        }
    }
}
