//! `mqadmin`: RocketMQ's operator CLI over the classic remoting protocol, for Vostok and
//! any RocketMQ-protocol cluster.
//!
//! * [`args`]: the command line (RocketMQ's sub-command names and flags).
//! * [`rpc`]: [`Admin`](rpc::Admin), one function per request to a name server or a
//!   broker, with a timeout each; codes, headers and bodies from
//!   `vostok_remoting::protocol`.
//! * [`body`]: the admin bodies that key maps by `MessageQueue` objects.
//! * The sub-commands: [`cluster`] (`clusterList`, `brokerStatus`), [`topic`]
//!   (`topicList`, `topicRoute`, `updateTopic`, `deleteTopic`, `topicStatus`),
//!   [`consumer`] (`consumerProgress`), [`message`] (`queryMsgByKey`, `queryMsgById`).
//! * [`table`]: aligned text tables and timestamps.
//!
//! Each sub-command returns its whole output as text; the binary prints it, or the
//! error on one line with exit code 1.

pub mod args;
pub mod body;
pub mod cluster;
pub mod consumer;
pub mod message;
pub mod rpc;
pub mod table;
pub mod topic;

use vostok_remoting::protocol::response_code;
use vostok_remoting::{DecodeError, HeaderError, RemotingError};

use args::Command;
use rpc::Admin;

/// Why a sub-command failed. Every variant names the request (or step) and the peer.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{what} to {addr} failed: {source}")]
    Remoting {
        what: &'static str,
        addr: String,
        #[source]
        source: RemotingError,
    },
    #[error("{what} to {addr} answered {}", answer(*.code, .remark))]
    Response {
        what: &'static str,
        addr: String,
        code: i32,
        remark: String,
    },
    #[error("{what} answer from {addr} has a bad header: {source}")]
    Header {
        what: &'static str,
        addr: String,
        #[source]
        source: HeaderError,
    },
    #[error("{what} answer from {addr} cannot be decoded: {source}")]
    Decode {
        what: &'static str,
        addr: String,
        #[source]
        source: DecodeError,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
}

/// `NAME (code): remark`, without the colon when the remark is empty.
fn answer(code: i32, remark: &str) -> String {
    let name = response_code::name(code);
    if remark.is_empty() {
        format!("{name} ({code})")
    } else {
        format!("{name} ({code}): {remark}")
    }
}

/// Runs one sub-command and returns what it prints.
pub async fn run(admin: &Admin, command: Command) -> Result<String, AdminError> {
    match command {
        Command::ClusterList => cluster::cluster_list(admin).await,
        Command::BrokerStatus(a) => cluster::broker_status(admin, &a).await,
        Command::TopicList => topic::topic_list(admin).await,
        Command::TopicRoute(a) => topic::topic_route(admin, &a.topic).await,
        Command::UpdateTopic(a) => topic::update_topic(admin, &a).await,
        Command::DeleteTopic(a) => topic::delete_topic(admin, &a).await,
        Command::TopicStatus(a) => topic::topic_status(admin, &a.topic).await,
        Command::ConsumerProgress(a) => consumer::consumer_progress(admin, &a).await,
        Command::QueryMsgByKey(a) => message::query_msg_by_key(admin, &a).await,
        Command::QueryMsgById(a) => message::query_msg_by_id(admin, &a).await,
    }
}
