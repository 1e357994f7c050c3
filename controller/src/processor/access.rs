//! What each controller request needs when ACL is on (docs/controller.md#acl).
//!
//! Every request must be signed by an account of `plain_acl.yml`. Reads of the
//! controller's metadata (who leads, a group's replicas and SyncStateSet) need any
//! account; everything that changes who is master or in sync, and the Raft traffic
//! between controllers, needs an admin account. A broker's own lifecycle requests
//! (heartbeat, broker id, registration, SyncStateSet changes) and the requests that
//! re-route a group (electing a master, cleaning a group's data) also need the account
//! to list the group's broker name under `brokerNames`, as the name server asks of a
//! registering broker: nobody can take over another group.
//!
//! **Vostok differs:** Apache's controller checks nothing, so anyone who reaches it
//! can elect a master of any group.

use tracing::debug;
use vostok_auth::{Access, Guard};
use vostok_remoting::protocol::request_code as code;
use vostok_remoting::protocol::response_code;
use vostok_remoting::{Channel, RemotingCommand};

use super::error;

fn access(request_code: i32) -> Access<'static> {
    match request_code {
        code::CONTROLLER_GET_METADATA_INFO
        | code::CONTROLLER_GET_REPLICA_INFO
        | code::CONTROLLER_GET_SYNC_STATE_DATA => Access::Open,
        _ => Access::Admin,
    }
}

/// Requests that act on one broker group, named by their `brokerName` field.
fn claims_broker_name(request_code: i32) -> bool {
    matches!(
        request_code,
        code::BROKER_HEARTBEAT
            | code::CONTROLLER_GET_NEXT_BROKER_ID
            | code::CONTROLLER_APPLY_BROKER_ID
            | code::CONTROLLER_REGISTER_BROKER
            | code::CONTROLLER_ALTER_SYNC_STATE_SET
            | code::CONTROLLER_ELECT_MASTER
            | code::CLEAN_BROKER_DATA
    )
}

/// Accepts `request` or returns the refusal to answer with (NO_PERMISSION).
pub(super) fn check(
    guard: &Guard,
    channel: &Channel,
    request: &RemotingCommand,
) -> Result<(), RemotingCommand> {
    let (ip, code) = (channel.peer_addr().ip(), request.code);
    match guard.check_remoting(ip, request, || access(code), claims_broker_name(code)) {
        Ok(_) => Ok(()),
        Err(denied) => {
            debug!(code, peer = %channel.peer_addr(), reason = %denied, "request refused by ACL");
            Err(error(response_code::NO_PERMISSION, denied.reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_an_account_and_everything_else_an_admin() {
        assert_eq!(access(code::CONTROLLER_GET_METADATA_INFO), Access::Open);
        assert_eq!(access(code::CONTROLLER_GET_SYNC_STATE_DATA), Access::Open);
        assert_eq!(access(code::CONTROLLER_ELECT_MASTER), Access::Admin);
        assert_eq!(access(code::RAFT_APPEND_ENTRIES), Access::Admin);
        assert_eq!(access(code::BROKER_HEARTBEAT), Access::Admin);
        assert_eq!(access(99_999), Access::Admin, "unknown codes");
        assert!(claims_broker_name(code::CONTROLLER_ELECT_MASTER));
        assert!(!claims_broker_name(code::RAFT_VOTE));
        assert!(!claims_broker_name(code::CONTROLLER_GET_METADATA_INFO));
    }
}
