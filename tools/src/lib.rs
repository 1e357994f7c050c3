//! Vostok's tools: [`bench`] holds `mqbench`, the benchmark producer/consumer that
//! measures any RocketMQ-protocol broker the same way every time (throughput, send
//! and end-to-end latency percentiles, lost and duplicate messages, the broker's
//! memory and CPU). The binary in `src/bin/mqbench.rs` parses flags and calls it.

pub mod bench;
