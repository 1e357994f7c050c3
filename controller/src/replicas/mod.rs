//! The controller's model, without Raft or I/O: the replicated metadata
//! ([`info`]), the local liveness table ([`heartbeat`]) and the election rule
//! ([`elect_policy`]).

pub mod elect_policy;
pub mod heartbeat;
pub mod info;

pub use heartbeat::{BrokerHeartbeats, LiveInfo};
pub use info::{BrokerGroup, Command, Outcome, Replica, ReplicasInfo};
