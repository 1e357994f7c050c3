//! The dispatcher ("reput", docs/store.md#dispatch): follows the commitlog and builds the
//! consume queues and the index from the records, then tells the arrival listener.
//!
//! Everything the consume queues and the index hold is derived from the commitlog
//! here, and only here, so both can always be rebuilt from it: recovery feeds old
//! records through the same [`StoreInner::dispatch_record`].
//!
//! The thread parks when it has caught up; every append unparks it (cheap when it
//! is already running), so a new message is visible and announced within
//! microseconds, not after a polling period.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::record::RecordView;
use vostok_remoting::protocol::topic::SCHEDULE_TOPIC;
use vostok_remoting::support::latency_trace::{self, Stage};
use vostok_remoting::support::sched;
use vostok_remoting::support::sync::RwLockExt;

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
    /// max offset; returns how many records it dispatched.
    pub(crate) fn dispatch_available(&self, notify: bool) -> Result<usize> {
        self.dispatch_logged(notify, None)
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
            self.dispatch.announce(off);
        }
        Ok(dispatched)
    }
}

/// While records keep coming, the dispatcher looks for new ones this often, unwoken.
const POLL_INTERVAL: Duration = Duration::from_micros(200);
/// After this long without records it sleeps until an append wakes it.
const IDLE_AFTER: Duration = Duration::from_millis(10);

/// The dispatcher thread body.
pub(crate) fn run(inner: &StoreInner) {
    let _ = inner.dispatch.set_thread(std::thread::current());
    // Timer slack (50 µs by default) would add a quarter of POLL_INTERVAL to every
    // message's way to its consumers.
    sched::precise_timeouts();
    let mut failing = false;
    let mut last_record = Instant::now();
    loop {
        match inner.dispatch_available(true) {
            Ok(n) if n > 0 => {
                failing = false;
                last_record = Instant::now();
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
            std::thread::park_timeout(Duration::from_millis(500));
            continue;
        }
        // Nothing complete to dispatch: poll while a stream is on (also when bytes past
        // the reput offset are not a whole record yet), sleep when it went quiet.
        if last_record.elapsed() < IDLE_AFTER
            || inner.commitlog.max_offset() != inner.dispatch.reput_from()
        {
            // A stream: poll again shortly instead of costing every append a wake-up.
            std::thread::park_timeout(POLL_INTERVAL);
            continue;
        }
        inner.dispatch.idle.store(true, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        if inner.commitlog.max_offset() == inner.dispatch.reput_from()
            && !inner.dispatch.stop.load(Ordering::Acquire)
        {
            std::thread::park_timeout(Duration::from_millis(100));
        }
        inner.dispatch.idle.store(false, Ordering::SeqCst);
    }
}
