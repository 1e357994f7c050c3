//! GET_CONTROLLER_CONFIG (1010) and UPDATE_CONTROLLER_CONFIG (1009): this controller's
//! effective configuration as `.properties` text, and changing the keys it reads at
//! each election (`runtime_config`). Each controller answers for itself, leader or
//! not; tools ask each address of the quorum.

use tracing::info;
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::properties;
use vostok_remoting::RemotingCommand;

use super::error;
use crate::node::ControllerNode;

pub(super) fn get_config(node: &ControllerNode) -> RemotingCommand {
    let pairs = crate::config::KEYS.print(&node.runtime.effective(&node.config));
    RemotingCommand::success().with_body(properties::render(&pairs).into_bytes())
}

pub(super) fn update_config(node: &ControllerNode, request: &RemotingCommand) -> RemotingCommand {
    let changes = properties::parse(&String::from_utf8_lossy(&request.body));
    if changes.is_empty() {
        return error(response_code::SYSTEM_ERROR, "no config in the request body");
    }
    match node.runtime.apply(&node.config, &changes) {
        Ok(()) => {
            info!(changes = ?changes, "controller config updated at run time");
            RemotingCommand::success()
        }
        Err(reason) => error(response_code::INVALID_PARAMETER, reason),
    }
}
