//! One controller's shared state: its Raft handle, the applied metadata, the local
//! heartbeat table and its config. The request processor and the scan service both
//! take a `&ControllerNode`; what they share (is this node the leader, write a
//! command and wait for its outcome, who is alive) lives here.

use std::sync::{Arc, RwLock};

use openraft::error::{ClientWriteError, RaftError};
use openraft::RaftMetrics;
use tokio::sync::watch;
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;

use crate::config::ControllerConfig;
use crate::notify::RoleNotifier;
use crate::raft::{Applied, Raft};
use crate::replicas::{BrokerGroup, BrokerHeartbeats, Command, LiveInfo, Outcome};

pub struct ControllerNode {
    pub config: ControllerConfig,
    /// The keys that change at run time (UPDATE_CONTROLLER_CONFIG).
    pub runtime: crate::runtime_config::RuntimeConfig,
    pub node_id: u64,
    pub raft: Raft,
    pub metrics: watch::Receiver<RaftMetrics<u64, openraft::BasicNode>>,
    pub applied: Arc<RwLock<Applied>>,
    pub heartbeats: BrokerHeartbeats,
    /// Where elections leave the groups whose brokers are to be told (`notify`).
    pub notifier: RoleNotifier,
}

impl ControllerNode {
    pub fn is_leader(&self) -> bool {
        self.metrics.borrow().current_leader == Some(self.node_id)
    }

    /// The leader's (node id, address), if one is known.
    pub fn leader(&self) -> Option<(u64, String)> {
        let m = self.metrics.borrow();
        let id = m.current_leader?;
        let addr = m
            .membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())?;
        Some((id, addr))
    }

    /// Confirms with a quorum that this node still leads and waits until its state
    /// machine has applied everything committed before the check: a newly elected
    /// leader may not yet have applied its predecessor's last entries, and a deposed
    /// one may not know it yet. Reads answered after this are not stale.
    pub async fn ensure_leader(&self) -> Result<(), RemotingCommand> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        match self.raft.ensure_linearizable().await {
            Ok(_) => Ok(()),
            Err(_) => Err(self.not_leader()),
        }
    }

    pub fn not_leader(&self) -> RemotingCommand {
        let leader = self.leader().map(|(_, a)| a).unwrap_or_default();
        RemotingCommand::response(
            response_code::CONTROLLER_NOT_LEADER,
            Some(format!(
                "controller {} is not the leader (leader: {leader})",
                self.config.self_id
            )),
        )
    }

    /// A copy of one group as applied here.
    pub fn group(&self, broker_name: &str) -> Option<BrokerGroup> {
        self.applied.read_locked().info.group(broker_name).cloned()
    }

    pub fn live(&self, broker_name: &str, broker_id: i64) -> Option<LiveInfo> {
        let now = now_millis();
        self.heartbeats
            .is_alive(broker_name, broker_id, now)
            .then(|| {
                self.heartbeats
                    .get(broker_name, broker_id)
                    .unwrap_or_default()
            })
    }

    pub fn is_alive(&self, broker_name: &str, broker_id: i64) -> bool {
        self.heartbeats
            .is_alive(broker_name, broker_id, now_millis())
    }

    /// Replicates `command` and returns its outcome once applied; an error
    /// response when this node is not (or no longer) the leader.
    pub async fn write(&self, command: Command) -> Result<Outcome, RemotingCommand> {
        match self.raft.client_write(command).await {
            Ok(resp) => Ok(resp.data),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_))) => {
                Err(self.not_leader())
            }
            Err(e) => Err(RemotingCommand::response(
                response_code::SYSTEM_ERROR,
                Some(format!("controller write failed: {e}")),
            )),
        }
    }
}
