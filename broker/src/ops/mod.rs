//! Operations that more than one front end needs (remoting processors, the gRPC
//! service, the console). Each takes a typed request and answers a typed outcome or a
//! [`Refusal`]; turning those into RocketMQ response codes or gRPC statuses is the
//! front end's job (`processor::refused`, `grpc::status::from_refusal`).
//!
//! - [`pop`]: POP consumption (pop, ack, change invisible time; docs/pop.md).
//! - [`send`]: one message stored (checks, retry/DLQ rules, delays, timers, half
//!   messages), [`send_batch`] (several messages of one topic stored together), with
//!   [`send_dedupe`] (the duplication window) and [`stored`] (what a put answered).
//! - [`reply`]: a replier's answer pushed to its requester (and stored).
//! - [`transaction`]: a half message committed or rolled back.
//! - [`send_back`]: a consumer's failed message to its retry topic or dead-letter queue.
//! - [`topic`]: a topic created, changed or deleted.
//! - [`offset`]: a group's committed offsets queried and committed; [`offset_reset`]:
//!   moved to a time or to the end.
//! - [`browse`]: waiting messages listed without consuming them; [`resend`]: a
//!   dead-lettered message stored again in its topic; [`remove`]: one waiting message
//!   removed (docs/operations.md).
//! - [`message_status`]: "where is my message"; [`lag`]: a group's lag per queue.
//! - [`clients`]: a consumer registered or gone, its group told to rebalance;
//!   [`auto_create`]: groups and topics created on first use within each client's
//!   share; [`stored_access`]: the topic and group a stored message belongs to, for the
//!   ACL.
//! - [`broker_config`]: the keys that change at run time changed.
//! - [`group`]: a subscription group created, changed or deleted.
//! - [`consume_directly`]: a stored message handed to a consumer's listener once more.
//!
//! An operation a client's request asks for takes the [`Client`] it came from; one
//! that changes what consumers receive on an operator's word (remove, resend) takes
//! the [`Operator`] the front end let through.
//!
//! An operation asks only for the tables it uses: the groups of `state::Broker` (or
//! single tables) as its first parameters, which the front end passes at the call
//! site (`browse::browse(&broker.storage, &broker.consumers, &request)`), or a small
//! struct of them where it uses many (`send::SendTables` for every operation that
//! stores a message, `pop::PopTables`, `message_status::Lookup`). The few that take
//! the whole broker (topic and group changes, which write their files off the async
//! runtime) say why in their comment.

pub(crate) mod auto_create;
pub(crate) mod broker_config;
pub(crate) mod browse;
pub(crate) mod clients;
pub(crate) mod consume_directly;
pub(crate) mod group;
pub(crate) mod lag;
pub(crate) mod message_status;
pub(crate) mod offset;
pub(crate) mod offset_reset;
pub(crate) mod pop;
pub(crate) mod remove;
pub(crate) mod reply;
pub(crate) mod resend;
pub(crate) mod send;
pub(crate) mod send_back;
pub(crate) mod send_batch;
pub(crate) mod send_dedupe;
pub(crate) mod stored;
pub(crate) mod stored_access;
pub(crate) mod topic;
pub(crate) mod transaction;

/// The client an operation serves: the address its request came from, and the
/// connection the broker knows it by (a remoting connection, or a gRPC client's
/// session once it sent its settings). What its requests create on first use counts
/// against that connection's share (docs/limits.md#groups-and-topics); a client without
/// one (a gRPC client before its settings) creates within the broker's totals only.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client<'a> {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) connection: Option<&'a vostok_remoting::Channel>,
}

impl<'a> Client<'a> {
    /// A client on a connection of its own.
    pub(crate) fn on(connection: &'a vostok_remoting::Channel) -> Self {
        Client {
            addr: connection.peer_addr(),
            connection: Some(connection),
        }
    }
}

/// Who asks for an operator's operation, once the front end has let them through:
/// the ACL guard (admin requests) for remoting, a signed-in admin session for the
/// console. Operations log it with what they did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Operator {
    /// A remoting request from this address that passed the ACL guard (or ACL is off).
    Remoting(std::net::SocketAddr),
    /// A console session allowed to change things, by its user name (empty without
    /// ACL).
    Console(String),
}

impl std::fmt::Display for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operator::Remoting(peer) => write!(f, "remoting client {peer}"),
            Operator::Console(user) if user.is_empty() => f.write_str("console"),
            Operator::Console(user) => write!(f, "console user {user}"),
        }
    }
}

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
    /// No consumer of the group is connected.
    NotOnline,
    /// The group has no offset there yet.
    OffsetNotFound,
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

    use super::Client;
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

    /// A client without a connection: what an operation sees of the caller.
    pub(crate) fn peer() -> Client<'static> {
        Client {
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], 40000)),
            connection: None,
        }
    }
}
