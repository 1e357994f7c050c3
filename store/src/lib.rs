//! Vostok's message store: RocketMQ's on-disk layout (docs/store.md), so that a RocketMQ
//! operator recognises the files, and every acknowledged message survives a crash.
//!
//! # Module map
//!
//! Arrows run one way: a module uses only modules of its own row or rows below it.
//!
//! | floor | module | RocketMQ | role |
//! |---|---|---|---|
//! | network | [`ha`] (`master`, `connection`, `client`) | `DefaultHAService`, `DefaultHAConnection`, `DefaultHAClient` | replication over TCP, on the async runtime, through the facade |
//! | facade | [`message_store`] (+ `get`, `put`, `query`, `info`, `ha`) | `DefaultMessageStore` | open, start, shutdown; the operations the broker calls |
//! | services | `recovery` (+ `progress`) | `recoverNormally` / `recoverAbnormally` | start-up repair, and what it logs while it runs |
//! | services | `dispatch` | `ReputMessageService` | builds consume queues and index from the commitlog |
//! | services | `retention` | `CleanCommitLogService`, `CleanConsumeQueueService` | deleting expired files, disk-full guard |
//! | services | `flush_service` | `FlushRealTimeService`, `GroupCommitService`, `FlushConsumeQueueService` | the flush threads |
//! | state | `store_inner` | `DefaultMessageStore`'s fields | what the services and the facade share |
//! | parts | `commitlog` (+ `append`, `flush`, `pool`, `prefault`, `raw`, `scan`) | `CommitLog`, `TransientStorePool` + `CommitRealTimeService` | the record log, group commit, the write buffer and its commit thread, page prefaulting, replication seam |
//! | parts | `allocate` | `AllocateMappedFileService` | the next commitlog file created ahead (thread `store-allocate`), the no-room guard |
//! | parts | `consume_queue`, `queue_table` | `ConsumeQueue` | per-queue 20-byte entries into the commitlog |
//! | parts | `index` (+ `file`) | `IndexService`, `IndexFile` | lookup by key |
//! | parts | `ha::{state, group_transfer, wire, config}` | `HAService`'s fields, `GroupTransferService` | connected slaves and their acks, SYNC_MASTER waiters, the HA frames |
//! | parts | `dispatch_state` | `ReputMessageService`'s fields | dispatch progress, arrival listener, wake-ups |
//! | parts | `checkpoint`, `lock` | `StoreCheckpoint`, abort/lock files | crash bookkeeping |
//! | services | [`tier`] (+ `upload`, `rebuild`) | `TieredMessageStore` | the second tier: uploads, tier retention, reads the local store no longer has, its record rebuilt from it after a lost disk |
//! | parts | `tombstone` | — (Vostok) | deleted topics stay deleted across crashes and re-creation |
//! | parts | `stopper`, `stats` | `ServiceThread`, `StoreStatsService` | stopping the threads; counters |
//! | base | `mapped_file`, `mapped_file_queue` | `MappedFile(Queue)` | fixed-size mapped files |
//! | base | `disk` | `UtilAll.getDiskPartitionSpaceUsedPercent` | free-space readings (simulated in tests) |
//! | base | [`config`], `error`, `message`, `result` | `MessageStoreConfig`, `PutMessageStatus`, ... | keys and defaults; errors; message and result types |
//!
//! # Request flow
//!
//! `put_message` validates the message and computes its body CRC, then under the
//! append lock assigns store timestamp, queue offset and physical offset and encodes
//! the record straight into the mapped commitlog file (the record codec is
//! `vostok_remoting::protocol::message::record`). The dispatcher appends the
//! consume-queue entry and the index entries and calls the arrival listener: for the
//! appends of a connection's socket read, one pass on the reader's thread when the read
//! is handled (a unit of work, `vostok_remoting::support::defer`), unless a dispatch is
//! running; otherwise the append unparks the dispatcher thread. With SYNC_FLUSH the put
//! then waits for group commit. A pull reads the consume queue, then the commitlog
//! records it points to, returned as zero-copy `Bytes` over the mapping. With
//! `transientStorePoolEnable` the record is encoded into a write buffer instead, and
//! the commit thread (`commitlog::pool`) writes it to the file with `pwrite`,
//! publishes the new end, and dispatches. The flush unmaps the commitlog's written
//! pages before it syncs them (`MappedFile::flush_behind_writer`).
//!
//! # Durability
//!
//! See `recovery` for the algorithm. In short: the commitlog is the truth; consume
//! queues and index are derived from it by the dispatcher and rebuilt from it after
//! a crash; the checkpoint bounds how far back the rebuild starts; torn tails are
//! cut and zeroed.
//!
//! # Replication
//!
//! [`ha`] is RocketMQ's classic HA (docs/replication.md): a master streams its
//! commitlog ([`MessageStore::read_for_slave`], complete records whether flushed or
//! not) to slaves connected on its HA port; a slave appends what it receives with
//! [`MessageStore::append_raw`] at its write end ([`MessageStore::raw_write_end`]).
//! Raw bytes are validated record by record before they are written; only complete
//! records are published, and the dispatcher builds consume queues and index from
//! them exactly as for local appends, keeping the master's queue offsets. A replica
//! holding a partial record refuses local puts (SERVICE_NOT_AVAILABLE). With
//! [`ha::HaConfig::sync_master`] a put also waits for a slave's acknowledgement
//! (`ha::group_transfer`), beside the group commit.

mod allocate;
mod checkpoint;
mod commitlog;
pub mod config;
mod consume_queue;
mod disk;
mod dispatch;
mod dispatch_state;
mod error;
mod flush_service;
pub mod ha;
mod index;
mod lock;
mod mapped_file;
mod mapped_file_queue;
mod message;
pub mod message_store;
mod queue_table;
mod recovery;
mod result;
mod retention;
mod stats;
mod stopper;
mod store_inner;
pub mod tier;
mod tombstone;

pub use config::{FlushDiskType, StoreConfig};
pub use disk::{DiskProbe, DiskSpace};
pub use error::StoreError;
pub use message::{ConsumedOffsets, MessageArrivingListener, MessageFilter, MessageInner};
pub use message_store::MessageStore;
pub use result::{
    AppendResult, GetMessageResult, GetMessageStatus, PutMessageResult, PutMessageStatus,
    QueryMessageResult,
};
pub use retention::RetentionReport;
