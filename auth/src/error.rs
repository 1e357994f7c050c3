//! Errors of the auth crate: ACL files and ACL 2.0 metadata that cannot be used.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ACL file {path}: {reason}")]
    Acl { path: PathBuf, reason: String },
    #[error("{0}")]
    Config(String),
}
