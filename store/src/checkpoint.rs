//! The checkpoint file (RocketMQ `StoreCheckpoint`, docs/store.md#checkpoint).
//!
//! ```text
//! 4 KiB file:  0 physicMsgTimestamp   8 logicsMsgTimestamp   16 indexMsgTimestamp
//!             24 masterFlushedOffset  32 confirmPhyOffset (5.x; written as 0)
//! ```
//!
//! `masterFlushedOffset` is what a slave was told of its master's flushed offset
//! (RESET_MASTER_FLUSH_OFFSET); it is kept and reported, as Apache keeps it.
//!
//! Each timestamp is the store time of a record up to which the commitlog, the
//! consume queues and the index (respectively) are known to be on disk. Abnormal
//! recovery starts from the newest commitlog file whose first record is older than
//! the smallest of them minus 3 s.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use vostok_remoting::support::sync::MutexExt;

use crate::error::{Result, StoreError};

const FILE_SIZE: u64 = 4096;
const SAFETY_MARGIN_MS: i64 = 3000;

pub(crate) struct Checkpoint {
    path: PathBuf,
    file: Mutex<File>,
    physic: AtomicI64,
    logics: AtomicI64,
    index: AtomicI64,
    master_flushed: AtomicI64,
    /// What the file holds, to skip writes when nothing changed.
    written: Mutex<[i64; 4]>,
}

impl Checkpoint {
    pub(crate) fn load(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", path, e))?
            .len();
        let mut buf = [0u8; 32];
        if len >= 32 {
            file.read_exact_at(&mut buf, 0)
                .map_err(|e| StoreError::io("read", path, e))?;
        }
        if len < FILE_SIZE {
            file.set_len(FILE_SIZE)
                .map_err(|e| StoreError::io("extend", path, e))?;
        }
        let long = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[i..i + 8]);
            i64::from_be_bytes(b)
        };
        Ok(Checkpoint {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            physic: AtomicI64::new(long(0)),
            logics: AtomicI64::new(long(8)),
            index: AtomicI64::new(long(16)),
            master_flushed: AtomicI64::new(long(24)),
            written: Mutex::new([long(0), long(8), long(16), long(24)]),
        })
    }

    pub(crate) fn physic_msg_timestamp(&self) -> i64 {
        self.physic.load(Ordering::Acquire)
    }
    pub(crate) fn logics_msg_timestamp(&self) -> i64 {
        self.logics.load(Ordering::Acquire)
    }
    pub(crate) fn index_msg_timestamp(&self) -> i64 {
        self.index.load(Ordering::Acquire)
    }
    pub(crate) fn set_physic_msg_timestamp(&self, ts: i64) {
        self.physic.fetch_max(ts, Ordering::AcqRel);
    }
    pub(crate) fn set_logics_msg_timestamp(&self, ts: i64) {
        self.logics.fetch_max(ts, Ordering::AcqRel);
    }
    pub(crate) fn set_index_msg_timestamp(&self, ts: i64) {
        self.index.fetch_max(ts, Ordering::AcqRel);
    }
    pub(crate) fn master_flushed_offset(&self) -> i64 {
        self.master_flushed.load(Ordering::Acquire)
    }
    pub(crate) fn set_master_flushed_offset(&self, offset: i64) {
        self.master_flushed.store(offset, Ordering::Release);
    }

    /// Store time before which commitlog and consume queues are durable, minus a
    /// safety margin (RocketMQ `getMinTimestamp`).
    pub(crate) fn min_timestamp(&self) -> i64 {
        (self.physic_msg_timestamp().min(self.logics_msg_timestamp()) - SAFETY_MARGIN_MS).max(0)
    }

    /// Like [`Checkpoint::min_timestamp`], also bounded by the index.
    pub(crate) fn min_timestamp_index(&self) -> i64 {
        self.min_timestamp().min(self.index_msg_timestamp())
    }

    /// Writes the three timestamps and the master's flushed offset, and syncs the file.
    pub(crate) fn flush(&self) -> Result<()> {
        let values = [
            self.physic_msg_timestamp(),
            self.logics_msg_timestamp(),
            self.index_msg_timestamp(),
            self.master_flushed_offset(),
        ];
        let mut written = self.written.locked();
        if *written == values {
            return Ok(());
        }
        let mut buf = [0u8; 40];
        for (i, v) in values.iter().enumerate() {
            buf[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
        }
        let file = self.file.locked();
        file.write_all_at(&buf, 0)
            .and_then(|()| file.sync_data())
            .map_err(|e| StoreError::io("write", &self.path, e))?;
        *written = values;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_rocketmq_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        let c = Checkpoint::load(&path).unwrap();
        assert_eq!(c.min_timestamp(), 0);
        c.set_physic_msg_timestamp(10_000);
        c.set_logics_msg_timestamp(9_000);
        c.set_index_msg_timestamp(5_000);
        c.set_logics_msg_timestamp(1); // never backwards
        c.set_master_flushed_offset(4_096);
        c.flush().unwrap();
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(raw.len(), 4096);
        assert_eq!(&raw[0..8], &10_000i64.to_be_bytes());
        assert_eq!(&raw[8..16], &9_000i64.to_be_bytes());
        assert_eq!(&raw[16..24], &5_000i64.to_be_bytes());
        assert_eq!(&raw[24..32], &4_096i64.to_be_bytes());
        let again = Checkpoint::load(&path).unwrap();
        assert_eq!(again.master_flushed_offset(), 4_096);
        assert_eq!(again.min_timestamp(), 6_000);
        assert_eq!(again.min_timestamp_index(), 5_000);
    }
}
