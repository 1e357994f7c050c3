//! Opt-in timestamps of each message along the produce → consume path, for finding
//! where latency tails come from (deploy/bench/README.md, "Where the tail goes").
//!
//! Off unless the environment variable `VOSTOK_LATENCY_TRACE` names a directory when
//! the process first asks; then every [`stamp`] records (stage, commitlog offset,
//! wall-clock µs) and a background thread appends them, every 200 ms, to
//! `<dir>/<pid>.trace` as text lines `stage offset micros`. The commitlog offset names
//! a message in the broker and in the client alike (`MessageExt::commit_log_offset`),
//! and wall-clock microseconds compare across processes on one machine, so the files
//! of a broker and a client join into one timeline per message.
//!
//! When off, [`enabled`] is one atomic load; callers test it before reading a clock.
//! When on, records are kept in memory (at most [`MAX_PENDING`] between writes, the
//! rest counted as dropped) so that tracing never waits for the disk.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::sync::MutexExt;

/// The environment variable naming the trace directory.
pub const ENV: &str = "VOSTOK_LATENCY_TRACE";
/// Records kept between two writes; beyond that they are dropped (and counted).
const MAX_PENDING: usize = 1 << 20;
const WRITE_INTERVAL: Duration = Duration::from_millis(200);

/// Where a message is when stamped, in path order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The producer's send time (stamped by the client that knows it).
    Sent = 0,
    /// The broker began handling the send request.
    Received = 1,
    /// The commitlog append returned to the send processor.
    Appended = 2,
    /// The dispatcher wrote the consume-queue entry (and woke held pulls).
    Dispatched = 3,
    /// A pull response holding the message was built.
    Pulled = 4,
    /// The consumer SDK decoded the pull response.
    ClientPulled = 5,
    /// The message was handed to the consumer's listener.
    Consumed = 6,
}

struct Tracer {
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    records: Vec<(u8, i64, u64)>,
    dropped: u64,
}

static TRACER: OnceLock<Option<Tracer>> = OnceLock::new();

fn tracer() -> Option<&'static Tracer> {
    TRACER
        .get_or_init(|| {
            let dir = PathBuf::from(std::env::var_os(ENV)?);
            let path = dir.join(format!("{}.trace", std::process::id()));
            std::thread::Builder::new()
                .name("latency-trace".into())
                .spawn(move || {
                    // The measurement must not take CPU from what it measures.
                    super::sched::background();
                    writer(path)
                })
                .ok()?;
            Some(Tracer {
                pending: Mutex::new(Pending::default()),
            })
        })
        .as_ref()
}

/// Whether tracing is on in this process.
#[inline]
pub fn enabled() -> bool {
    tracer().is_some()
}

/// Wall-clock microseconds since the epoch.
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Records that the message at commitlog `offset` reached `stage` now.
pub fn stamp(stage: Stage, offset: i64) {
    if enabled() {
        stamp_at(stage, offset, now_micros());
    }
}

/// Records that the message at commitlog `offset` reached `stage` at `micros`.
pub fn stamp_at(stage: Stage, offset: i64, micros: u64) {
    let Some(t) = tracer() else {
        return;
    };
    let mut p = t.pending.locked();
    if p.records.len() < MAX_PENDING {
        p.records.push((stage as u8, offset, micros));
    } else {
        p.dropped += 1;
    }
}

/// The writer thread: appends what was recorded every [`WRITE_INTERVAL`].
fn writer(path: PathBuf) {
    let mut file = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(f) => std::io::BufWriter::new(f),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the latency trace");
            return;
        }
    };
    let mut batch = Vec::new();
    let mut dropped_seen = 0;
    loop {
        std::thread::sleep(WRITE_INTERVAL);
        let Some(t) = TRACER.get().and_then(Option::as_ref) else {
            continue;
        };
        let dropped = {
            let mut p = t.pending.locked();
            std::mem::swap(&mut p.records, &mut batch);
            p.dropped
        };
        if dropped != dropped_seen {
            tracing::warn!(dropped, "latency trace records dropped");
            dropped_seen = dropped;
        }
        for (stage, offset, micros) in batch.drain(..) {
            if writeln!(file, "{stage} {offset} {micros}").is_err() {
                return;
            }
        }
        if file.flush().is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The only test in this crate that touches the variable: the tracer is set up
    /// once per process, from the environment of its first use.
    #[test]
    fn stamps_reach_the_trace_file_as_stage_offset_micros() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var(ENV, dir.path());
        assert!(enabled());
        stamp_at(Stage::Dispatched, 4096, 1_700_000_000_000_000);
        stamp(Stage::Pulled, 4096);
        let path = dir.path().join(format!("{}.trace", std::process::id()));
        let deadline = Instant::now() + Duration::from_secs(20);
        let lines = loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            if lines.len() >= 2 || Instant::now() > deadline {
                break lines;
            }
            std::thread::sleep(WRITE_INTERVAL / 4);
        };
        assert_eq!(lines[0], "3 4096 1700000000000000");
        let fields: Vec<&str> = lines[1].split(' ').collect();
        assert_eq!(fields[..2], ["4", "4096"]);
        assert!(fields[2].parse::<u64>().unwrap() > 1_700_000_000_000_000);
    }
}
