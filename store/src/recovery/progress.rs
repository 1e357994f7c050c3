//! What a long recovery says while it runs: a line at most every
//! `recoveryProgressInterval` with the phase, the bytes and files checked so far and the
//! time spent, so that an operator watching a broker recover a large commitlog sees it
//! move, and how long it will take.

use std::time::{Duration, Instant};

/// Records between two looks at the clock: a record costs far more than a clock read,
/// and a few hundred take well under a millisecond.
const RECORDS_PER_LOOK: u64 = 256;

/// The progress of one recovery.
pub(crate) struct Progress {
    started: Instant,
    interval: Duration,
    last_line: Instant,
    file_size: i64,
    records: u64,
}

impl Progress {
    /// Starts the clock; commitlog files are `file_size` bytes.
    pub(crate) fn start(interval: Duration, file_size: usize) -> Progress {
        let now = Instant::now();
        Progress {
            started: now,
            interval,
            last_line: now,
            file_size: file_size.max(1) as i64,
            records: 0,
        }
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// One more record of `phase` checked: logs where it stands (see
    /// [`Progress::offsets`]) when a line is due.
    pub(crate) fn record(&mut self, phase: &'static str, from: i64, at: i64, end: i64) {
        self.records += 1;
        if self.records % RECORDS_PER_LOOK == 0 {
            self.offsets(phase, from, at, end);
        }
    }

    /// Logs, when a line is due, that `phase` walks the commitlog from offset `from`
    /// to `end` and has reached `at`.
    pub(crate) fn offsets(&mut self, phase: &'static str, from: i64, at: i64, end: i64) {
        if !self.due() {
            return;
        }
        let first_file = from - from.rem_euclid(self.file_size);
        let bytes_from = |offset: i64| (offset - from).max(0) as u64;
        let files_to = |offset: i64| (offset - first_file).max(0) as u64;
        let (checked, total, size) = (bytes_from(at), bytes_from(end), self.file_size as u64);
        tracing::info!(
            phase,
            checked_bytes = checked,
            total_bytes = total,
            percent = (checked * 100).checked_div(total).unwrap_or(100),
            files_checked = files_to(at) / size,
            files = files_to(end).div_ceil(size),
            elapsed_ms = self.elapsed().as_millis() as u64,
            "store recovery in progress"
        );
    }

    /// Logs, when a line is due, that `checked` of `total` consume queues are checked.
    pub(crate) fn queues(&mut self, checked: usize, total: usize) {
        if !self.due() {
            return;
        }
        tracing::info!(
            phase = "consume queues",
            queues_checked = checked,
            queues = total,
            elapsed_ms = self.elapsed().as_millis() as u64,
            "store recovery in progress"
        );
    }

    fn due(&mut self) -> bool {
        let now = Instant::now();
        if now.duration_since(self.last_line) < self.interval {
            return false;
        }
        self.last_line = now;
        true
    }
}
