//! Vostok's tools, for Vostok and any RocketMQ-protocol broker:
//!
//! * [`admin`] holds `mqadmin`, the operator CLI: RocketMQ's sub-commands (clusters,
//!   topics, queue offsets, consumer progress, message lookups) over the classic
//!   remoting protocol.
//! * [`bench`] holds `mqbench`, the benchmark producer/consumer that measures a broker
//!   the same way every time (throughput, send and end-to-end latency percentiles,
//!   lost and duplicate messages, the broker's memory and CPU).
//!
//! * [`security`]: ACL credentials and TLS settings both tools take.
//!
//! The binaries in `src/bin/` parse flags and call these modules.

pub mod admin;
pub mod bench;
pub mod security;
