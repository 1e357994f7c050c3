//! The Raft type configuration: log entries carry [`Command`]s, applying one gives an
//! [`Outcome`]; nodes are numbered by their `controllerDLegerPeers` position (`n0` →
//! 0) and addressed by their controller port.

use std::io::Cursor;

use crate::replicas::{Command, Outcome};

openraft::declare_raft_types!(
    /// The controllers' Raft types.
    pub TypeConfig:
        D = Command,
        R = Outcome,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The Raft handle of a controller.
pub type Raft = openraft::Raft<TypeConfig>;
