//! What each name-server request needs when ACL is on (docs/security.md#name-server).
//!
//! Writes need a signed admin account: broker registration and its companions,
//! topic deletion, write-permission changes, KV writes, and every code not listed.
//! A broker may only register, unregister or heartbeat under a broker name its
//! account lists in `brokerNames`: nobody can take another broker's route. Queries
//! (routes, cluster info, topic lists, KV reads, config) are open unless
//! `routeQueryAclEnable`, then any signed account may ask.
//!
//! **Vostok differs:** Apache's name server checks nothing, so anyone who reaches
//! port 9876 can register a fake broker under a real broker's name.

use tracing::debug;
use vostok_auth::{Access, Guard};
use vostok_remoting::protocol::request_code as code;
use vostok_remoting::protocol::response_code;
use vostok_remoting::{Channel, RemotingCommand};

use super::error;
use crate::config::NamesrvConfig;

/// Whether `request_code` is a query: open unless `routeQueryAclEnable`, and answered
/// within a confined user's namespaces (`scope`).
pub(super) fn is_query(request_code: i32) -> bool {
    matches!(
        request_code,
        code::GET_ROUTEINFO_BY_TOPIC
            | code::GET_BROKER_CLUSTER_INFO
            | code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER
            | code::GET_TOPICS_BY_CLUSTER
            | code::GET_SYSTEM_TOPIC_LIST_FROM_NS
            | code::GET_UNIT_TOPIC_LIST
            | code::GET_HAS_UNIT_SUB_TOPIC_LIST
            | code::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST
            | code::GET_KV_CONFIG
            | code::GET_KVLIST_BY_NAMESPACE
            | code::GET_NAMESRV_CONFIG
    )
}

/// `None`: no check at all.
fn access(request_code: i32, config: &NamesrvConfig) -> Option<Access<'static>> {
    match request_code {
        c if is_query(c) => config.route_query_acl_enable.then_some(Access::Open),
        _ => Some(Access::Admin),
    }
}

/// Requests that act under a broker name: the account must own it.
fn claims_broker_name(request_code: i32) -> bool {
    matches!(
        request_code,
        code::REGISTER_BROKER | code::UNREGISTER_BROKER | code::BROKER_HEARTBEAT
    )
}

/// Accepts `request` or returns the refusal to answer with (NO_PERMISSION).
pub(super) fn check(
    guard: &Guard,
    config: &NamesrvConfig,
    channel: &Channel,
    request: &RemotingCommand,
) -> Result<(), RemotingCommand> {
    let Some(needs) = access(request.code, config) else {
        return Ok(());
    };
    let ip = channel.peer_addr().ip();
    match guard.check_remoting(ip, request, || needs, claims_broker_name(request.code)) {
        Ok(_) => Ok(()),
        Err(denied) => {
            debug!(code = request.code, peer = %channel.peer_addr(), reason = %denied, "request refused by ACL");
            Err(error(response_code::NO_PERMISSION, denied.reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_need_an_admin_and_queries_are_open_unless_configured() {
        let mut config = NamesrvConfig::default();
        assert_eq!(access(code::REGISTER_BROKER, &config), Some(Access::Admin));
        assert_eq!(access(code::PUT_KV_CONFIG, &config), Some(Access::Admin));
        assert_eq!(
            access(code::UPDATE_NAMESRV_CONFIG, &config),
            Some(Access::Admin)
        );
        assert_eq!(
            access(code::DELETE_TOPIC_IN_NAMESRV, &config),
            Some(Access::Admin)
        );
        assert_eq!(
            access(99_999, &config),
            Some(Access::Admin),
            "unknown codes"
        );
        assert_eq!(access(code::GET_ROUTEINFO_BY_TOPIC, &config), None);
        config.route_query_acl_enable = true;
        assert_eq!(
            access(code::GET_ROUTEINFO_BY_TOPIC, &config),
            Some(Access::Open)
        );
        assert!(
            claims_broker_name(code::REGISTER_BROKER) && !claims_broker_name(code::PUT_KV_CONFIG)
        );
    }
}
