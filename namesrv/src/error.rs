//! Errors of the name server crate.
//!
//! Requests never fail with these: a bad request is answered with an error response
//! (docs/wire.md#response-codes). These errors are for starting up (configuration, the KV
//! store on disk) and for persisting the KV store.

use std::path::PathBuf;

/// Everything that can stop the name server from starting or from saving its state.
#[derive(Debug, thiserror::Error)]
pub enum NamesrvError {
    /// A configuration value does not parse or is out of range.
    #[error("invalid value {value:?} for config key `{key}`: {reason}")]
    InvalidConfig {
        key: String,
        value: String,
        reason: String,
    },
    /// Reading or writing a file failed.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A persisted file exists but cannot be parsed, and neither can its backup.
    #[error("{path} is corrupt and has no usable backup: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: vostok_remoting::DecodeError,
    },
    /// The listen address cannot be bound (in use, not local, no permission).
    #[error("security settings: {0}")]
    Security(String),
    /// The embedded controller (`enableControllerInNamesrv`) did not start.
    #[error("controller: {0}")]
    Controller(#[from] vostok_controller::ControllerError),
    /// A listener could not bind; `key` is the config key that sets its port.
    #[error("cannot bind {addr} (the port is set by `{key}`): {source}")]
    Bind {
        addr: String,
        key: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The listener given to [`crate::NameServer::start`] has no local address.
    #[error("listener has no local address: {0}")]
    Listener(#[source] std::io::Error),
    /// A blocking task (file I/O) panicked or was cancelled.
    #[error("background task for {what} failed: {source}")]
    Task {
        what: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl NamesrvError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        NamesrvError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn invalid(key: &str, value: &str, reason: impl Into<String>) -> Self {
        NamesrvError::InvalidConfig {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: reason.into(),
        }
    }
}
