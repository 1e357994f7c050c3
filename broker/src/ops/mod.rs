//! Operations that more than one front end needs (remoting processors, the gRPC
//! service, the console). Each takes a typed request and answers a typed outcome or a
//! [`Refusal`]; turning those into RocketMQ response codes or gRPC statuses is the
//! front end's job (`processor::refused`, `grpc::status::from_refusal`).
//!
//! - [`pop`]: POP consumption (pop, ack, change invisible time; docs/pop.md).
//! - [`send`]: one message stored (checks, retry/DLQ rules, delays, timers, half
//!   messages), with [`send_dedupe`] (the duplication window) and [`stored`] (what a
//!   put answered).
//! - [`transaction`]: a half message committed or rolled back.
//! - [`send_back`]: a consumer's failed message to its retry topic or dead-letter queue.
//! - [`topic`]: a topic created, changed or deleted.
//! - [`broker_config`]: the keys that change at run time changed.
//! - [`group`]: a subscription group created, changed or deleted.
//! - [`offset_reset`]: a group's offsets moved to a time or to the end.
//! - [`consume_directly`]: a stored message handed to a consumer's listener once more.

pub(crate) mod broker_config;
pub(crate) mod consume_directly;
pub(crate) mod group;
pub(crate) mod offset_reset;
pub(crate) mod pop;
pub(crate) mod send;
pub(crate) mod send_back;
pub(crate) mod send_dedupe;
pub(crate) mod stored;
pub(crate) mod topic;
pub(crate) mod transaction;

/// Why an operation refused, in words every front end can map to its own codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Flow control: try again later.
    Busy,
    /// The broker cannot serve this now (a slave, no lease, a full disk).
    NotAvailable,
    /// Only a master does this: ask the master.
    NotMaster,
    /// The broker, topic or operation is not permitted.
    NoPermission,
    /// A field of the request is not acceptable.
    InvalidParameter,
    /// The topic does not exist and was not created.
    TopicNotExist,
    /// The consumer group does not exist and was not created.
    GroupNotExist,
    /// The message itself is not acceptable (size, properties, timer).
    MessageIllegal,
    /// Something failed inside the broker.
    SystemError,
}

/// A refused operation: the kind and the words for the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?}: {remark}")]
pub(crate) struct Refusal {
    pub(crate) kind: Refused,
    pub(crate) remark: String,
}

impl Refusal {
    pub(crate) fn new(kind: Refused, remark: impl Into<String>) -> Self {
        Refusal {
            kind,
            remark: remark.into(),
        }
    }
}

/// A broker for the operations' own tests: standalone, every port free, its files in
/// `dir`.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use vostok_remoting::Channel;

    use crate::{BrokerConfig, BrokerHandle};

    pub(crate) async fn broker(dir: &Path) -> BrokerHandle {
        let mut config = BrokerConfig::default();
        config.store.store_path_root_dir = dir.to_path_buf();
        config.listen_port = 0;
        config.embedded_namesrv_port = 0;
        config.grpc.grpc_server_enable = false;
        config.ops.console_enable = Some(false);
        crate::Broker::start(config).await.expect("broker starts")
    }

    /// A connection that is not one: the peer an operation sees.
    pub(crate) fn peer() -> Channel {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 40000));
        Channel::detached(addr, addr, 1).0
    }
}
