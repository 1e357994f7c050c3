//! Broker errors. Business outcomes of requests are responses with RocketMQ codes, not
//! errors; these are failures to start, configure or persist.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("config key `{key}`: {reason}")]
    Config { key: String, reason: String },
    #[error("cannot read config file {path}: {source}")]
    ConfigFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A listener could not bind; `key` is the config key that sets its port.
    #[error("cannot bind {addr} (the port is set by `{key}`): {source}{hint}", hint = crate::error::bind_hint(source))]
    Bind {
        addr: String,
        key: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot persist {path}: {source}")]
    Persist {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] vostok_store::StoreError),
    #[error(transparent)]
    Namesrv(#[from] vostok_namesrv::NamesrvError),
    #[error(transparent)]
    Remoting(#[from] vostok_remoting::RemotingError),
}

impl BrokerError {
    /// A refused setting: `key` with the reason.
    pub fn config(key: &str, reason: impl ToString) -> Self {
        BrokerError::Config {
            key: key.to_owned(),
            reason: reason.to_string(),
        }
    }
}

/// What to do about a port in use: another broker on this host is the usual cause.
pub(crate) fn bind_hint(source: &std::io::Error) -> &'static str {
    if source.kind() == std::io::ErrorKind::AddrInUse {
        "; to run another broker on this host, move all of its ports with -o portOffset=N"
    } else {
        ""
    }
}
