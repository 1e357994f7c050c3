//! Raft messages between controllers over the remoting transport
//! (docs/controller.md#raft): a request with code RAFT_VOTE,
//! RAFT_APPEND_ENTRIES or RAFT_INSTALL_SNAPSHOT and the openraft request as its JSON
//! body; the answer's body is the JSON `Result` the receiving node's Raft gave.
//! Messages go to the peer's controller port, the one brokers use.

use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};

use super::types::TypeConfig;

type NodeId = u64;

/// Makes one [`PeerLink`] per peer; all share one remoting client.
#[derive(Clone)]
pub struct Network {
    client: Arc<RemotingClient>,
}

impl Network {
    pub fn new(client: Arc<RemotingClient>) -> Self {
        Network { client }
    }
}

/// The link to one peer.
pub struct PeerLink {
    client: Arc<RemotingClient>,
    target: NodeId,
    addr: String,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerLink;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerLink {
        PeerLink {
            client: self.client.clone(),
            target,
            addr: node.addr.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Text(String);

impl PeerLink {
    async fn call<Req, Resp, E>(
        &self,
        code: i32,
        rpc: &Req,
        ttl: Duration,
    ) -> Result<Resp, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let body = serde_json::to_vec(rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let request = RemotingCommand::request(code).with_body(body);
        let response = self
            .client
            .invoke_sync(&self.addr, request, ttl)
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        if response.code != response_code::SUCCESS {
            let remark = response.remark.as_deref().unwrap_or_default().to_owned();
            return Err(RPCError::Network(NetworkError::new(&Text(format!(
                "code {}: {remark}",
                response.code
            )))));
        }
        let result: Result<Resp, RaftError<NodeId, E>> = serde_json::from_slice(&response.body)
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for PeerLink {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call(request_code::RAFT_APPEND_ENTRIES, &rpc, option.hard_ttl())
            .await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.call(request_code::RAFT_INSTALL_SNAPSHOT, &rpc, option.hard_ttl())
            .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.call(request_code::RAFT_VOTE, &rpc, option.hard_ttl())
            .await
    }
}
