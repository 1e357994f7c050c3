//! The dispatcher ("reput", docs/store.md#dispatch): follows the commitlog and builds the
//! consume queues and the index from the records, then tells the arrival listener.
//!
//! Everything the consume queues and the index hold is derived from the commitlog
//! here, and only here, so both can always be rebuilt from it: recovery feeds old
//! records through the same [`StoreInner::dispatch_record`].
//!
//! The thread parks when it has caught up and the next append unparks it (an append
//! while it runs costs a fence and a load), so a new message is visible and announced
//! as soon as the thread runs, never after a polling period. An append of a single
//! record is dispatched by its writer instead when nobody else is dispatching.

use std::sync::atomic::Ordering;
use std::time::Duration;

use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::record::RecordView;
use vostok_remoting::protocol::topic::SCHEDULE_TOPIC;
use vostok_remoting::support::defer;
use vostok_remoting::support::latency_trace::{self, Stage};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use crate::commitlog::append::gets_queue_offset;
use crate::commitlog::scan::{scan, Scanned};
use crate::consume_queue::CqEntry;
use crate::error::{Result, StoreError};
use crate::recovery::Progress;
use crate::store_inner::StoreInner;

/// The properties the dispatcher needs, found in one pass (the last occurrence
/// wins, as with `property::find`).
#[derive(Default)]
struct RecordProps<'a> {
    tags: Option<&'a str>,
    keys: Option<&'a str>,
    uniq: Option<&'a str>,
    delay: Option<&'a str>,
}

impl<'a> RecordProps<'a> {
    fn of(properties: &'a str) -> Self {
        let mut p = RecordProps::default();
        for (name, value) in property::pairs(properties) {
            match name {
                property::TAGS => p.tags = Some(value),
                property::KEYS => p.keys = Some(value),
                property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX => p.uniq = Some(value),
                property::DELAY_TIME_LEVEL => p.delay = Some(value),
                _ => {}
            }
        }
        p
    }
}

impl StoreInner {
    /// The consume-queue tag field of a record: the delivery time for a delayed
    /// message parked in `SCHEDULE_TOPIC_XXXX`, else the hash of `TAGS`.
    fn tags_code_of(&self, topic: &str, props: &RecordProps<'_>, store_timestamp: i64) -> i64 {
        if topic == SCHEDULE_TOPIC {
            let level = props.delay.and_then(|l| l.parse::<i64>().ok()).unwrap_or(0);
            if level > 0 && !self.delay_levels_ms.is_empty() {
                let level = level.min(self.delay_levels_ms.len() as i64) as usize;
                return store_timestamp + self.delay_levels_ms[level - 1];
            }
        }
        tags_code(props.tags)
    }

    /// The consume-queue tag field of a record (the tier's queue index holds it too).
    pub(crate) fn queue_tags_code(&self, view: &RecordView<'_>) -> i64 {
        let props = RecordProps::of(view.properties());
        self.tags_code_of(view.topic(), &props, view.store_timestamp())
    }

    /// Builds the consume-queue entry and index entries of one record. With `notify`
    /// (live dispatch) it also tells the arrival listener; without it (recovery,
    /// before readers exist) it also repairs consume-queue entries that differ.
    pub(crate) fn dispatch_record(
        &self,
        view: &RecordView<'_>,
        phy: i64,
        notify: bool,
    ) -> Result<()> {
        let sys_flag = view.sys_flag();
        let topic = view.topic();
        if self.tombstones.hides(topic, phy) {
            // A record of a deleted topic: it stays in the commitlog until retention
            // removes its file, but no queue or index shows it again.
            return Ok(());
        }
        let properties = view.properties();
        let store_timestamp = view.store_timestamp();
        let counted = gets_queue_offset(sys_flag);
        let props = RecordProps::of(properties);
        let mut tags = 0;
        if counted {
            tags = self.tags_code_of(topic, &props, store_timestamp);
            let cq = self.queues.find_or_create(topic, view.queue_id())?;
            cq.put(
                view.queue_offset(),
                CqEntry {
                    phy,
                    size: view.total_size() as i32,
                    tags_code: tags,
                },
                !notify,
            )?;
        }
        if let Some(index) = &self.index {
            index.build(
                topic,
                sys_flag,
                props.keys,
                props.uniq,
                phy,
                store_timestamp,
            )?;
        }
        if notify && counted {
            latency_trace::stamp(Stage::Dispatched, phy);
            let listener = self.dispatch.listener.read_locked().clone();
            if let Some(l) = listener {
                l.arriving(
                    topic,
                    view.queue_id(),
                    view.queue_offset() + 1,
                    tags,
                    store_timestamp,
                    properties,
                );
            }
        }
        Ok(())
    }

    /// Dispatches every complete record between the reput offset and the commitlog's
    /// max offset; returns how many records it dispatched. With `notify` the pass is a
    /// [unit](vostok_remoting::support::defer): what the arrival listener puts off runs
    /// once every record of the pass is dispatched (a held pull answered with all of
    /// them), or, inside a unit already (a writer dispatching its own append on a
    /// connection's reader), when that unit ends.
    pub(crate) fn dispatch_available(&self, notify: bool) -> Result<usize> {
        if notify {
            defer::unit(|| self.dispatch_logged(true, None))
        } else {
            self.dispatch_logged(false, None)
        }
    }

    /// [`Self::dispatch_available`], logging how far it got through `progress`
    /// (recovery).
    pub(crate) fn dispatch_logged(
        &self,
        notify: bool,
        mut progress: Option<&mut Progress>,
    ) -> Result<usize> {
        let end = self.commitlog.max_offset();
        let mut off = self.dispatch.reput_from();
        let min = self.commitlog.min_offset();
        if off < min {
            tracing::warn!(
                reput = off,
                min,
                "dispatch offset below the commitlog; skipping ahead"
            );
            off = min;
            self.dispatch.set_reput_from(off);
        }
        let mut dispatched = 0;
        let from = off;
        while off < end {
            let Some(file) = self.commitlog.files().find(off) else {
                break;
            };
            if let Some(p) = progress.as_deref_mut() {
                p.offsets("dispatch", from, off, end);
            }
            let base = file.base();
            let limit = (end.min(file.end()) - base) as usize;
            let mut pos = (off - base) as usize;
            while pos < limit {
                match scan(file.read(pos, limit - pos), base, pos, file.size(), false) {
                    Scanned::Message(view) => {
                        self.dispatch_record(&view, base + pos as i64, notify)?;
                        pos += view.total_size();
                        dispatched += 1;
                        if let Some(p) = progress.as_deref_mut() {
                            p.record("dispatch", from, base + pos as i64, end);
                        }
                        self.dispatch
                            .dispatched_timestamp
                            .store(view.store_timestamp(), Ordering::Release);
                        self.dispatch.set_reput_from(base + pos as i64);
                    }
                    Scanned::Blank => {
                        pos = file.size();
                        self.dispatch.set_reput_from(file.end());
                    }
                    Scanned::Partial => {
                        return Err(StoreError::Corrupt {
                            offset: base + pos as i64,
                            reason: "incomplete record below the max offset".into(),
                        })
                    }
                    Scanned::Invalid(reason) => {
                        return Err(StoreError::Corrupt {
                            offset: base + pos as i64,
                            reason,
                        })
                    }
                }
            }
            off = base + pos as i64;
        }
        if dispatched > 0 || off != end {
            self.dispatch.announce();
        }
        Ok(dispatched)
    }
}

impl StoreInner {
    /// After an append of a few records: dispatches them on the caller's thread when
    /// nobody else is dispatching (cheaper than waking the dispatcher thread, and the
    /// arrival is announced without a thread switch), else wakes the dispatcher. Never
    /// waits for a dispatch in progress.
    pub(crate) fn dispatch_or_wake(&self) {
        if let Ok(_running) = self.dispatch.running.try_lock() {
            if self.dispatch_available(true).is_ok() {
                // An append that came meanwhile found the lock taken and woke the thread.
                return;
            }
        }
        self.dispatch.wake();
    }

    /// After a few records became readable (an append without the write buffer, or a
    /// write of it): [`Self::dispatch_or_wake`], then the slaves' senders woken.
    pub(crate) fn announce_few(&self) {
        self.dispatch_or_wake();
        self.ha.on_append();
    }

    /// Writes what the write buffer holds to the commitlog now and wakes the dispatcher
    /// and the slaves' senders for it: the group commit, which must not flush short of
    /// its waiters' appends, and leaves the dispatch to others so as not to delay the
    /// flush. Nothing to do without the write buffer.
    pub(crate) fn commit_write_buffer(&self) -> crate::error::Result<()> {
        if self.commitlog.commit_pending()?.is_some() {
            self.dispatch.wake();
            self.ha.on_append();
        }
        Ok(())
    }
}

/// How long the dispatcher waits before it tries again after an error.
const RETRY_AFTER_ERROR: Duration = Duration::from_millis(500);
/// How long it waits when the commitlog holds records past the reput offset that it
/// could not read (no file holds the offset yet): not a state a stream is in.
const RETRY_UNREADABLE: Duration = Duration::from_millis(1);

/// The dispatcher thread body. It never waits on a timer while records come: when it
/// has caught up it parks until the next append unparks it (see
/// [`crate::dispatch_state::DispatchState::wake`]), so a message is dispatched and
/// announced as soon as the thread runs, and an idle store costs nothing.
pub(crate) fn run(inner: &StoreInner) {
    let _ = inner.dispatch.set_thread(std::thread::current());
    let mut failing = false;
    loop {
        let end = inner.commitlog.max_offset();
        let pass = {
            let _running = inner.dispatch.running.locked();
            inner.dispatch_available(true)
        };
        match pass {
            Ok(n) if n > 0 => {
                failing = false;
                continue;
            }
            Ok(_) => failing = false,
            Err(e) => {
                if !failing {
                    tracing::error!(error = %e, reput = inner.dispatch.reput_from(), "dispatch failed; retrying");
                }
                failing = true;
            }
        }
        if inner.dispatch.stop.load(Ordering::Acquire) {
            break;
        }
        if failing {
            inner.dispatch.timed_wait(RETRY_AFTER_ERROR);
            continue;
        }
        if inner.dispatch.reput_from() < end {
            // Records it saw but could not reach: try again shortly.
            inner.dispatch.timed_wait(RETRY_UNREADABLE);
            continue;
        }
        // Caught up with what it saw. Announce it is idle, then look once more: an append
        // that published its records before the announcement is seen here, one after it
        // sees `idle` and unparks (the fences pair with `DispatchState::wake`).
        inner.dispatch.idle.store(true, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        if inner.commitlog.max_offset() == inner.dispatch.reput_from()
            && !inner.dispatch.stop.load(Ordering::Acquire)
        {
            // Until an append or `stop` unparks it; a spurious return just looks again.
            std::thread::park();
        }
        inner.dispatch.idle.store(false, Ordering::SeqCst);
    }
}
