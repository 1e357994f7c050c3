//! The store facade (RocketMQ `DefaultMessageStore`): opening and recovering a store
//! directory, the background threads, and the operations the broker calls.
//!
//! Threads (all `std::thread`, none on the async runtime):
//!
//! | thread | does |
//! |---|---|
//! | `store-flush` | commitlog flush: group commit (SYNC_FLUSH) or periodic (ASYNC_FLUSH) |
//! | `store-prefault` | maps commitlog pages in ahead of the writer |
//! | `store-dispatch` | builds consume queues and index, notifies arrivals |
//! | `store-cq-flush` | flushes consume queues, index and the checkpoint |
//! | `store-allocate` | creates the next commitlog file ahead of the writer |
//! | `store-clean` | retention and the disk-usage check |
//! | `store-tier` | uploads sealed commitlog files to the tier, expires tier segments (when on) |
//! | `store-tier-read-N` | runs the reads only the tier answers ([`MessageStore::on_tier_readers`]; when on) |

mod get;
mod ha;
mod info;
mod put;
mod query;
mod truncate;

pub use query::{QueueEntries, QueueEntry};

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use vostok_remoting::support::sched;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use crate::checkpoint::Checkpoint;
use crate::commitlog::CommitLog;
use crate::config::{FlushDiskType, StoreConfig};
use crate::disk::DiskProbe;
use crate::dispatch_state::DispatchState;
use crate::error::{Result, StoreError};
use crate::index::{IndexFlush, IndexService};
use crate::lock::{AbortFile, StoreLock};
use crate::message::{ConsumedOffsets, MessageArrivingListener};
use crate::queue_table::ConsumeQueueTable;
use crate::retention::RetentionReport;
use crate::stats::Stats;
use crate::stopper::Stopper;
use crate::store_inner::{total_memory, RunState, StoreInner};
use crate::tombstone::Tombstones;

/// The message store. Open it once per directory and share it as `Arc<MessageStore>`.
pub struct MessageStore {
    inner: Arc<StoreInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    lock: Mutex<Option<StoreLock>>,
    abort: AbortFile,
    shut: Mutex<bool>,
}

impl std::fmt::Debug for MessageStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageStore")
            .field("root", &self.inner.config.store_path_root_dir)
            .field("max_phy_offset", &self.inner.commitlog.max_offset())
            .finish()
    }
}

/// Whether a store thread serves messages or keeps house.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Priority {
    Serving,
    Background,
}

impl MessageStore {
    /// Locks the directory, loads and recovers the files, and starts the threads.
    pub fn open(config: StoreConfig) -> Result<Arc<MessageStore>> {
        Self::open_with_probe(config, DiskProbe::statvfs())
    }

    /// As [`MessageStore::open`], reading disk space through `probe` (tests simulate
    /// a full disk with [`DiskProbe::simulated`]).
    pub fn open_with_probe(config: StoreConfig, probe: DiskProbe) -> Result<Arc<MessageStore>> {
        config.validate()?;
        let root = config.store_path_root_dir.clone();
        std::fs::create_dir_all(&root).map_err(|e| StoreError::io("create directory", &root, e))?;
        let lock = StoreLock::acquire(&config.lock_path())?;
        let abort = AbortFile::new(config.abort_path());
        let last_exit_ok = !abort.exists();
        tracing::info!(root = %root.display(), last_exit_ok, "opening store");
        // From here on a crash, even during recovery, means abnormal recovery next time.
        abort.create()?;

        let commitlog = CommitLog::load(&config, probe)?;
        let queues = ConsumeQueueTable::load(
            &config.consume_queue_dir(),
            config.mapped_file_size_consume_queue,
        )?;
        let checkpoint = Checkpoint::load(&config.checkpoint_path())?;
        let index = if config.message_index_enable {
            Some(IndexService::load(&config, last_exit_ok)?)
        } else {
            None
        };
        let delay_levels_ms = config
            .delay_levels()?
            .iter()
            .map(|d| d.as_millis() as i64)
            .collect();
        let tier = crate::tier::Tier::open_configured(&config)?;
        let inner = Arc::new(StoreInner {
            config,
            commitlog,
            queues,
            index,
            checkpoint,
            dispatch: DispatchState::default(),
            delay_levels_ms,
            stats: Stats::default(),
            state: RunState::default(),
            stopper: Stopper::default(),
            total_memory: total_memory(),
            consumed: RwLock::new(None),
            tombstones: Tombstones::load(&root),
            ha: Default::default(),
            tier,
        });
        inner
            .ha
            .replica
            .store(inner.config.ha.replica, Ordering::Release);
        inner
            .ha
            .sync_master
            .store(inner.config.ha.sync_master, Ordering::Release);
        inner.recover(last_exit_ok)?;
        if let Some(tier) = &inner.tier {
            // A new disk: what the tier holds is recorded again, and offsets go on after it.
            crate::tier::rebuild::continue_after_tier(&inner, tier)?;
            // A deletion cut short between its tombstone and the tier's record.
            for (topic, end) in inner.tombstones.all() {
                tier.forget_topic(&topic, end)
                    .map_err(|e| crate::error::StoreError::Tier(e.to_string()))?;
            }
        }
        // Before the first put: the file the writer continues in has the blocks of its
        // next step, and the next file is ready if it is due (the first file of an
        // empty store always is).
        if let Err(e) = inner.commitlog.reserve_write_file() {
            tracing::error!(error = %e, "could not reserve the blocks of the current commitlog file");
        }
        if inner.commitlog.next_file_due() {
            let allocator = &inner.commitlog.allocator;
            allocator.prepare(inner.commitlog.files(), inner.commitlog.next_file_base());
        }
        inner.update_disk_state(inner.measure_disk());
        // Everything recovered is on disk now; record it before accepting puts.
        inner.flush_logics(IndexFlush::Complete)?;
        let ts = inner.commitlog.last_store_timestamp();
        if ts > 0 {
            inner.checkpoint.set_physic_msg_timestamp(ts);
        }
        inner.checkpoint.flush()?;

        let store = Arc::new(MessageStore {
            inner: Arc::clone(&inner),
            threads: Mutex::new(Vec::new()),
            lock: Mutex::new(Some(lock)),
            abort,
            shut: Mutex::new(false),
        });
        store.start_threads()?;
        Ok(store)
    }

    /// The store's threads. The dispatcher and the commitlog flush (group commit) are
    /// on the path of every message; the others are housekeeping that may run for
    /// tens of milliseconds at a stretch, so they yield to the threads serving
    /// messages ([`sched::background`]).
    fn start_threads(&self) -> Result<()> {
        let spawn = |name: &str, priority: Priority, f: fn(&StoreInner)| {
            let inner = Arc::clone(&self.inner);
            std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(move || {
                    if priority == Priority::Background {
                        sched::background();
                    }
                    f(&inner)
                })
                .map_err(|e| {
                    StoreError::io("spawn thread", &self.inner.config.store_path_root_dir, e)
                })
        };
        use Priority::{Background, Serving};
        let mut threads = self.threads.locked();
        let dispatcher = spawn("store-dispatch", Serving, crate::dispatch::run)?;
        let _ = self.inner.dispatch.set_thread(dispatcher.thread().clone());
        threads.push(dispatcher);
        let prefaulter = spawn("store-prefault", Background, |i| {
            crate::commitlog::prefault::run(&i.commitlog, &i.stopper)
        })?;
        self.inner
            .commitlog
            .set_prefaulter(prefaulter.thread().clone());
        threads.push(prefaulter);
        if self.inner.commitlog.pool().is_some() {
            let committer = spawn("store-commit", Serving, |i| {
                crate::commitlog::pool::run(
                    &i.commitlog,
                    || i.stopper.is_stopped(),
                    // The committed records go to consume queues and index here
                    // when nobody else is dispatching (no thread switch), and to the
                    // slaves.
                    || i.announce_few(),
                )
            })?;
            if let Some(pool) = self.inner.commitlog.pool() {
                pool.set_committer(committer.thread().clone());
            }
            threads.push(committer);
        }
        threads.push(spawn(
            "store-flush",
            Serving,
            crate::flush_service::run_commit_log_flush,
        )?);
        threads.push(spawn(
            "store-cq-flush",
            Background,
            crate::flush_service::run_logics_flush,
        )?);
        threads.push(spawn("store-allocate", Background, |i| {
            let c = &i.commitlog;
            c.allocator
                .run(|| c.next_file_due().then(|| (c.files(), c.next_file_base())))
        })?);
        threads.push(spawn("store-clean", Background, crate::retention::run)?);
        if self.inner.tier.is_some() {
            threads.push(spawn("store-tier", Background, crate::tier::upload::run)?);
        }
        Ok(())
    }

    pub(crate) fn inner(&self) -> &StoreInner {
        &self.inner
    }

    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// Max offset of a queue: the number of dispatched entries, i.e. the next queue
    /// offset a pull can wait for (0 for an unknown queue, or the tier's end when only the
    /// tier holds it). Like RocketMQ it follows
    /// the dispatcher, which trails an append by microseconds.
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        match self.inner.queues.find(topic, queue_id) {
            Some(cq) => cq.max_offset(),
            // Not written since the local disk was new: the tier's end, if it has it.
            None => self
                .inner
                .tier
                .as_deref()
                .and_then(|t| t.queue_range(topic, queue_id))
                .map_or(0, |(_, end)| end),
        }
    }

    /// Min offset of a queue; with the tier on, the tier's when it goes further back.
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        let local = self.inner.queues.find(topic, queue_id);
        let tier = self
            .inner
            .tier
            .as_deref()
            .filter(|t| t.serves_reads())
            .and_then(|t| t.queue_range(topic, queue_id));
        match (local, tier) {
            (Some(cq), Some((min, _))) => cq.min_offset().min(min),
            (Some(cq), None) => cq.min_offset(),
            (None, Some((min, _))) => min,
            (None, None) => 0,
        }
    }

    /// The next queue offset the append path will assign (0 for an unknown queue).
    pub fn next_queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner
            .commitlog
            .lock_writer()
            .queue_offset(topic, queue_id)
    }

    pub fn min_phy_offset(&self) -> i64 {
        self.inner.commitlog.min_offset()
    }

    /// End of the last complete record in the commitlog.
    pub fn max_phy_offset(&self) -> i64 {
        self.inner.commitlog.max_offset()
    }

    /// End of the commitlog data known to be on disk.
    pub fn flushed_phy_offset(&self) -> i64 {
        self.inner.commitlog.flushed_offset()
    }

    /// Commitlog offset up to which consume queues and index are built.
    pub fn dispatched_phy_offset(&self) -> i64 {
        self.inner.dispatch.reput_from()
    }

    /// How often the dispatcher has waited on a timer rather than until an append woke
    /// it: only to retry after an error, never while messages come. For tests and
    /// diagnostics.
    pub fn dispatch_timed_waits(&self) -> u64 {
        self.inner
            .dispatch
            .timed_waits
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until the dispatcher has built consume queues and index for every
    /// record below `phy_offset`; `false` on timeout. Blocking: not for async tasks.
    pub fn wait_for_dispatch(&self, phy_offset: i64, timeout: Duration) -> bool {
        self.inner.dispatch.wait_for(phy_offset, timeout)
    }

    /// Whether the record at `commit_log_offset` is within the newest
    /// `accessMessageInMemoryMaxRatio` % of RAM worth of commitlog and still in a
    /// local file (a record only the tier holds is not, however young).
    pub fn is_in_memory(&self, commit_log_offset: i64) -> bool {
        let commitlog = &self.inner.commitlog;
        commit_log_offset >= commitlog.min_offset()
            && commitlog.max_offset() - commit_log_offset < self.inner.memory_window()
    }

    /// Deletes `topics` for good: a durable tombstone first (so neither a crash
    /// recovery nor a re-created topic of the same name brings their messages back),
    /// then their consume queues and their queues in the tier. Their commitlog records
    /// stay until retention removes their files (tier segments: until they expire, or
    /// at once when nothing else is in them). Blocking file I/O: call it off the async
    /// runtime.
    pub fn delete_topics(&self, topics: &[String]) -> Result<()> {
        for topic in topics {
            let end = {
                // Under the writer lock: no record of the topic can land between the
                // tombstone's offset and the queue offsets being forgotten.
                let mut writer = self.inner.commitlog.lock_writer();
                // With the write buffer, records appended but not yet committed count.
                let end = self.inner.commitlog.max_offset().max(writer.write_pos);
                self.inner.tombstones.record(topic, end)?;
                writer.queue_offsets.remove(topic);
                end
            };
            // Records the dispatcher has not reached yet are hidden by the tombstone.
            if let Err(e) = self.inner.queues.delete_topic(topic) {
                tracing::warn!(topic = %topic, error = %e, "could not delete a topic's consume queues");
            }
            if let Some(tier) = &self.inner.tier {
                tier.forget_topic(topic, end)
                    .map_err(|e| crate::error::StoreError::Tier(e.to_string()))?;
            }
            tracing::info!(topic = %topic, end, "deleted topic from the store");
        }
        Ok(())
    }

    pub fn queue_ids(&self, topic: &str) -> Vec<i32> {
        self.inner.queues.queue_ids(topic)
    }

    /// The commitlog offset just past the newest record of `topic` that has a
    /// consume-queue entry; `None` when the topic has no consume queue.
    pub fn topic_phy_end(&self, topic: &str) -> Option<i64> {
        self.queue_ids(topic)
            .into_iter()
            .filter_map(|q| self.inner.queues.find(topic, q))
            .map(|cq| cq.max_phy_end())
            .max()
    }

    /// Topics that have consume queues.
    pub fn topics(&self) -> Vec<String> {
        self.inner.queues.topics()
    }

    pub fn set_arrival_listener(&self, listener: Arc<dyn MessageArrivingListener>) {
        self.inner.dispatch.set_listener(listener);
    }

    /// Tells retention what consumer groups have committed, so that a forced,
    /// space-driven deletion never drops unconsumed messages unless
    /// `cleanFileForciblyEnable` allows it. Without it no message counts as consumed.
    pub fn set_consumed_offsets(&self, offsets: Arc<dyn ConsumedOffsets>) {
        *self.inner.consumed.write_locked() = Some(offsets);
    }

    /// Waits until the next commitlog file exists (created ahead), or is not due
    /// yet (the writer has room in its file), so that puts are accepted again after a
    /// full disk; `false` on timeout. Blocking: for tests and tools, not for async
    /// tasks.
    pub fn wait_next_file_ready(&self, timeout: Duration) -> bool {
        let c = &self.inner.commitlog;
        c.allocator.wait_ready(timeout, || {
            !c.next_file_due() || c.files().ready_base() == Some(c.next_file_base())
        })
    }

    /// With `transientStorePoolEnable`: holds back every write of the write buffer
    /// to the commitlog until the guard is dropped (appends go on into the buffer
    /// until it is full). For tests; `None` without the write buffer.
    #[doc(hidden)]
    pub fn hold_commits(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        self.inner.commitlog.pool().map(|p| p.hold())
    }

    /// With `transientStorePoolEnable`: how often a put waited for room in the write
    /// buffer or for it to be written out (before a file roll), and how many writes
    /// of it to the commitlog were done. `(0, 0)` without it.
    pub fn write_buffer_stats(&self) -> (u64, u64) {
        self.inner.commitlog.pool().map_or((0, 0), |p| {
            (
                p.full_waits.load(Ordering::Relaxed),
                p.commits.load(Ordering::Relaxed),
            )
        })
    }

    /// With `transientStorePoolEnable`: how many commits of the write buffer were
    /// run at the end of a unit of work on the appending thread (whether or not they
    /// found anything left to write). For tests.
    #[doc(hidden)]
    pub fn write_buffer_unit_commits(&self) -> u64 {
        self.inner
            .commitlog
            .pool()
            .map_or(0, |p| p.unit_commits.load(Ordering::Relaxed))
    }

    /// How often the thread that maps commitlog pages in ahead of the writer has woken
    /// from idle (woken by the writer, or its idle period over). For tests.
    #[doc(hidden)]
    pub fn prefault_wakeups(&self) -> u64 {
        self.inner
            .commitlog
            .prefault_wakeups
            .load(Ordering::Relaxed)
    }

    /// The append lock has been held longer than `osPageCacheBusyTimeOutMills`.
    pub fn is_os_page_cache_busy(&self) -> bool {
        let held = self.inner.commitlog.lock_held_ms();
        held > self.inner.config.os_page_cache_busy_timeout.as_millis() as i64 && held < 10_000_000
    }

    /// Raw commitlog bytes from `from`, up to `max_bytes`, within one file and below
    /// the durable end: what a master sends a slave.
    pub fn read_raw(&self, from: i64, max_bytes: usize) -> Option<Bytes> {
        self.inner.commitlog.read_raw(from, max_bytes)
    }

    /// Appends bytes received from a master at `at` (this store's write end), then
    /// lets the dispatcher build consume queues and index from the complete records.
    pub fn append_raw(&self, at: i64, data: &[u8]) -> Result<()> {
        if self.inner.state.shutdown.load(Ordering::Acquire) {
            return Err(StoreError::Shutdown);
        }
        self.inner.commitlog.append_raw(at, data, true)?;
        self.inner.dispatch.wake();
        if self.inner.config.flush_disk_type == FlushDiskType::SyncFlush {
            self.inner.flush_commit_log()?;
        }
        Ok(())
    }

    /// Where a slave should continue: the end of the bytes it has written.
    pub fn raw_write_end(&self) -> i64 {
        self.inner.commitlog.write_end()
    }

    /// One retention pass as the background thread runs it, with the time and disk
    /// usage (0.0–1.0) given: for tests and admin tools.
    pub fn run_retention(&self, now: SystemTime, disk_used_ratio: f64) -> Result<RetentionReport> {
        self.inner.clean_once(now, disk_used_ratio)
    }

    /// Asks the next retention pass to delete expired files whatever the hour
    /// (RocketMQ `executeDeleteFilesManually`).
    pub fn delete_expired_files_now(&self) {
        self.inner
            .state
            .manual_delete
            .fetch_add(1, Ordering::AcqRel);
    }

    /// Flushes commitlog, consume queues, index and checkpoint now.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_commit_log()?;
        self.inner.flush_logics(IndexFlush::Complete)
    }

    /// Stops the threads, flushes everything, writes the checkpoint, removes the
    /// abort file and releases the lock. Idempotent; also run on drop.
    pub fn shutdown(&self) {
        let mut shut = self.shut.locked();
        if *shut {
            return;
        }
        *shut = true;
        let i = &self.inner;
        i.state.shutdown.store(true, Ordering::Release);
        // No append is half-done once we get the lock, and none starts after.
        i.commitlog.lock_writer().closed = true;
        i.stopper.stop();
        if let Some(tier) = &i.tier {
            tier.stop(); // an upload or read waiting on the object store gives up
        }
        i.commitlog.unpark_prefaulter();
        if let Some(pool) = i.commitlog.pool() {
            pool.wake(); // it commits what is pending, then stops
        }
        i.commitlog.allocator.stop();
        i.dispatch.stop();
        i.commitlog.group_commit.notify();
        let me = std::thread::current().id();
        for t in std::mem::take(&mut *self.threads.locked()) {
            if t.thread().id() == me {
                continue; // dropped from one of our own threads (e.g. the listener)
            }
            if t.join().is_err() {
                tracing::error!("a store thread panicked");
            }
        }
        // RocketMQ leaves it; removing it keeps the directory to the data written.
        if let Err(e) = i.commitlog.files().discard_ready() {
            tracing::warn!(error = %e, "could not remove the unused next commitlog file");
        }
        let mut clean = true;
        // Whatever the commit thread left (none, unless it failed).
        if let Err(e) = i.commitlog.commit_pending() {
            tracing::error!(error = %e, "final commit of the write buffer failed");
            clean = false;
        }
        let last = {
            let _running = i.dispatch.running.locked();
            i.dispatch_available(true)
        };
        if let Err(e) = last {
            tracing::error!(error = %e, "final dispatch failed");
            clean = false;
        }
        if i.dispatch.reput_from() < i.commitlog.max_offset() {
            clean = false;
        }
        if let Err(e) = i.flush_commit_log() {
            tracing::error!(error = %e, "final commitlog flush failed");
            clean = false;
        }
        i.commitlog.release_waiters();
        if let Err(e) = i.flush_logics(IndexFlush::Complete) {
            tracing::error!(error = %e, "final consume queue / index flush failed");
            clean = false;
        }
        if clean && !i.write_failed() {
            if let Err(e) = self.abort.remove() {
                tracing::error!(error = %e, "could not remove the abort file");
            }
        } else {
            tracing::warn!(
                "store not shut down cleanly; the next start recovers from the checkpoint"
            );
        }
        self.lock.locked().take();
        tracing::info!(root = %i.config.store_path_root_dir.display(), "store shut down");
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        self.shutdown();
    }
}
