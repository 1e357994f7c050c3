//! Support code every Vostok crate shares, kept in one place so that each concern has
//! one implementation:
//!
//! * [`time`]: the wall clock (`now_millis`), the monotonic clock that paused Tokio
//!   tests can drive, and local broken-down time (RocketMQ's `yyyyMMddHHmmss` forms,
//!   index file names, month bounds of message ids, the retention hour).
//! * [`sync`]: lock helpers that recover from poisoning, so a panic in one request
//!   never turns every later lock of the same table into a second panic.
//! * [`defer`]: work put off to the end of the unit of work (a reader's poll, a
//!   dispatcher pass) that caused it.
//! * [`decimal`]: integers written in decimal on the stack, for headers and signatures.
//! * [`config_file`]: crash-safe JSON config files (`topics.json`, offsets, ...).
//! * [`keys`]: configuration keys declared once per section: apply, print, the
//!   unknown-key suggestion and the key reference come from one table.
//! * [`did_you_mean`]: the nearest known key, named in the error for an unknown one.
//! * [`properties`]: Java `.properties` files (`broker.conf`, `namesrv.conf`).
//! * [`namesrv_addr`]: name server address lists, parsed strictly at start.
//! * [`log_limit`]: at most one log line a second for events a flood repeats.
//! * [`latency_trace`]: opt-in per-message timestamps along the produce → consume path.
//! * [`sched`]: scheduling hints: housekeeping threads yield to the ones serving
//!   messages; pollers sleep precisely.
//! * [`process`]: what the server binaries share: logging, runtime, boot lines, signals,
//!   `-o KEY=VALUE` settings.

pub mod config_file;
pub mod decimal;
pub mod defer;
pub mod did_you_mean;
pub mod keys;
pub mod latency_trace;
pub mod log_limit;
pub mod namesrv_addr;
pub mod process;
pub mod properties;
pub mod sched;
pub mod sync;
pub mod time;
