//! What a connection is configured with, on either side.

use std::sync::Arc;
use std::time::Duration;

use crate::budget::MemoryBudget;
use crate::codec::FrameLimits;
use crate::command::SerializeType;

/// Per-connection settings shared by servers and clients.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub limits: FrameLimits,
    /// Close a connection with no reads or writes for this long (RocketMQ's
    /// `serverChannelMaxIdleTimeSeconds`, 120 s). Zero disables it.
    pub idle_timeout: Duration,
    /// Encoded frames waiting for the socket; a full queue makes senders wait.
    pub write_queue_capacity: usize,
    /// Bytes queued for the socket past which the reader stops reading and requests
    /// this side sends wait (`writeBufferHighWaterMark`).
    pub write_high_water: usize,
    /// Reading resumes once the queue is down to this (`writeBufferLowWaterMark`).
    pub write_low_water: usize,
    /// A connection whose queue stays full this long without a byte written is closed
    /// (`writeStallTimeoutMillis`).
    pub write_stall_timeout: Duration,
    /// A frame must be complete this long after its first byte (`frameReadTimeoutMillis`).
    pub frame_read_timeout: Duration,
    /// The process's memory account; unlimited unless a server sets one.
    pub budget: Arc<MemoryBudget>,
    /// Incoming requests processed at once on one connection.
    pub max_inflight_requests: usize,
    /// Header serialisation of the requests this side sends (answers follow their
    /// request's; a code past 16 bits always goes in JSON). JSON by default, which every
    /// peer reads (the C++ client cannot parse binary headers); the SDK sets binary.
    pub serialize_type: SerializeType,
    /// How long a closing connection waits for its requests in flight.
    pub drain_timeout: Duration,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            limits: FrameLimits::default(),
            idle_timeout: Duration::from_secs(120),
            write_queue_capacity: 4096,
            write_high_water: 4 << 20,
            write_low_water: 1 << 20,
            write_stall_timeout: Duration::from_secs(30),
            frame_read_timeout: Duration::from_secs(30),
            budget: MemoryBudget::unlimited(),
            max_inflight_requests: 4096,
            serialize_type: SerializeType::Json,
            drain_timeout: Duration::from_secs(5),
        }
    }
}
