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

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_auth::v2::store::CompiledAcl;
    use vostok_auth::v2::{model::Entry, PolicyEntryInfo};

    fn ns1() -> Confinement {
        let entry = Entry::compile(&PolicyEntryInfo {
            resource: "Namespace:ns1".into(),
            actions: vec!["Sub".into()],
            source_ips: vec![],
            decision: "Allow".into(),
        })
        .unwrap();
        let acl = CompiledAcl {
            custom: vec![entry],
            default: vec![],
        };
        Confinement::of(Some(&acl)).unwrap()
    }

    fn asked(code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
        let mut r = RemotingCommand::request(code);
        for (k, v) in fields {
            r.ext_fields.insert(k, v);
        }
        r
    }

    #[test]
    fn topic_lists_and_order_settings_keep_only_the_namespace() {
        let topics = TopicList {
            broker_addr: None,
            topic_list: ["ns1%a", "ns2%b", "TBW102", "%RETRY%ns1%g"]
                .map(String::from)
                .into(),
        };
        let answer = RemotingCommand::success().with_body(json::to_vec(&topics));
        let narrowed = narrow(
            &asked(code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]),
            answer,
            &ns1(),
        );
        let list: TopicList = json::from_slice("TopicList", &narrowed.body).unwrap();
        assert_eq!(
            list.topic_list.into_iter().collect::<Vec<_>>(),
            ["%RETRY%ns1%g", "ns1%a"]
        );

        let kv = KvTable {
            table: [("ns1%a", "b:4"), ("ns2%b", "b:4")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into(),
        };
        let order = [("namespace", NAMESPACE_ORDER_TOPIC_CONFIG)];
        let answer = RemotingCommand::success().with_body(json::to_vec(&kv));
        let narrowed = narrow(
            &asked(code::GET_KVLIST_BY_NAMESPACE, &order),
            answer,
            &ns1(),
        );
        let kv: KvTable = json::from_slice("KvTable", &narrowed.body).unwrap();
        assert_eq!(kv.table.keys().collect::<Vec<_>>(), ["ns1%a"]);

        let route = asked(code::GET_ROUTEINFO_BY_TOPIC, &[("topic", "ns2%b")]);
        assert_eq!(named(&route), [Resource::topic("ns2%b")]);
        let key = asked(
            code::GET_KV_CONFIG,
            &[
                ("namespace", NAMESPACE_ORDER_TOPIC_CONFIG),
                ("key", "ns2%b"),
            ],
        );
        assert_eq!(named(&key), [Resource::topic("ns2%b")]);
    }
}
