//! What each controller request needs when ACL is on (docs/controller.md#acl).
//!
//! Every request must be signed by an account of `plain_acl.yml`. Reads of the
//! controller's metadata (who leads, a group's replicas and SyncStateSet) need any
//! account; everything that changes who is master or in sync needs an admin
//! account. The Raft traffic between controllers (votes, appends, snapshots) is
//! taken only from the controllers' own accounts (`controllerAccessKeys`, else this
//! controller's `accessKey`), signed whatever the sender's address: an admin who
//! could vote could depose the leader at will. A broker's own lifecycle requests
//! (heartbeat, broker id, registration, SyncStateSet changes) and the requests that
//! re-route a group (electing a master, cleaning a group's data) also need the account
//! to list the group's broker name under `brokerNames`, as the name server asks of a
//! registering broker: nobody can take over another group.
//!
//! **Vostok differs:** Apache's controller checks nothing, so anyone who reaches it
//! can elect a master of any group.

use tracing::debug;
use vostok_auth::{Access, Denied, Guard};
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

fn is_raft(request_code: i32) -> bool {
    matches!(
        request_code,
        code::RAFT_VOTE | code::RAFT_APPEND_ENTRIES | code::RAFT_INSTALL_SNAPSHOT
    )
}

/// A Raft message signed by one of `controllers` (their access keys).
fn check_raft(
    guard: &Guard,
    request: &RemotingCommand,
    controllers: &[String],
) -> Result<(), Denied> {
    let signer = guard.signer(request)?;
    if controllers.contains(&signer.access_key) {
        return Ok(());
    }
    Err(Denied::new(format!(
        "access denied: request {} ({}) is taken only from the controllers' own accounts \
         (controllerAccessKeys), and AccessKey {} is not one",
        code::name(request.code),
        request.code,
        signer.access_key
    )))
}

/// Accepts `request` or returns the refusal to answer with (NO_PERMISSION);
/// `controllers` are the access keys Raft messages must be signed with.
pub(super) fn check(
    guard: &Guard,
    channel: &Channel,
    request: &RemotingCommand,
    controllers: &[String],
) -> Result<(), RemotingCommand> {
    let (ip, code) = (channel.peer_addr().ip(), request.code);
    let checked = if is_raft(code) {
        check_raft(guard, request, controllers)
    } else {
        guard
            .check_remoting(ip, request, || access(code), claims_broker_name(code))
            .map(drop)
    };
    checked.map_err(|denied| {
        debug!(code, peer = %channel.peer_addr(), reason = %denied, "request refused by ACL");
        error(response_code::NO_PERMISSION, denied.reason)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_an_account_and_everything_else_an_admin() {
        assert_eq!(access(code::CONTROLLER_GET_METADATA_INFO), Access::Open);
        assert_eq!(access(code::CONTROLLER_GET_SYNC_STATE_DATA), Access::Open);
        assert_eq!(access(code::CONTROLLER_ELECT_MASTER), Access::Admin);
        assert_eq!(access(code::BROKER_HEARTBEAT), Access::Admin);
        assert_eq!(access(99_999), Access::Admin, "unknown codes");
        assert!(claims_broker_name(code::CONTROLLER_ELECT_MASTER));
        assert!(!claims_broker_name(code::RAFT_VOTE));
        assert!(!claims_broker_name(code::CONTROLLER_GET_METADATA_INFO));
        for raft in [
            code::RAFT_VOTE,
            code::RAFT_APPEND_ENTRIES,
            code::RAFT_INSTALL_SNAPSHOT,
        ] {
            assert!(is_raft(raft));
        }
        assert!(!is_raft(code::CONTROLLER_ELECT_MASTER));
    }
}
