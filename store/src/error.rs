//! The store's error type.
//!
//! Business outcomes of a put or a pull (disk full, message too large, offset moved)
//! are statuses in [`crate::PutMessageStatus`] and [`crate::GetMessageStatus`], not
//! errors; `StoreError` is for what stops an operation: I/O, a locked directory, a
//! configuration value that does not parse, files that do not fit together.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("store directory {path} is in use: another store holds its lock file")]
    Locked { path: PathBuf },
    #[error("invalid value {value:?} for `{key}`: {reason}")]
    Config {
        key: String,
        value: String,
        reason: String,
    },
    #[error("{path} is {actual} bytes long, expected {expected}")]
    FileSize {
        path: PathBuf,
        expected: u64,
        actual: u64,
    },
    #[error("{path} does not start where the previous file ends (expected offset {expected})")]
    FileGap { path: PathBuf, expected: i64 },
    #[error("raw append at commitlog offset {at}, but the commitlog ends at {end}")]
    RawOffset { at: i64, end: i64 },
    #[error("raw data at commitlog offset {offset} is not a valid record stream: {reason}")]
    RawData { offset: i64, reason: String },
    #[error("commitlog data at offset {offset} is corrupt: {reason}")]
    Corrupt { offset: i64, reason: String },
    #[error("replication: {reason}")]
    HaProtocol { reason: String },
    #[error("replication connection to {peer}: {source}")]
    HaIo {
        peer: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "the master {peer} closed the replication connection before sending anything \
         ({source}); its log says why: a master with tls.server.mode=enforcing refuses \
         plain slaves (then set tls.enable=true and tls.client.* here), a slave ahead of \
         its master is refused too"
    )]
    HaClosedEarly {
        peer: String,
        #[source]
        source: io::Error,
    },
    #[error("TLS handshake with the master {peer}: {source}")]
    HaTls {
        peer: String,
        #[source]
        source: io::Error,
    },
    #[error("tiered storage: {0}")]
    Tier(String),
    #[error("the store is shut down")]
    Shutdown,
    #[error("no room in {path} for a {needed}-byte file: {available} bytes available")]
    NoSpace {
        path: PathBuf,
        needed: u64,
        available: u64,
    },
}

impl StoreError {
    /// An I/O error with the operation and the path it concerned.
    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The file system is full: `NoSpace`, or an I/O error with ENOSPC or EDQUOT.
    pub fn is_no_space(&self) -> bool {
        match self {
            StoreError::NoSpace { .. } => true,
            StoreError::Io { source, .. } => matches!(
                source.raw_os_error(),
                Some(libc::ENOSPC) | Some(libc::EDQUOT)
            ),
            _ => false,
        }
    }

    pub(crate) fn config(key: &str, value: &str, reason: impl Into<String>) -> Self {
        StoreError::Config {
            key: key.to_owned(),
            value: value.to_owned(),
            reason: reason.into(),
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
