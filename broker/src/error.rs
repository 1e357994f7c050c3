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
    #[error("cannot bind {addr}: {source}")]
    Bind {
        addr: String,
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
