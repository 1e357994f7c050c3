//! The controllers' consensus: openraft with a durable log ([`log_store`]), the
//! metadata as state machine ([`state_machine`]) and Raft messages carried by the
//! remoting transport ([`network`]).

pub mod log_store;
pub mod network;
pub mod state_machine;
pub mod types;

pub use log_store::LogStore;
pub use network::Network;
pub use state_machine::{Applied, StateMachine};
pub use types::{Raft, TypeConfig};
