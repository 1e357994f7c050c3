//! Start-up recovery (docs/store.md#recovery).
//!
//! 1. Consume queues: each is scanned from its third-last file; the first invalid
//!    entry ends it and everything after is zeroed.
//! 2. Commitlog, clean exit (no `abort` file): the last three files are walked
//!    record by record (magic, sizes, CRC, PHYSICALOFFSET); the first invalid record
//!    is the end. Then records past what the consume queues and the index already
//!    hold are dispatched.
//! 3. Commitlog, crash (`abort` present): the walk starts at the newest file whose
//!    first record is older than the checkpoint's safe time (smallest of the
//!    commitlog, consume-queue and index times, minus 3 s) and re-dispatches every
//!    valid record on the way; entries that already exist are skipped (consume
//!    queues by queue offset, index by commitlog offset).
//! 4. The torn tail is cut: zeroed up to the end of its file (so that no stale bytes
//!    can look like records after a later crash) and later files removed; consume
//!    queue entries pointing past the end are dropped.
//! 5. The queue offset table is rebuilt from the consume queues' max offsets and
//!    their min offsets are moved past deleted commitlog data.
//!
//! It logs when it starts, how far it is every `recoveryProgressInterval`
//! ([`progress`]) and how long it took.

mod progress;

use std::collections::HashMap;
use std::sync::Arc;

use vostok_remoting::protocol::message::record::{
    store_timestamp_pos, MAGIC_V1, MAGIC_V2, SYS_FLAG_POS,
};

use crate::commitlog::scan::{scan, Scanned};
use crate::error::Result;
use crate::mapped_file::MappedFile;
use crate::store_inner::StoreInner;

pub(crate) use progress::Progress;

impl StoreInner {
    pub(crate) fn recover(&self, last_exit_ok: bool) -> Result<()> {
        let mut progress = Progress::start(
            self.config.recovery_progress_interval,
            self.config.mapped_file_size_commit_log,
        );
        let queues = self.queues.all();
        let files = self.commitlog.files().files();
        tracing::info!(
            clean_exit = last_exit_ok,
            commitlog_files = files.len(),
            commitlog_bytes = files.iter().map(|f| f.size() as u64).sum::<u64>(),
            consume_queues = queues.len(),
            "store recovery started"
        );
        for (i, cq) in queues.iter().enumerate() {
            cq.recover()?;
            progress.queues(i + 1, queues.len());
        }
        drop(queues);
        let mut walked_from = 0;
        let (end, last_ts, scanned) = if files.is_empty() {
            (0, 0, 0)
        } else if last_exit_ok {
            self.walk(&files, files.len().saturating_sub(3), false, &mut progress)?
        } else {
            let start = self.abnormal_start(&files);
            walked_from = files[start].base();
            tracing::info!(
                from = %files[start].path().display(),
                "abnormal recovery: re-dispatching from the last safe file"
            );
            self.walk(&files, start, true, &mut progress)?
        };
        self.cut_commit_log(end)?;
        for cq in self.queues.all() {
            cq.truncate_beyond(end)?;
        }
        self.commitlog
            .set_recovered_end(end, last_ts, HashMap::new());

        let reput = if last_exit_ok {
            let mut from = self
                .queues
                .all()
                .iter()
                .map(|cq| cq.max_phy_end())
                .max()
                .unwrap_or(0);
            if let Some(p) = self.index.as_ref().and_then(|i| i.last_indexed_phy()) {
                from = from.max(p);
            }
            from.clamp(self.commitlog.min_offset(), end)
        } else {
            end
        };
        self.dispatch.set_reput_from(reput);
        self.dispatch_logged(false, Some(&mut progress))?;
        if !last_exit_ok {
            // The crashed process may have left data only in the page cache; what we
            // now build on (and the checkpoint about to be written) must be on disk.
            self.commitlog.files().sync_files_from(walked_from)?;
            for cq in self.queues.all() {
                cq.sync_all()?;
            }
            if let Some(index) = &self.index {
                index.sync_all()?;
            }
        }

        let min = self.commitlog.min_offset();
        let mut table: HashMap<String, HashMap<i32, i64>> = HashMap::new();
        for cq in self.queues.all() {
            cq.correct_min_offset(min);
            table
                .entry(cq.topic().to_owned())
                .or_default()
                .insert(cq.queue_id(), cq.max_offset());
        }
        self.commitlog.lock_writer().queue_offsets = table;
        tracing::info!(
            end,
            min,
            last_exit_ok,
            records = scanned,
            elapsed_ms = progress.elapsed().as_millis() as u64,
            "store recovered"
        );
        Ok(())
    }

    /// Index of the newest file whose first record is at or before the safe time.
    fn abnormal_start(&self, files: &[Arc<MappedFile>]) -> usize {
        let safe = if self.index.is_some() {
            self.checkpoint.min_timestamp_index()
        } else {
            self.checkpoint.min_timestamp()
        };
        for (i, f) in files.iter().enumerate().rev() {
            let magic = f.read_i32(4);
            if magic != MAGIC_V1 && magic != MAGIC_V2 {
                continue;
            }
            let ts = f.read_i64(store_timestamp_pos(f.read_i32(SYS_FLAG_POS)));
            if ts != 0 && ts <= safe {
                return i;
            }
        }
        0
    }

    /// Walks records from `files[start]`; returns (end of valid data, store time of
    /// the last record, records seen).
    fn walk(
        &self,
        files: &[Arc<MappedFile>],
        start: usize,
        dispatch: bool,
        progress: &mut Progress,
    ) -> Result<(i64, i64, u64)> {
        let verify = self.config.check_crc_on_recover;
        let from = files[start].base();
        let last = files.last().map_or(from, |f| f.end());
        let mut end = from;
        let mut last_ts = 0;
        let mut count = 0u64;
        'files: for f in &files[start..] {
            progress.offsets("commitlog", from, f.base(), last);
            let mut pos = 0;
            loop {
                match scan(f.read(pos, f.size() - pos), f.base(), pos, f.size(), verify) {
                    Scanned::Message(view) => {
                        if dispatch {
                            self.dispatch_record(&view, f.base() + pos as i64, false)?;
                        }
                        last_ts = view.store_timestamp();
                        pos += view.total_size();
                        end = f.base() + pos as i64;
                        count += 1;
                        progress.record("commitlog", from, end, last);
                    }
                    Scanned::Blank => {
                        end = f.end();
                        continue 'files;
                    }
                    Scanned::Partial | Scanned::Invalid(_) => {
                        let reason = match scan(
                            f.read(pos, f.size() - pos),
                            f.base(),
                            pos,
                            f.size(),
                            verify,
                        ) {
                            Scanned::Invalid(r) => r,
                            _ => "truncated".to_owned(),
                        };
                        let zeros = f.read(pos, 8.min(f.size() - pos)).iter().all(|b| *b == 0);
                        if !zeros {
                            tracing::warn!(offset = end, reason = %reason, "commitlog ends with an invalid record; cutting it");
                        }
                        break 'files;
                    }
                }
            }
        }
        if dispatch {
            self.dispatch.set_reput_from(end);
        }
        Ok((end, last_ts, count))
    }

    /// Zeroes everything after `end` in its file and removes later files. A file
    /// that would start at `end` holds nothing (a next file created ahead of time
    /// and never written) and is removed too.
    pub(crate) fn cut_commit_log(&self, end: i64) -> Result<()> {
        let q = self.commitlog.files();
        let base = q.file_base(end);
        q.remove_from(if base == end {
            end
        } else {
            base + q.file_size() as i64
        })?;
        if let Some(f) = q.find(end) {
            // SAFETY: recovery runs before any reader or writer exists; a replica's
            // truncation (`MessageStore::truncate_to`) runs with replication stopped,
            // local puts refused and the consume queues already cut below `end`, so
            // no writer touches the file and no new reader is sent past `end`.
            unsafe { f.truncate_to((end - f.base()) as usize)? };
        }
        Ok(())
    }
}
