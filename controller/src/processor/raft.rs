//! Raft messages from the other controllers, handed to this node's Raft; the answer
//! body is the JSON `Result` (docs/controller.md#raft).

use serde::de::DeserializeOwned;
use serde::Serialize;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::error;
use crate::node::ControllerNode;

fn parse<T: DeserializeOwned>(request: &RemotingCommand) -> Result<T, RemotingCommand> {
    serde_json::from_slice(&request.body).map_err(|e| {
        error(
            response_code::CONTROLLER_INVALID_REQUEST,
            format!("bad Raft message: {e}"),
        )
    })
}

fn answer<T: Serialize>(result: &T) -> RemotingCommand {
    match serde_json::to_vec(result) {
        Ok(body) => RemotingCommand::success().with_body(body),
        Err(e) => error(response_code::SYSTEM_ERROR, e.to_string()),
    }
}

pub(super) async fn serve(node: &ControllerNode, request: &RemotingCommand) -> RemotingCommand {
    let raft = &node.raft;
    let result = match request.code {
        request_code::RAFT_VOTE => match parse(request) {
            Ok(rpc) => answer(&raft.vote(rpc).await),
            Err(e) => e,
        },
        request_code::RAFT_APPEND_ENTRIES => match parse(request) {
            Ok(rpc) => answer(&raft.append_entries(rpc).await),
            Err(e) => e,
        },
        _ => match parse(request) {
            Ok(rpc) => answer(&raft.install_snapshot(rpc).await),
            Err(e) => e,
        },
    };
    result
}
