//! The state every part of the store shares (RocketMQ `DefaultMessageStore`'s fields
//! without its start-up code): the commitlog, the consume queues, the index, the
//! checkpoint, the dispatcher's progress, the flags that gate puts and the counters.
//!
//! This is the store's low floor. The background services (`dispatch`,
//! `flush_service`, `retention`, `recovery`, `commitlog::prefault`, `allocate`) stand
//! above it and take `&StoreInner` (or the parts they need); the `MessageStore`
//! facade on top builds it, starts the services and serves the broker.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use vostok_remoting::support::sync::RwLockExt;

use crate::checkpoint::Checkpoint;
use crate::commitlog::CommitLog;
use crate::config::StoreConfig;
use crate::dispatch_state::DispatchState;
use crate::error::{Result, StoreError};
use crate::ha::state::HaState;
use crate::index::{IndexFlush, IndexService};
use crate::message::ConsumedOffsets;
use crate::queue_table::ConsumeQueueTable;
use crate::stats::Stats;
use crate::stopper::Stopper;
use crate::tombstone::Tombstones;

/// Flags that gate puts.
#[derive(Debug, Default)]
pub(crate) struct RunState {
    pub(crate) shutdown: AtomicBool,
    pub(crate) disk_full: AtomicBool,
    /// A flush failed: durability can no longer be promised, puts are refused (see
    /// also [`StoreInner::write_failed`]).
    pub(crate) write_error: AtomicBool,
    pub(crate) disk_ratio_permille: AtomicU32,
    pub(crate) manual_delete: AtomicU32,
}

/// State shared by the facade and its threads.
pub(crate) struct StoreInner {
    pub(crate) config: StoreConfig,
    pub(crate) commitlog: CommitLog,
    pub(crate) queues: ConsumeQueueTable,
    pub(crate) index: Option<IndexService>,
    pub(crate) checkpoint: Checkpoint,
    pub(crate) dispatch: DispatchState,
    pub(crate) delay_levels_ms: Vec<i64>,
    pub(crate) stats: Stats,
    pub(crate) state: RunState,
    pub(crate) stopper: Stopper,
    pub(crate) total_memory: u64,
    /// What consumer groups committed, from the broker (retention asks it).
    pub(crate) consumed: RwLock<Option<Arc<dyn ConsumedOffsets>>>,
    /// Deleted topics whose old records must not be dispatched again.
    pub(crate) tombstones: Tombstones,
    /// Replication: connected slaves, SYNC_MASTER waiters, a slave's master link.
    pub(crate) ha: HaState,
    /// The second tier, when `messageStorePlugIn` turns it on.
    pub(crate) tier: Option<Arc<crate::tier::Tier>>,
}

/// Physical memory in bytes.
pub(crate) fn total_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        pages as u64 * page as u64
    } else {
        8 << 30
    }
}

impl StoreInner {
    pub(crate) fn consumed_offsets(&self) -> Option<Arc<dyn ConsumedOffsets>> {
        self.consumed.read_locked().clone()
    }

    /// Newest `accessMessageInMemoryMaxRatio` % of RAM worth of commitlog.
    pub(crate) fn memory_window(&self) -> i64 {
        (self.total_memory / 100 * self.config.access_message_in_memory_max_ratio as u64) as i64
    }

    /// Flushes consume queues and index, then records their progress in the
    /// checkpoint together with the commitlog's. `index` says whether the newest index
    /// file's slot table is synced too (at start and stop, not every period).
    pub(crate) fn flush_logics(&self, index: IndexFlush) -> Result<()> {
        let dispatched = self.dispatch.dispatched_timestamp();
        for cq in self.queues.all() {
            cq.flush()?;
        }
        if let Some(service) = &self.index {
            service.flush(index)?;
        }
        if dispatched > 0 {
            self.checkpoint.set_logics_msg_timestamp(dispatched);
            self.checkpoint.set_index_msg_timestamp(dispatched);
        }
        self.checkpoint.flush()
    }

    pub(crate) fn flush_commit_log(&self) -> Result<()> {
        match self.commitlog.flush() {
            Ok(f) => {
                if f.store_timestamp > 0 {
                    self.checkpoint.set_physic_msg_timestamp(f.store_timestamp);
                }
                Ok(())
            }
            Err(e) => {
                self.flush_failed(&e);
                Err(e)
            }
        }
    }

    /// A flush, or a write of the write buffer, failed: puts are refused.
    pub(crate) fn write_failed(&self) -> bool {
        self.state.write_error.load(Ordering::Acquire)
            || self.commitlog.pool().is_some_and(|p| p.failed())
    }

    pub(crate) fn flush_failed(&self, e: &StoreError) {
        if !self.state.write_error.swap(true, Ordering::AcqRel) {
            tracing::error!(error = %e, "commitlog flush failed: refusing further puts");
        }
    }
}
