//! Route and topic-list queries of a user confined to namespaces
//! (docs/security.md#namespaces): when the name server knows the ACL 2.0 users (the
//! one a standalone broker embeds shares that broker's), a query signed by one of
//! them is authenticated by its password, a confined user may look up only its
//! namespaces' topics, and its topic lists hold only them. Queries signed by other
//! accounts, or not signed, follow the name server's own rules (`access`).

use vostok_auth::namespace::{self, Confinement};
use vostok_auth::{Access, Resource};
use vostok_remoting::protocol::body::{KvTable, TopicList};
use vostok_remoting::protocol::{json, request_code as code, response_code};
use vostok_remoting::RemotingCommand;

use super::{error, Shared};
use crate::kv_config::NAMESPACE_ORDER_TOPIC_CONFIG;

/// `Some` when `request` is a query signed by an ACL 2.0 user the name server
/// knows: its confinement (`None`: sees everything), or the refusal (bad signature,
/// disabled user, a topic outside its namespaces).
pub(super) fn signer(
    s: &Shared,
    request: &RemotingCommand,
) -> Option<Result<Option<Confinement>, RemotingCommand>> {
    if !super::access::is_query(request.code) {
        return None;
    }
    let users = s.config.auth_users.as_ref()?;
    let checked = namespace::of_signer(&users.metadata, request, &users.time_window)?;
    Some(
        checked
            .and_then(|confinement| {
                if let Some(c) = &confinement {
                    let user = request.ext_fields.get("AccessKey").unwrap_or("-");
                    c.check(user, request.code, &Access::Names(named(request)))?;
                }
                Ok(confinement)
            })
            .map_err(|denied| error(response_code::NO_PERMISSION, denied.reason)),
    )
}

/// The topics a query names: a route's topic, an order-topic setting's key.
fn named(request: &RemotingCommand) -> Vec<Resource<'_>> {
    let field = |k| request.ext_fields.get(k).unwrap_or("");
    match request.code {
        code::GET_ROUTEINFO_BY_TOPIC => vec![Resource::topic(field("topic"))],
        code::GET_KV_CONFIG if field("namespace") == NAMESPACE_ORDER_TOPIC_CONFIG => {
            vec![Resource::topic(field("key"))]
        }
        _ => vec![],
    }
}

/// `response` to `request`, narrowed to the namespaces of `confinement`: topic lists
/// keep only their topics, the order-topic settings only theirs.
pub(super) fn narrow(
    request: &RemotingCommand,
    response: RemotingCommand,
    confinement: &Confinement,
) -> RemotingCommand {
    if response.code != response_code::SUCCESS || response.body.is_empty() {
        return response;
    }
    let admits = |name: &str| confinement.admits(name);
    let body = match request.code {
        code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        | code::GET_TOPICS_BY_CLUSTER
        | code::GET_SYSTEM_TOPIC_LIST_FROM_NS
        | code::GET_UNIT_TOPIC_LIST
        | code::GET_HAS_UNIT_SUB_TOPIC_LIST
        | code::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => {
            json::from_slice::<TopicList>("TopicList", &response.body).map(|mut list| {
                list.topic_list.retain(|t| admits(t));
                json::to_vec(&list)
            })
        }
        code::GET_KVLIST_BY_NAMESPACE
            if request.ext_fields.get("namespace") == Some(NAMESPACE_ORDER_TOPIC_CONFIG) =>
        {
            json::from_slice::<KvTable>("KvTable", &response.body).map(|mut kv| {
                kv.table.retain(|t, _| admits(t));
                json::to_vec(&kv)
            })
        }
        _ => return response,
    };
    match body {
        Ok(body) => response.with_body(body),
        Err(e) => error(
            response_code::SYSTEM_ERROR,
            format!("the answer could not be narrowed to your namespace: {e}"),
        ),
    }
}
