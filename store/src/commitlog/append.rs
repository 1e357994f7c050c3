//! Appending records under the append lock (RocketMQ `CommitLog.putMessage(s)` and
//! `DefaultAppendMessageCallback`).
//!
//! Everything that does not need the lock (validation, body CRC, record length) is
//! done by the caller first; under the lock the writer assigns the store timestamp
//! (never going backwards, so the commitlog is ordered by time), the queue offsets and
//! the physical offset, encodes the records straight into the mapped file and
//! publishes the new end.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use vostok_remoting::protocol::message::record::{RecordFields, BLANK_MAGIC};
use vostok_remoting::protocol::message::sysflag::{
    transaction_type, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE,
};

use super::{CommitLog, END_FILE_MIN_BLANK_LEN};
use crate::allocate::TakeError;
use crate::error::StoreError;
use crate::mapped_file::MappedFile;
use crate::message::MessageInner;

/// State owned by the append lock.
pub(crate) struct Writer {
    /// The file being appended to.
    pub(crate) current: Option<Arc<MappedFile>>,
    /// End of the bytes written.
    pub(crate) write_pos: i64,
    pub(crate) last_store_timestamp: i64,
    /// Next queue offset per topic and queue id.
    pub(crate) queue_offsets: HashMap<String, HashMap<i32, i64>>,
    /// Set by shutdown: no append may start after the final flush.
    pub(crate) closed: bool,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Writer {
            current: None,
            write_pos: 0,
            last_store_timestamp: 0,
            queue_offsets: HashMap::new(),
            closed: false,
        }
    }

    /// The next queue offset of a queue (0 if it has none yet).
    pub(crate) fn queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.queue_offsets
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .copied()
            .unwrap_or(0)
    }

    fn queue_offset_mut(&mut self, topic: &str, queue_id: i32) -> &mut i64 {
        if !self.queue_offsets.contains_key(topic) {
            self.queue_offsets.insert(topic.to_owned(), HashMap::new());
        }
        let queues = self.queue_offsets.get_mut(topic).expect("inserted above");
        queues.entry(queue_id).or_insert(0)
    }

    /// Raises a queue's next offset to at least `next` (records received raw).
    pub(crate) fn bump_queue_offset(&mut self, topic: &str, queue_id: i32, next: i64) {
        let slot = self.queue_offset_mut(topic, queue_id);
        if *slot < next {
            *slot = next;
        }
    }
}

/// Whether a record of this sysFlag gets a consume-queue entry and a queue offset.
pub(crate) fn gets_queue_offset(sys_flag: i32) -> bool {
    matches!(
        transaction_type(sys_flag),
        TRANSACTION_NOT_TYPE | TRANSACTION_COMMIT_TYPE
    )
}

/// A message ready to append: validated, with its body CRC and record length.
pub(crate) struct Prepared {
    pub(crate) msg: MessageInner,
    pub(crate) body_crc: u32,
    pub(crate) len: usize,
}

impl Prepared {
    pub(crate) fn new(msg: MessageInner) -> Self {
        let body_crc = vostok_remoting::protocol::message::record::crc32(&msg.body);
        let mut p = Prepared {
            msg,
            body_crc,
            len: 0,
        };
        p.len = p.fields(0, 0, 0).encoded_len();
        p
    }

    fn fields(
        &self,
        queue_offset: i64,
        physical_offset: i64,
        store_timestamp: i64,
    ) -> RecordFields<'_> {
        let m = &self.msg;
        RecordFields {
            body_crc: self.body_crc,
            queue_id: m.queue_id,
            flag: m.flag,
            queue_offset,
            physical_offset,
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            born_host: m.born_host,
            store_timestamp,
            store_host: m.store_host,
            reconsume_times: m.reconsume_times,
            prepared_transaction_offset: m.prepared_transaction_offset,
            body: &m.body,
            topic: &m.topic,
            properties: &m.properties,
        }
    }
}

/// Where a put landed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Appended {
    pub(crate) wrote_offset: i64,
    pub(crate) wrote_bytes: usize,
    pub(crate) store_timestamp: i64,
    pub(crate) queue_offset: i64,
}

#[derive(Debug)]
pub(crate) enum AppendError {
    /// The batch can never fit in one file.
    TooLarge,
    /// A new file could not be created.
    CreateFile(StoreError),
    /// The file system has no room for the next file.
    NoSpace(StoreError),
    /// A replica holds part of a record received from its master.
    PartialRawRecord,
    /// The store is shutting down.
    Closed,
    /// Writing the write buffer to the commitlog failed (see `pool::Pool::failed`).
    WriteFailed,
}

impl From<TakeError> for AppendError {
    fn from(e: TakeError) -> Self {
        match e {
            TakeError::NoSpace(e) => AppendError::NoSpace(e),
            TakeError::Failed(e) => AppendError::CreateFile(e),
        }
    }
}

impl CommitLog {
    /// Appends `batch` (one message, or one batch of the same topic and queue) as one
    /// unit in one file, with consecutive queue offsets.
    pub(crate) fn append(&self, batch: &[Prepared]) -> Result<Appended, AppendError> {
        let total: usize = batch.iter().map(|p| p.len).sum();
        if batch.is_empty() || total + END_FILE_MIN_BLANK_LEN > self.file_size {
            return Err(AppendError::TooLarge);
        }
        if self.pool().is_some_and(|p| total > p.capacity()) {
            return Err(AppendError::TooLarge);
        }
        let mut writer = self.lock_writer();
        let now = vostok_remoting::support::time::now_millis();
        self.lock_begin_ms.store(now.max(1), Ordering::Relaxed);
        let result = self.append_locked(&mut writer, batch, total, now);
        self.lock_begin_ms.store(0, Ordering::Relaxed);
        result
    }

    /// The file to append to: the current one, or the one at the write position.
    pub(crate) fn writable_file(&self, writer: &mut Writer) -> Result<Arc<MappedFile>, TakeError> {
        if let Some(f) = &writer.current {
            if writer.write_pos < f.end() && writer.write_pos >= f.base() {
                return Ok(Arc::clone(f));
            }
        }
        let file = self.file_at(self.files.file_base(writer.write_pos))?;
        writer.current = Some(Arc::clone(&file));
        Ok(file)
    }

    /// The file starting at `base`: the last one, or the next one from the
    /// allocation thread (see `allocate`).
    fn file_at(&self, base: i64) -> Result<Arc<MappedFile>, TakeError> {
        match self.files.last() {
            // A file from before the restart (perhaps sparse, as RocketMQ creates
            // them): the appends reserve its blocks as they reach them.
            Some(last) if last.base() == base => Ok(last),
            _ => self.allocator.take(&self.files, base),
        }
    }

    /// Reserves the blocks of the file holding the write position up to a step past
    /// it, if the file exists, so that the first append after a restart does not
    /// (called at open).
    pub(crate) fn reserve_write_file(&self) -> Result<(), StoreError> {
        let end = self.write_end();
        let base = self.files.file_base(end);
        match self.files.last() {
            Some(last) if last.base() == base => last.reserve((end - base) as usize + 1),
            _ => Ok(()),
        }
    }

    /// Start of the file the writer needs after the current one (the first one for
    /// an empty commitlog): what the allocation thread keeps ready.
    pub(crate) fn next_file_base(&self) -> i64 {
        match self.files.last() {
            Some(last) => last.end(),
            None => self.files.file_base(self.write_end()),
        }
    }

    /// Publishes `end` as the end of complete data.
    pub(crate) fn publish(&self, writer: &mut Writer, end: i64, store_timestamp: i64) {
        writer.write_pos = end;
        self.write_end.store(end, Ordering::Release);
        self.max_offset.store(end, Ordering::Release);
        self.wake_prefaulter(end);
        if store_timestamp > 0 {
            writer.last_store_timestamp = store_timestamp;
            // After the offsets: whoever sees this timestamp sees the record's end.
            self.last_store_timestamp
                .store(store_timestamp, Ordering::Release);
        }
    }

    /// Whether bytes received from a master end inside a record (the written end past
    /// the readable one), which a local append must not follow. The caller holds the
    /// append lock.
    fn holds_partial_raw_record(&self) -> bool {
        match self.pool() {
            None => self.write_end() != self.max_offset(),
            // The commit thread publishes without the append lock: the written end,
            // then the readable end, then `committed`. Read in the opposite order, a
            // commit caught half-way shows the readable end at or past `committed`;
            // only a received partial record leaves it behind (`append_raw` resets
            // `committed` to the written end).
            Some(pool) => {
                let committed = pool.committed();
                self.max_offset() < committed
            }
        }
    }

    fn append_locked(
        &self,
        writer: &mut Writer,
        batch: &[Prepared],
        total: usize,
        now: i64,
    ) -> Result<Appended, AppendError> {
        if writer.closed {
            return Err(AppendError::Closed);
        }
        if self.pool().is_some_and(|p| p.failed()) {
            return Err(AppendError::WriteFailed);
        }
        if self.holds_partial_raw_record() {
            return Err(AppendError::PartialRawRecord);
        }
        let mut file = self.writable_file(writer)?;
        let mut pos = (writer.write_pos - file.base()) as usize;
        if total + END_FILE_MIN_BLANK_LEN > file.size() - pos {
            // The next file first: without it this file stays open for smaller puts.
            let next = self.file_at(file.end())?;
            let remaining = file.size() - pos;
            if let Some(pool) = self.pool() {
                // Nothing pending may be left behind in this file.
                if !pool.wait_committed(writer.write_pos) {
                    return Err(AppendError::WriteFailed);
                }
            }
            if remaining >= END_FILE_MIN_BLANK_LEN {
                reserve(&file, pos + END_FILE_MIN_BLANK_LEN)?;
                let mut blank = [0u8; END_FILE_MIN_BLANK_LEN];
                blank[..4].copy_from_slice(&(remaining as i32).to_be_bytes());
                blank[4..].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
                if self.pool().is_some() {
                    // SAFETY: as below; the commit thread has nothing to write.
                    unsafe { file.pwrite_at(pos, &blank) }.map_err(AppendError::CreateFile)?;
                } else {
                    self.begin_write(file.base() + (pos + END_FILE_MIN_BLANK_LEN) as i64);
                    // SAFETY: we hold the append lock (single writer) and `pos` is at
                    // the unpublished write position.
                    unsafe { file.write_at(pos, &blank) };
                }
            }
            file.set_wrote(file.size());
            self.publish(writer, file.end(), 0);
            if let Some(pool) = self.pool() {
                pool.reset(file.end());
            }
            writer.current = Some(Arc::clone(&next));
            file = next;
            pos = 0;
        }

        // Nothing is written where the file system has not given the blocks: a full
        // disk refuses the put (DISK_FULL) instead of faulting on the write.
        reserve(&file, pos + total)?;
        let store_timestamp = now.max(writer.last_store_timestamp);
        let wrote_offset = file.base() + pos as i64;
        if let Some(pool) = self.pool() {
            // Room in the ring before the queue offsets are taken: a failed write ends
            // the wait, and the put must then leave no gap in its queue.
            if !pool.wait_room(wrote_offset + total as i64) {
                return Err(AppendError::WriteFailed);
            }
        }
        let first = &batch[0].msg;
        let counted = gets_queue_offset(first.sys_flag);
        // Reserve the queue offsets now (one table lookup); nothing below can fail.
        let first_queue_offset = if counted {
            let slot = writer.queue_offset_mut(&first.topic, first.queue_id);
            let first_offset = *slot;
            *slot += batch.len() as i64;
            first_offset
        } else {
            0
        };
        if let Some(pool) = self.pool() {
            self.encode_into_pool(
                pool,
                writer,
                batch,
                counted,
                first_queue_offset,
                wrote_offset,
                store_timestamp,
            );
            return Ok(Appended {
                wrote_offset,
                wrote_bytes: total,
                store_timestamp,
                queue_offset: first_queue_offset,
            });
        }
        self.begin_write(file.base() + (pos + total) as i64);
        for (queue_offset, p) in (first_queue_offset..).zip(batch) {
            let physical_offset = file.base() + pos as i64;
            let fields = p.fields(
                if counted { queue_offset } else { 0 },
                physical_offset,
                store_timestamp,
            );
            // SAFETY: single writer under the append lock; the range is past the
            // published position and is published only below, after the slice dies.
            let mut dst = unsafe { file.slice_mut(pos, p.len) };
            fields.encode(&mut dst);
            debug_assert!(dst.is_empty(), "record length matches its encoding");
            pos += p.len;
        }
        file.set_wrote(pos);
        self.publish(writer, file.base() + pos as i64, store_timestamp);
        Ok(Appended {
            wrote_offset,
            wrote_bytes: total,
            store_timestamp,
            queue_offset: first_queue_offset,
        })
    }
}

impl CommitLog {
    /// The write buffer's append: the records encoded into the ring (the caller has
    /// waited for room), then handed to the commit thread. Nothing is published to
    /// readers here.
    #[allow(clippy::too_many_arguments)]
    fn encode_into_pool(
        &self,
        pool: &super::pool::Pool,
        writer: &mut Writer,
        batch: &[Prepared],
        counted: bool,
        first_queue_offset: i64,
        wrote_offset: i64,
        store_timestamp: i64,
    ) {
        let total: usize = batch.iter().map(|p| p.len).sum();
        let end = wrote_offset + total as i64;
        let mut offset = wrote_offset;
        for (queue_offset, p) in (first_queue_offset..).zip(batch) {
            let fields = p.fields(
                if counted { queue_offset } else { 0 },
                offset,
                store_timestamp,
            );
            // SAFETY: single writer under the append lock; `offset..offset+len` is
            // past the pending end and within the ring's room (waited for by the
            // caller).
            match unsafe { pool.slice_mut(offset, p.len) } {
                Some(mut dst) => {
                    fields.encode(&mut dst);
                    debug_assert!(dst.is_empty(), "record length matches its encoding");
                }
                None => {
                    // The record straddles the ring's end: encoded aside, copied in two.
                    let mut scratch = Vec::with_capacity(p.len);
                    fields.encode(&mut scratch);
                    debug_assert_eq!(scratch.len(), p.len, "record length matches its encoding");
                    // SAFETY: as above.
                    unsafe { pool.put(offset, &scratch) };
                }
            }
            offset += p.len as i64;
        }
        writer.write_pos = end;
        writer.last_store_timestamp = store_timestamp;
        pool.append(end, store_timestamp);
    }
}

/// Reserves the blocks of `file` up to `upto` before the writer writes there; cheap
/// when the pre-fault thread has reserved them already (the usual case).
pub(crate) fn reserve(file: &MappedFile, upto: usize) -> Result<(), TakeError> {
    /// When the last refusal was logged (ms): at most one line a second.
    static LOGGED: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
    file.reserve(upto).map_err(|e| {
        let e = TakeError::classify(e);
        let now = vostok_remoting::support::time::now_millis();
        let logged = LOGGED.load(Ordering::Relaxed);
        if let (TakeError::NoSpace(e), true) = (&e, now - logged >= 1000) {
            LOGGED.store(now, Ordering::Relaxed);
            tracing::warn!(file = %file.path().display(), error = %e, "no room for the next commitlog blocks: refusing the put (DISK_FULL)");
        }
        e
    })
}
