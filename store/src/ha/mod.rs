//! Master/slave replication, wire-compatible with Apache RocketMQ's classic HA
//! (`store/ha/DefaultHAService`; docs/replication.md).
//!
//! | part | role |
//! |---|---|
//! | [`wire`] | the frames, sans-IO: offset reports, transfer frames |
//! | [`config`] | the `ha*` keys |
//! | `delay` | how long replication takes, as histograms |
//! | `group_transfer` | SYNC_MASTER puts waiting for a slave's acknowledgement |
//! | `in_sync` | controller mode: whom a put waits for, who may join the SyncStateSet |
//! | `state` | connected slaves, their offsets, the new-data signal; a slave's link |
//! | [`master`] | the master's listener |
//! | `connection` | one slave's connection on the master: reports in, commitlog out |
//! | [`client`] | the slave's connection to its master |
//! | [`epoch`] | controller mode: the epoch file and the consistent point |
//!
//! Floors: `wire`, `config`, `group_transfer`, `in_sync` and `state` are parts the store's
//! shared state holds (the put path waits in `group_transfer`); `master`,
//! `connection` and `client` are services on the async runtime above the
//! [`crate::MessageStore`] facade, which they read and append through
//! (`read_for_slave`, `append_raw`). Buffers are bounded: the master reads reports
//! into a small buffer and sends chunks of at most `haTransferBatchSize`; a slave
//! holds at most [`wire::SLAVE_READ_BUFFER`] bytes, and applies them on a blocking
//! thread.

pub mod client;
pub mod config;
mod connection;
pub(crate) mod delay;
pub mod epoch;
pub(crate) mod group_transfer;
pub(crate) mod in_sync;
pub mod master;
pub(crate) mod state;
pub mod wire;

pub use client::HaClient;
pub use config::HaConfig;
pub use connection::serve_slave;
pub use epoch::{consistent_point, epoch_file_path, EpochFile};
pub use master::serve;
pub use state::{MasterLinkInfo, SlaveInfo};
