//! The controller's request processor (docs/controller.md#requests): one `match` on
//! the request code. Heartbeats, GET_METADATA_INFO, the controller's own config and
//! the Raft messages are served by every controller; everything else only by the Raft leader, others answer
//! CONTROLLER_NOT_LEADER (brokers then ask GET_METADATA_INFO who leads). With
//! `aclEnable` every request passes `access` first.

mod access;
mod broker;
mod config;
mod elect;
mod query;
mod raft;

use std::sync::Arc;

use vostok_auth::Guard;
use vostok_remoting::protocol::header::CommandHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{BoxFuture, Channel, RemotingCommand, RequestProcessor};

use crate::node::ControllerNode;

pub use elect::elect_for;

pub struct ControllerProcessor {
    pub node: Arc<ControllerNode>,
    /// Present when ACL is on (`aclEnable`).
    pub guard: Option<Arc<Guard>>,
    /// With ACL on, Raft messages must be signed with one of these access keys.
    pub raft_access_keys: Vec<String>,
}

fn error(code: i32, remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(code, Some(remark.into()))
}

fn header<H: CommandHeader>(request: &RemotingCommand) -> Result<H, RemotingCommand> {
    request.decode_header::<H>().map_err(|e| {
        error(
            response_code::CONTROLLER_INVALID_REQUEST,
            format!("bad request header: {e}"),
        )
    })
}

async fn dispatch(node: &ControllerNode, request: RemotingCommand) -> RemotingCommand {
    let code = request.code;
    match code {
        request_code::BROKER_HEARTBEAT => return broker::heartbeat(node, &request),
        request_code::CONTROLLER_GET_METADATA_INFO => return query::metadata(node),
        request_code::GET_CONTROLLER_CONFIG => return config::get_config(node),
        request_code::UPDATE_CONTROLLER_CONFIG => return config::update_config(node, &request),
        request_code::RAFT_VOTE
        | request_code::RAFT_APPEND_ENTRIES
        | request_code::RAFT_INSTALL_SNAPSHOT => return raft::serve(node, &request).await,
        _ => {}
    }
    if let Err(not_leader) = node.ensure_leader().await {
        return not_leader;
    }
    let answer = match code {
        request_code::CONTROLLER_GET_NEXT_BROKER_ID => broker::next_broker_id(node, &request),
        request_code::CONTROLLER_APPLY_BROKER_ID => broker::apply_broker_id(node, &request).await,
        request_code::CONTROLLER_REGISTER_BROKER => broker::register(node, &request).await,
        request_code::CONTROLLER_ALTER_SYNC_STATE_SET => broker::alter(node, &request).await,
        request_code::CONTROLLER_ELECT_MASTER => elect::elect_master(node, &request).await,
        request_code::CONTROLLER_GET_REPLICA_INFO => query::replica_info(node, &request),
        request_code::CONTROLLER_GET_SYNC_STATE_DATA => query::sync_state_data(node, &request),
        request_code::CLEAN_BROKER_DATA => query::clean(node, &request).await,
        _ => Ok(vostok_remoting::processor::not_supported(&request)),
    };
    answer.unwrap_or_else(|e| e)
}

impl RequestProcessor for ControllerProcessor {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move {
            if let Some(guard) = &self.guard {
                let controllers = &self.raft_access_keys;
                if let Err(refusal) = access::check(guard, channel, &request, controllers) {
                    return (!request.is_oneway()).then_some(refusal);
                }
            }
            Some(dispatch(&self.node, request).await)
        })
    }
}
