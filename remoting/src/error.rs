//! Errors of the remoting layer.
//!
//! Protocol errors (a frame or header that cannot be decoded) are kept apart from
//! transport errors (timeouts, closed connections): the first close one connection,
//! the second fail one call.

use std::net::SocketAddr;
use std::time::Duration;

/// A typed request or response header could not be built from `extFields`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("missing header field `{field}`")]
    Missing { field: &'static str },
    #[error("malformed header field `{field}`: {value:?}")]
    Malformed { field: &'static str, value: String },
}

impl HeaderError {
    /// The wire name of the offending field.
    pub fn field(&self) -> &'static str {
        match self {
            HeaderError::Missing { field } | HeaderError::Malformed { field, .. } => field,
        }
    }
}

/// A JSON or binary body, a message record or another protocol structure is malformed.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("{what} is truncated: needs {needed} bytes, {available} available")]
    Truncated {
        what: &'static str,
        needed: usize,
        available: usize,
    },
    #[error("{what}: {reason}")]
    Invalid { what: &'static str, reason: String },
    #[error("{what} is not valid JSON: {source}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl DecodeError {
    pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> Self {
        DecodeError::Invalid {
            what,
            reason: reason.into(),
        }
    }
}

/// Everything that can go wrong in the remoting layer.
#[derive(Debug, thiserror::Error)]
pub enum RemotingError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame length {length} exceeds the limit of {limit} bytes")]
    FrameTooLarge { length: usize, limit: usize },
    #[error("frame length {length} is below the minimum of 4 bytes")]
    FrameTooSmall { length: i64 },
    #[error("header length {length} exceeds the limit of {limit} bytes")]
    HeaderTooLarge { length: usize, limit: usize },
    #[error("header length {header} does not fit in a frame of {frame} bytes")]
    HeaderOutOfFrame { header: usize, frame: usize },
    #[error("unknown header serialize type {0}")]
    UnknownSerializeType(u8),
    #[error("malformed {kind} header: {reason}")]
    MalformedHeader { kind: &'static str, reason: String },
    #[error("invalid address {0:?}")]
    InvalidAddress(String),
    #[error("connect to {addr} failed: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("connect to {addr} timed out after {timeout:?}")]
    ConnectTimeout { addr: String, timeout: Duration },
    #[error("request (code {code}, opaque {opaque}) to {peer} timed out after {timeout:?}")]
    Timeout {
        peer: SocketAddr,
        code: i32,
        opaque: i32,
        timeout: Duration,
    },
    #[error("connection to {peer} closed")]
    ConnectionClosed { peer: SocketAddr },
    #[error("too many {kind} requests in flight (limit {limit})")]
    TooManyRequests { kind: &'static str, limit: usize },
    #[error("frame of {length} bytes not finished within {timeout:?} ({received} bytes received)")]
    FrameTimeout {
        length: usize,
        received: usize,
        timeout: Duration,
    },
    #[error("no memory for {what} of {bytes} bytes (the process's memory ceiling is reached)")]
    NoMemory { what: &'static str, bytes: usize },
    #[error("remoting {0} is shut down")]
    Shutdown(&'static str),
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

impl RemotingError {
    /// True for errors after which the same request may succeed on another attempt
    /// (possibly on another broker): timeouts and connection failures.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            RemotingError::Io(_)
                | RemotingError::Connect { .. }
                | RemotingError::ConnectTimeout { .. }
                | RemotingError::Timeout { .. }
                | RemotingError::ConnectionClosed { .. }
                | RemotingError::TooManyRequests { .. }
        )
    }
}

pub type Result<T, E = RemotingError> = std::result::Result<T, E>;
