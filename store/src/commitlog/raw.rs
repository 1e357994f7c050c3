//! The replication seam: raw commitlog bytes out (master) and in (slave).
//!
//! A master hands out the bytes of its files exactly as stored, from any offset up
//! to the durable end, never across a file boundary ([`CommitLog::read_raw`]). A
//! slave appends what it receives at its own write end ([`CommitLog::append_raw`]);
//! chunks may end in the middle of a record. Received bytes are validated record by
//! record (magic, lengths, CRC, PHYSICALOFFSET) before they are written, and only
//! complete records are published to the dispatcher, which then builds consume
//! queues and index exactly as for local appends. The queue offsets carried by the
//! records are kept, and the queue offset table follows them so that the slave can
//! take over as a master.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use vostok_remoting::protocol::message::record::RecordView;

use super::append::gets_queue_offset;
use super::scan::{scan, Scanned};
use super::CommitLog;
use crate::allocate::TakeError;
use crate::error::{Result, StoreError};

impl CommitLog {
    /// Up to `max_bytes` raw bytes from `from`, within one file and below the durable
    /// (flushed) end of complete records. `None` if nothing is available there.
    pub(crate) fn read_raw(&self, from: i64, max_bytes: usize) -> Option<Bytes> {
        self.read_until(
            from,
            max_bytes,
            self.flushed_offset().min(self.max_offset()),
        )
    }

    /// As [`CommitLog::read_raw`], up to the end of complete records whether flushed
    /// or not (what a master streams to its slaves).
    pub(crate) fn read_written(&self, from: i64, max_bytes: usize) -> Option<Bytes> {
        self.read_until(from, max_bytes, self.max_offset())
    }

    fn read_until(&self, from: i64, max_bytes: usize, durable: i64) -> Option<Bytes> {
        if from < self.min_offset() || from >= durable || max_bytes == 0 {
            return None;
        }
        let file = self.files.find(from)?;
        let end = durable.min(file.end());
        let len = ((end - from) as usize).min(max_bytes);
        Some(file.bytes((from - file.base()) as usize, len))
    }

    /// Appends bytes received from a master at `at`, which must be this commitlog's
    /// write end (for an empty commitlog: any multiple of the file size).
    pub(crate) fn append_raw(&self, at: i64, data: &[u8], verify_crc: bool) -> Result<()> {
        let mut writer = self.lock_writer();
        if writer.closed {
            return Err(StoreError::Shutdown);
        }
        // A master turned replica (controller mode) with the write buffer on: what it
        // appended goes to the files first; received bytes are written directly.
        self.commit_pending()?;
        let file_size = self.file_size as i64;
        if self.files.is_empty() && writer.write_pos == self.max_offset() && at != writer.write_pos
        {
            if at % file_size != 0 || at < 0 {
                return Err(StoreError::RawOffset {
                    at,
                    end: writer.write_pos,
                });
            }
            writer.write_pos = at;
            if let Some(pool) = self.pool() {
                pool.reset(at);
            }
            self.max_offset.store(at, Ordering::Release);
            self.write_end.store(at, Ordering::Release);
            self.flushed_offset.store(at, Ordering::Release);
        }
        if at != writer.write_pos {
            return Err(StoreError::RawOffset {
                at,
                end: writer.write_pos,
            });
        }
        if data.is_empty() {
            return Ok(());
        }

        // Validate the stream from the last complete record: the unpublished tail
        // already written plus the new bytes.
        let start = self.max_offset();
        let mut stream = Vec::with_capacity((at - start) as usize + data.len());
        if at > start {
            let file = self.files.find(start).ok_or(StoreError::RawOffset {
                at,
                end: writer.write_pos,
            })?;
            stream.extend_from_slice(
                file.read((start - file.base()) as usize, (at - start) as usize),
            );
        }
        stream.extend_from_slice(data);
        let end = at + data.len() as i64;
        let mut off = start;
        let mut queue_updates = Vec::new();
        let mut last_timestamp = 0;
        while off < end {
            let base = off - off.rem_euclid(file_size);
            let file_end = base + file_size;
            let avail_end = end.min(file_end);
            let chunk = &stream[(off - start) as usize..(avail_end - start) as usize];
            let pos = (off - base) as usize;
            match scan(chunk, base, pos, self.file_size, verify_crc) {
                Scanned::Message(view) => {
                    note_record(&view, &mut queue_updates);
                    last_timestamp = view.store_timestamp();
                    off += view.total_size() as i64;
                }
                Scanned::Blank => {
                    if end < file_end {
                        break; // the file's zero padding is still to come
                    }
                    off = file_end;
                }
                Scanned::Partial if avail_end < file_end => break,
                Scanned::Partial => {
                    return Err(StoreError::RawData {
                        offset: off,
                        reason: "record crosses the end of its file".into(),
                    })
                }
                Scanned::Invalid(reason) => {
                    return Err(StoreError::RawData {
                        offset: off,
                        reason,
                    })
                }
            }
        }
        let complete_end = off;

        let mut cur = at;
        let mut rest = data;
        while !rest.is_empty() {
            let file = self
                .writable_file(&mut writer)
                .map_err(TakeError::into_error)?;
            let pos = (cur - file.base()) as usize;
            let n = rest.len().min(file.size() - pos);
            super::append::reserve(&file, pos + n).map_err(TakeError::into_error)?;
            self.begin_write(cur + n as i64);
            // SAFETY: single writer under the append lock, writing past the
            // published end of complete records.
            unsafe { file.write_at(pos, &rest[..n]) };
            file.set_wrote(pos + n);
            cur += n as i64;
            writer.write_pos = cur;
            rest = &rest[n..];
        }
        self.write_end.store(cur, Ordering::Release);
        // Keep the pages ahead mapped in, as local appends do (`publish`): otherwise
        // this writer takes the page faults, and zeroes every new page itself.
        self.wake_prefaulter(cur);
        if let Some(pool) = self.pool() {
            pool.reset(cur);
        }
        for (topic, queue_id, next) in queue_updates {
            writer.bump_queue_offset(&topic, queue_id, next);
        }
        if complete_end > start {
            self.max_offset.store(complete_end, Ordering::Release);
            if last_timestamp > 0 {
                writer.last_store_timestamp = writer.last_store_timestamp.max(last_timestamp);
                self.last_store_timestamp
                    .store(writer.last_store_timestamp, Ordering::Release);
            }
        }
        Ok(())
    }
}

/// Notes the queue offset after `view`. Consecutive records of one queue (a batch,
/// a burst of sends) share one entry: one allocation per run, not per record.
fn note_record(view: &RecordView<'_>, updates: &mut Vec<(String, i32, i64)>) {
    if !gets_queue_offset(view.sys_flag()) {
        return;
    }
    let (topic, queue_id, next) = (view.topic(), view.queue_id(), view.queue_offset() + 1);
    match updates.last_mut() {
        Some(last) if last.1 == queue_id && last.0 == topic => last.2 = last.2.max(next),
        _ => updates.push((topic.to_owned(), queue_id, next)),
    }
}
