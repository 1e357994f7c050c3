//! Errors of the controller crate: starting up (configuration, the data directory,
//! the listener, Raft). Requests never fail with these: a refused request is an
//! answer with a CONTROLLER_* response code.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("invalid value {value:?} for config key `{key}`: {reason}")]
    InvalidConfig {
        key: String,
        value: String,
        reason: String,
    },
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A listener could not bind; `key` is the config key that sets its port.
    #[error("cannot bind {addr} (the port is set by `{key}`): {source}")]
    Bind {
        addr: String,
        key: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("Raft: {0}")]
    Raft(String),
    /// `aclEnable` is on and the account files cannot be read.
    #[error("ACL: {0}")]
    Acl(String),
}

impl ControllerError {
    pub fn config(key: &str, value: &str, reason: impl Into<String>) -> Self {
        ControllerError::InvalidConfig {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: reason.into(),
        }
    }
}
