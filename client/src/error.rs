//! Errors of the client SDK.
//!
//! Broker answers that are not "stored"/"found" become [`ClientError::Broker`] with the
//! response code, its RocketMQ name and the remark, so callers can tell a full disk
//! from a missing topic without parsing text.

use std::time::Duration;

use vostok_remoting::protocol::response_code;
use vostok_remoting::{DecodeError, HeaderError, RemotingError};

/// Everything a producer or consumer call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The name servers know no route for the topic (and auto-creation did not help).
    #[error("no route info of topic {topic}")]
    NoRoute { topic: String },
    /// The topic has a route, but every broker in it takes no writes: the broker was
    /// started or set read-only (`brokerPermission=4`), or the topic's `perm` is.
    #[error("topic {topic} is read-only: its route lists no broker that takes writes ({brokers} registered it without write permission: the broker's brokerPermission or the topic's perm allows reads only)")]
    ReadOnly { topic: String, brokers: String },
    /// A queue or broker named by the caller is not in the route.
    #[error("broker {broker_name} of topic {topic} is not in the route")]
    NoBroker { topic: String, broker_name: String },
    #[error("message of {size} bytes exceeds the maximum of {max} bytes")]
    MessageTooLarge { size: usize, max: usize },
    #[error("invalid message: {0}")]
    InvalidMessage(String),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The whole operation, retries included, ran out of time.
    #[error("{operation} timed out after {elapsed:?}")]
    Timeout {
        operation: &'static str,
        elapsed: Duration,
    },
    /// The broker (or name server) answered with an error code.
    #[error("broker {addr} answered {code} ({name}): {remark}", name = response_code::name(*code))]
    Broker {
        code: i32,
        remark: String,
        addr: String,
    },
    /// The call did not get an answer: connection, timeout, frame errors.
    #[error("request to {addr} failed: {source}")]
    Remoting {
        addr: String,
        #[source]
        source: RemotingError,
    },
    #[error("no name server address configured")]
    NoNameServer,
    #[error("malformed response from {addr}: {source}")]
    Header {
        addr: String,
        #[source]
        source: HeaderError,
    },
    #[error("malformed response body: {0}")]
    Decode(#[from] DecodeError),
    #[error("{what} failed: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A check-forbidden hook refused the send.
    #[error("send forbidden by hook {hook}: {reason}")]
    Forbidden { hook: String, reason: String },
    #[error("{0} is not started")]
    NotStarted(&'static str),
    #[error("{0} is shut down")]
    ShutDown(&'static str),
    #[error("not supported: {0}")]
    NotSupported(String),
    /// A group of this name is already registered in the client instance.
    #[error("group {0} is already registered in this client instance")]
    DuplicateGroup(String),
}

impl ClientError {
    /// The broker response code, if the broker answered.
    pub fn response_code(&self) -> Option<i32> {
        match self {
            ClientError::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Transport failures (no answer): another broker may succeed.
    pub fn is_transport(&self) -> bool {
        matches!(self, ClientError::Remoting { source, .. } if source.is_transport())
    }

    pub(crate) fn remoting(addr: &str, source: RemotingError) -> Self {
        ClientError::Remoting {
            addr: addr.to_owned(),
            source,
        }
    }

    pub(crate) fn broker(addr: &str, code: i32, remark: &str) -> Self {
        ClientError::Broker {
            code,
            remark: remark.to_owned(),
            addr: addr.to_owned(),
        }
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;
