//! The put path: validation, append, group commit. (Parking a delayed message in
//! `SCHEDULE_TOPIC_XXXX` is the broker's business; the store only derives the
//! delivery time of such a record when it dispatches it.)

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use vostok_remoting::protocol::message::id::push_offset_msg_id;
use vostok_remoting::protocol::message::property::{self, MAX_PROPERTIES_LEN};
use vostok_remoting::protocol::message::sysflag::{transaction_type, TRANSACTION_NOT_TYPE};
use vostok_remoting::support::defer;

use super::MessageStore;
use crate::commitlog::append::{AppendError, Prepared};
use crate::config::FlushDiskType;
use crate::message::MessageInner;
use crate::result::{AppendResult, PutMessageResult, PutMessageStatus};
use crate::stats::Stats;
use crate::store_inner::StoreInner;

thread_local! {
    /// The stores (their `StoreInner`'s address) with appends made by the unit of work
    /// running on this thread: each is announced (and with the write buffer, committed
    /// first) once when the unit ends, however many appends it made.
    static UNIT_APPENDS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// After an append (outside the append lock): what makes the records readable and
/// announces them. Inside a unit of work (one poll of a connection's reader: every
/// frame one socket read brought) that is put off to the unit's end, once per unit, and
/// done on this thread: with the write buffer one `pwrite` for the burst, then one
/// dispatch pass over all of the unit's records (whose held pulls are answered right
/// after), with no thread woken; the answers to the unit's sends are on their way
/// meanwhile. Outside a unit (gRPC, timers, the dispatcher's own appends) the commit
/// thread, or without the write buffer the dispatcher, is woken at once, and a single
/// record is dispatched on this thread when no dispatch is running. A batch into the
/// write buffer always goes to the commit thread.
///
/// A writer that waits for room in the buffer, or for its pending bytes to be written
/// before it rolls to the next file, never waits for this deferred commit: that wait
/// wakes the commit thread (`Pool::wait_committed`).
fn announce_after_append(inner: &Arc<StoreInner>, records: usize) {
    // A batch into the write buffer goes to the commit thread even in a unit: its
    // `pwrite` and dispatch at the unit's end held up the connection's next request
    // (batch x32, 1 task: 256,000 -> 189,000 msg/s).
    let batch_into_buffer = records > 1 && inner.commitlog.pool().is_some();
    if batch_into_buffer || !defer::in_unit() {
        announce_outside_unit(inner, records);
        return;
    }
    let key = Arc::as_ptr(inner) as usize;
    if UNIT_APPENDS.with(|u| u.borrow().contains(&key)) {
        return;
    }
    let at_end = UnitEnd {
        inner: Arc::clone(inner),
        key,
        records,
        ran: false,
    };
    // In a unit (checked above), so taken; given back, it would announce them itself.
    if defer::defer(Box::new(move || at_end.run())).is_ok() {
        UNIT_APPENDS.with(|u| u.borrow_mut().push(key));
    }
}

/// Announces `records` just appended outside a unit of work, or left by one that
/// ended without running its work: wakes the thread that takes them over.
fn announce_outside_unit(i: &StoreInner, records: usize) {
    if i.commitlog.pool().is_some() {
        i.commitlog.wake_committer();
    } else if records == 1 {
        // Cheaper than a thread switch for the dispatcher (see `dispatch_or_wake`).
        i.announce_few();
    } else {
        i.dispatch.wake();
        i.ha.on_append();
    }
}

/// The work registered for the end of a unit. Dropped without running (the unit
/// panicked), it leaves the records to the store's threads.
struct UnitEnd {
    inner: Arc<StoreInner>,
    key: usize,
    /// Records of the append that registered it.
    records: usize,
    ran: bool,
}

impl UnitEnd {
    fn run(mut self) {
        self.ran = true;
        // First: an append from here on is not covered by this pass and needs its own.
        self.unregister();
        let i = &self.inner;
        if i.commitlog.pool().is_none() {
            i.announce_few();
            return;
        }
        match i.commitlog.try_commit_pending() {
            Some(Ok(Some(_))) => i.announce_few(),
            // Someone committed it meanwhile and dispatched it.
            Some(Ok(None)) => {}
            Some(Err(e)) => {
                tracing::warn!(error = %e, "could not write the write buffer to the commitlog; left to the commit thread");
                i.commitlog.wake_committer();
            }
            // A commit is running elsewhere (it may have read the pending end before
            // this unit's appends): the commit thread, if idle, takes them.
            None => i.commitlog.wake_committer(),
        }
    }

    fn unregister(&self) {
        let _ = UNIT_APPENDS.try_with(|u| u.borrow_mut().retain(|&k| k != self.key));
    }
}

impl Drop for UnitEnd {
    fn drop(&mut self) {
        if self.ran {
            return;
        }
        self.unregister();
        announce_outside_unit(&self.inner, self.records);
    }
}

/// A topic the store can use as a directory name and encode in a record.
fn valid_topic(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= i16::MAX as usize
        && topic != "."
        && topic != ".."
        && !topic.contains(['/', '\\', '\0'])
}

/// Bytes of one message in a SEND_BATCH_MESSAGE body (docs/message.md#batch-body).
fn batch_block_len(m: &MessageInner) -> usize {
    22 + m.body.len() + m.properties.len()
}

impl MessageStore {
    /// Appends one message. With SYNC_FLUSH (and the message's `WAIT` not `false`)
    /// it returns once a group commit made the record durable, or FLUSH_DISK_TIMEOUT
    /// after `syncFlushTimeout` (the record is written either way).
    pub async fn put_message(&self, msg: MessageInner) -> PutMessageResult {
        // One message needs no list of its own (two allocations per send less).
        let prepared = self.writable().and_then(|()| {
            self.check(&msg)?;
            self.prepare_one(msg)
        });
        let result = match prepared {
            Ok(p) => self.append_and_wait(std::slice::from_ref(&p)).await,
            Err(status) => PutMessageResult::failed(status),
        };
        if result.append.is_none() {
            Stats::add(&self.inner().stats.put_failed, 1);
        }
        result
    }

    /// Appends a batch of the same topic and queue as one unit: consecutive records
    /// in one file with consecutive queue offsets.
    pub async fn put_messages(&self, msgs: Vec<MessageInner>) -> PutMessageResult {
        self.put(msgs, true).await
    }

    fn writable(&self) -> Result<(), PutMessageStatus> {
        let i = self.inner();
        if i.state.shutdown.load(Ordering::Acquire)
            || i.write_failed()
            || i.ha.replica.load(Ordering::Acquire)
        {
            return Err(PutMessageStatus::ServiceNotAvailable);
        }
        if i.state.disk_full.load(Ordering::Acquire) {
            return Err(PutMessageStatus::DiskFull);
        }
        if self.is_os_page_cache_busy() {
            return Err(PutMessageStatus::OsPageCacheBusy);
        }
        Ok(())
    }

    fn prepare(
        &self,
        msgs: Vec<MessageInner>,
        batch: bool,
    ) -> Result<Vec<Prepared>, PutMessageStatus> {
        let max = self.inner().commitlog.max_message_size;
        let Some(first) = msgs.first() else {
            return Err(PutMessageStatus::MessageIllegal);
        };
        for msg in &msgs {
            self.check(msg)?;
            if batch {
                let delayed = property::find(&msg.properties, property::DELAY_TIME_LEVEL)
                    .and_then(|l| l.parse::<i32>().ok())
                    .is_some_and(|l| l > 0);
                if msg.topic != first.topic
                    || msg.queue_id != first.queue_id
                    || transaction_type(msg.sys_flag) != TRANSACTION_NOT_TYPE
                    || delayed
                {
                    tracing::warn!(topic = %first.topic, "batch mixes queues, transactions or delays");
                    return Err(PutMessageStatus::MessageIllegal);
                }
            }
        }
        if batch && msgs.iter().map(batch_block_len).sum::<usize>() > max {
            tracing::warn!(topic = %first.topic, "batch exceeds maxMessageSize");
            return Err(PutMessageStatus::MessageIllegal);
        }
        let mut out = Vec::with_capacity(msgs.len());
        for msg in msgs {
            out.push(self.prepare_one(msg)?);
        }
        Ok(out)
    }

    /// The checks of every message: topic, queue and property string.
    fn check(&self, msg: &MessageInner) -> Result<(), PutMessageStatus> {
        if !valid_topic(&msg.topic) || msg.queue_id < 0 {
            tracing::warn!(topic = %msg.topic, queue_id = msg.queue_id, "illegal topic or queue id");
            return Err(PutMessageStatus::MessageIllegal);
        }
        if msg.properties.contains('\0') {
            tracing::warn!(topic = %msg.topic, "NUL in properties");
            return Err(PutMessageStatus::MessageIllegal);
        }
        if msg.properties.len() > MAX_PROPERTIES_LEN {
            tracing::warn!(topic = %msg.topic, len = msg.properties.len(), "properties too long");
            return Err(PutMessageStatus::PropertiesSizeExceeded);
        }
        Ok(())
    }

    /// The record of one checked message, within `maxMessageSize`.
    fn prepare_one(&self, msg: MessageInner) -> Result<Prepared, PutMessageStatus> {
        let max = self.inner().commitlog.max_message_size;
        let p = Prepared::new(msg);
        if p.len > max {
            tracing::warn!(topic = %p.msg.topic, size = p.len, max, "message exceeds maxMessageSize");
            return Err(PutMessageStatus::MessageIllegal);
        }
        Ok(p)
    }

    async fn put(&self, msgs: Vec<MessageInner>, batch: bool) -> PutMessageResult {
        let i = self.inner();
        let result = match self.writable().and_then(|()| self.prepare(msgs, batch)) {
            Ok(prepared) => self.append_and_wait(&prepared).await,
            Err(status) => PutMessageResult::failed(status),
        };
        if result.append.is_none() {
            Stats::add(&i.stats.put_failed, 1);
        }
        result
    }

    async fn append_and_wait(&self, prepared: &[Prepared]) -> PutMessageResult {
        let i = self.inner();
        let appended = match i.commitlog.append(prepared) {
            Ok(a) => a,
            Err(AppendError::TooLarge) => {
                return PutMessageResult::failed(PutMessageStatus::MessageIllegal)
            }
            Err(AppendError::PartialRawRecord)
            | Err(AppendError::Closed)
            | Err(AppendError::WriteFailed) => {
                return PutMessageResult::failed(PutMessageStatus::ServiceNotAvailable)
            }
            Err(AppendError::NoSpace(e)) => {
                tracing::debug!(error = %e, "put refused: no room for the next commitlog file");
                return PutMessageResult::failed(PutMessageStatus::DiskFull);
            }
            Err(AppendError::CreateFile(e)) => {
                tracing::error!(error = %e, "could not create a commitlog file");
                return PutMessageResult::failed(PutMessageStatus::CreateMappedFileFailed);
            }
        };
        announce_after_append(&self.inner, prepared.len());
        Stats::add(&i.stats.put_times, prepared.len() as u64);
        Stats::add(&i.stats.put_bytes, appended.wrote_bytes as u64);

        let mut msg_id = String::with_capacity(prepared.len() * 33);
        let mut offset = appended.wrote_offset;
        for (k, p) in prepared.iter().enumerate() {
            if k > 0 {
                msg_id.push(',');
            }
            push_offset_msg_id(&mut msg_id, p.msg.store_host, offset);
            offset += p.len as i64;
        }
        let sync_flush = i.config.flush_disk_type == FlushDiskType::SyncFlush;
        let sync_master = i.ha.sync_master.load(Ordering::Acquire);
        // The property string is searched only where its `WAIT` can matter.
        let wait_store_ok = (sync_flush || sync_master)
            && property::find(&prepared[0].msg.properties, property::WAIT_STORE_MSG_OK)
                != Some("false");
        let flush = wait_store_ok && sync_flush;
        let replicate = wait_store_ok && sync_master;
        let end = appended.wrote_offset + appended.wrote_bytes as i64;
        let status = if flush || replicate {
            // Boxed: inline, the waits (timers, channels) would size the future of
            // every put, which an ASYNC_FLUSH send moves several times on its way.
            Box::pin(self.wait_stored(end, flush, replicate)).await
        } else {
            PutMessageStatus::PutOk
        };
        PutMessageResult {
            status,
            append: Some(AppendResult {
                wrote_offset: appended.wrote_offset,
                wrote_bytes: appended.wrote_bytes,
                msg_id,
                store_timestamp: appended.store_timestamp,
                queue_offset: appended.queue_offset,
                msg_num: prepared.len(),
            }),
        }
    }

    /// Waits until `end` is flushed (`flush`) and acknowledged by a slave
    /// (`replicate`), both at once; a slave's failure wins, as in RocketMQ (both are
    /// "stored, but" answers).
    async fn wait_stored(&self, end: i64, flush: bool, replicate: bool) -> PutMessageStatus {
        let (flushed, replicated) = tokio::join!(
            async {
                if flush {
                    self.wait_durable(end).await
                } else {
                    PutMessageStatus::PutOk
                }
            },
            async {
                if replicate {
                    self.wait_replicated(end).await
                } else {
                    PutMessageStatus::PutOk
                }
            }
        );
        if replicated != PutMessageStatus::PutOk {
            replicated
        } else {
            flushed
        }
    }

    /// Group commit: waits until `end` is flushed.
    async fn wait_durable(&self, end: i64) -> PutMessageStatus {
        let i = self.inner();
        if i.commitlog.flushed_offset() >= end {
            return PutMessageStatus::PutOk;
        }
        let done = i.commitlog.group_commit.register(end);
        match tokio::time::timeout(i.config.sync_flush_timeout, done).await {
            Ok(Ok(true)) => PutMessageStatus::PutOk,
            _ => {
                Stats::add(&i.stats.flush_timeouts, 1);
                tracing::warn!(offset = end, "sync flush did not complete in time");
                PutMessageStatus::FlushDiskTimeout
            }
        }
    }
}
