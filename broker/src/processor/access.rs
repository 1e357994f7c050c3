//! What each broker request needs from its account when ACL is on
//! (docs/security.md#request-table): the topics and groups it touches and the
//! permission on each, or an admin account.
//!
//! The rows of Apache's ACL 1.0 table (`PlainAccessResource.parse`) plus those its ACL
//! 2.0 adds (offset queries, queue locks, END_TRANSACTION); requests clients make
//! that touch no named resource need only a valid signature. **Every other code is
//! admin-only**, including every administrative request the broker serves (topic and
//! group changes, config, offsets of all groups, runtime figures) and codes this table
//! does not know: a request code added to the broker stays admin-only until it gets a
//! row here.
//!
//! Resources borrow their names from the request's fields (a send copies no topic
//! name); those read from a body or a stored message own theirs.
//!
//! A field the table reads that the request left out is an empty name, which the guard
//! refuses; a body that does not parse, or a stored message that cannot be read, is
//! [`Access::Unresolved`]. The requests that point at a stored message by its
//! commitlog offset (END_TRANSACTION, VIEW_MESSAGE_BY_ID, CONSUMER_SEND_MSG_BACK) need
//! their permission on the topic that message belongs to, read from the store
//! (`ops::stored_access`), whatever topic the request names.

use std::borrow::Cow;

use vostok_auth::{Access, Need, Resource};
use vostok_remoting::protocol::body::{
    BatchAckMessageRequestBody, HeartbeatData, LockBatchRequestBody, QueryAssignmentRequestBody,
};
use vostok_remoting::protocol::request_code as code;
use vostok_remoting::RemotingCommand;

use crate::ops::stored_access::stored_message_resources;
use crate::state::Broker;

fn field<'a>(request: &'a RemotingCommand, key: &str) -> &'a str {
    request.ext_fields.get(key).unwrap_or("")
}

/// The need of a send to `resource`: PUB, or SUB when it is a group's retry topic.
fn send_need(resource: Resource<'_>) -> Need<'_> {
    if resource.is_group() {
        Need::subscribe(resource)
    } else {
        Need::publish(resource)
    }
}

/// A send to `topic`.
fn send(topic: &str) -> Access<'_> {
    Access::Needs(vec![send_need(Resource::topic(topic))])
}

fn unreadable(what: &str) -> Access<'static> {
    Access::Unresolved(Cow::Owned(format!(
        "has a body that cannot be read ({what})"
    )))
}

/// The resources of the message stored at the commitlog offset in field `key`
/// (`ops::stored_access`), or the refusal when there is none.
fn stored_resources(
    broker: &Broker,
    request: &RemotingCommand,
    key: &str,
    group: Option<&str>,
) -> Result<Vec<Resource<'static>>, Access<'static>> {
    let offset = field(request, key);
    offset
        .trim()
        .parse()
        .ok()
        .and_then(|offset| stored_message_resources(&broker.storage.store, offset, group))
        .ok_or_else(|| {
            Access::Unresolved(Cow::Owned(format!(
                "names no stored message ({key} {offset:?})"
            )))
        })
}

/// The topic a POP request names: a POP retry topic (`%RETRY%<group>_<topic>` or
/// `%RETRY%<group>+<topic>`, what acks of retried messages carry) stands for its topic.
fn pop_topic<'a>(topic: &'a str, group: &str) -> Resource<'a> {
    let retry_prefix = format!("%RETRY%{group}");
    match topic
        .strip_prefix(retry_prefix.as_str())
        .and_then(|rest| rest.strip_prefix('_').or_else(|| rest.strip_prefix('+')))
    {
        Some(original) if !original.is_empty() => Resource::topic(original),
        _ => Resource::topic(topic),
    }
}

/// A POP request (pop, peek, ack, invisible time, notification): SUB on the topic and
/// on the group, as Apache's ACL 2.0 annotates their headers.
fn pop<'a>(topic: &'a str, group: &'a str) -> Access<'a> {
    sub([pop_topic(topic, group), Resource::group(group)])
}

fn sub<'a>(resources: impl IntoIterator<Item = Resource<'a>>) -> Access<'a> {
    Access::Needs(resources.into_iter().map(Need::subscribe).collect())
}

/// The needs of `request`; bodies are read only for the requests that name their
/// resources there (HEART_BEAT, queue locks, batch acks), the store only for those
/// that point at a stored message.
pub(crate) fn access<'r>(broker: &Broker, request: &'r RemotingCommand) -> Access<'r> {
    let f = |key| field(request, key);
    let stored = |key, group| stored_resources(broker, request, key, group);
    match request.code {
        // The message goes to the group's retry topic, where the group reads it: the
        // group must be able to read where it came from.
        code::CONSUMER_SEND_MSG_BACK => match stored("offset", Some(f("group"))) {
            Ok(resources) => sub(std::iter::once(Resource::group(f("group"))).chain(resources)),
            Err(refused) => refused,
        },
        // A commit is a send to the half message's real topic; a rollback throws it
        // away. The `topic` field (5.x clients only) is not what decides.
        code::END_TRANSACTION => match stored("commitLogOffset", None) {
            Ok(resources) => Access::Needs(resources.into_iter().map(send_need).collect()),
            Err(refused) => refused,
        },
        code::VIEW_MESSAGE_BY_ID => match stored("offset", None) {
            Ok(resources) => sub(resources),
            Err(refused) => refused,
        },
        _ => by_fields(request),
    }
}

/// The needs of the requests that name their resources in their fields or body.
fn by_fields(request: &RemotingCommand) -> Access<'_> {
    let f = |key| field(request, key);
    match request.code {
        code::SEND_MESSAGE | code::SEND_REPLY_MESSAGE => send(f("topic")),
        code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE | code::SEND_REPLY_MESSAGE_V2 => {
            send(f("b"))
        }
        code::RECALL_MESSAGE => Access::Needs(vec![Need::publish(Resource::topic(f("topic")))]),
        code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => sub([
            Resource::topic(f("topic")),
            Resource::group(f("consumerGroup")),
        ]),
        code::QUERY_MESSAGE => sub([Resource::topic(f("topic"))]),
        code::HEART_BEAT => match HeartbeatData::decode(&request.body) {
            Ok(data) => sub(data.consumer_data_set.iter().flat_map(|c| {
                std::iter::once(Resource::group(&c.group_name).into_owned()).chain(
                    c.subscription_data_set
                        .iter()
                        .map(|s| Resource::topic(&s.topic).into_owned()),
                )
            })),
            Err(_) => unreadable("HeartbeatData"),
        },
        code::UNREGISTER_CLIENT => match f("consumerGroup") {
            "" => match f("producerGroup") {
                "" => Access::Open,
                group => Access::Names(vec![Resource::group(group)]),
            },
            group => sub([Resource::group(group)]),
        },
        code::GET_CONSUMER_LIST_BY_GROUP => sub([Resource::group(f("consumerGroup"))]),
        code::UPDATE_CONSUMER_OFFSET | code::QUERY_CONSUMER_OFFSET => sub([
            Resource::group(f("consumerGroup")),
            Resource::topic(f("topic")),
        ]),
        code::LOCK_BATCH_MQ | code::UNLOCK_BATCH_MQ => {
            match vostok_remoting::protocol::json::from_slice::<LockBatchRequestBody>(
                "LockBatchRequestBody",
                &request.body,
            ) {
                Ok(body) => sub(std::iter::once(
                    Resource::group(&body.consumer_group).into_owned(),
                )
                .chain(
                    body.mq_set
                        .iter()
                        .map(|mq| Resource::topic(&mq.topic).into_owned()),
                )),
                Err(_) => unreadable("LockBatchRequestBody"),
            }
        }
        code::POP_MESSAGE
        | code::POP_MESSAGE_SHORT
        | code::PEEK_MESSAGE
        | code::PEEK_MESSAGE_SHORT
        | code::ACK_MESSAGE
        | code::ACK_MESSAGE_SHORT
        | code::CHANGE_MESSAGE_INVISIBLETIME
        | code::CHANGE_MESSAGE_INVISIBLETIME_SHORT
        | code::NOTIFICATION
        | code::NOTIFICATION_SHORT
        | code::POLLING_INFO
        | code::POLLING_INFO_SHORT => pop(f("topic"), f("consumerGroup")),
        code::BATCH_ACK_MESSAGE | code::BATCH_ACK_MESSAGE_SHORT => {
            match vostok_remoting::protocol::json::from_slice::<BatchAckMessageRequestBody>(
                "BatchAckMessageRequestBody",
                &request.body,
            ) {
                Ok(body) => sub(body.acks.iter().flat_map(|a| {
                    [
                        pop_topic(&a.topic, &a.consumer_group).into_owned(),
                        Resource::group(&a.consumer_group).into_owned(),
                    ]
                })),
                Err(_) => unreadable("BatchAckMessageRequestBody"),
            }
        }
        code::QUERY_ASSIGNMENT => match vostok_remoting::protocol::json::from_slice::<
            QueryAssignmentRequestBody,
        >("QueryAssignmentRequestBody", &request.body)
        {
            Ok(body) => sub([
                Resource::topic(&body.topic).into_owned(),
                Resource::group(&body.consumer_group).into_owned(),
            ]),
            Err(_) => unreadable("QueryAssignmentRequestBody"),
        },
        // Client requests that read no message (offsets and times of a queue, a topic's
        // queue counts): a signature is enough, but the topic they name must be inside
        // a confined user's namespace.
        code::CHECK_CLIENT_CONFIG => Access::Open,
        code::GET_MAX_OFFSET
        | code::GET_MIN_OFFSET
        | code::SEARCH_OFFSET_BY_TIMESTAMP
        | code::GET_EARLIEST_MSG_STORETIME
        | code::GET_TOPIC_CONFIG => Access::Names(vec![Resource::topic(f("topic"))]),
        // Administrative reads: an admin's, or a confined user's about its own
        // namespaces (the lists are narrowed to them, `scope`).
        code::GET_ALL_TOPIC_CONFIG
        | code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        | code::GET_BROKER_CONSUME_STATS => Access::Scoped(vec![]),
        code::GET_TOPIC_STATS_INFO | code::QUERY_TOPIC_CONSUME_BY_WHO => {
            Access::Scoped(vec![Resource::topic(f("topic"))])
        }
        code::GET_CONSUME_STATS | code::GET_CONSUMER_CONNECTION_LIST => {
            let mut named = vec![Resource::group(f("consumerGroup"))];
            named.extend(
                Some(f("topic"))
                    .filter(|t| !t.is_empty())
                    .map(Resource::topic),
            );
            Access::Scoped(named)
        }
        code::GET_PRODUCER_CONNECTION_LIST => {
            Access::Scoped(vec![Resource::group(f("producerGroup"))])
        }
        code::GET_SUBSCRIPTIONGROUP_CONFIG => Access::Scoped(vec![Resource::group(f("group"))]),
        _ => Access::Admin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
        let mut r = RemotingCommand::request(code);
        for (k, v) in fields {
            r.ext_fields.insert(k, v);
        }
        r
    }

    #[test]
    fn pop_requests_need_their_topic_and_group() {
        let both = Access::Needs(vec![
            Need::subscribe(Resource::topic("T")),
            Need::subscribe(Resource::group("G")),
        ]);
        for code in [
            code::POP_MESSAGE,
            code::POP_MESSAGE_SHORT,
            code::PEEK_MESSAGE,
        ] {
            let r = with(code, &[("topic", "T"), ("consumerGroup", "G")]);
            assert_eq!(by_fields(&r), both);
        }
        for retry in ["%RETRY%G_T", "%RETRY%G+T"] {
            let r = with(
                code::ACK_MESSAGE,
                &[("topic", retry), ("consumerGroup", "G")],
            );
            assert_eq!(by_fields(&r), both, "an ack of a retried message: {retry}");
        }
        let body = br#"{"acks":[{"c":"G","t":"%RETRY%G_T","r":"1","so":0,"q":0,"rq":0,"pt":1,"it":1,"b":""}]}"#;
        let r = RemotingCommand::request(code::BATCH_ACK_MESSAGE).with_body(&body[..]);
        assert_eq!(by_fields(&r), both);
    }

    #[test]
    fn unreadable_bodies_and_left_out_fields_are_refusals() {
        for c in [
            code::HEART_BEAT,
            code::LOCK_BATCH_MQ,
            code::UNLOCK_BATCH_MQ,
            code::BATCH_ACK_MESSAGE,
            code::QUERY_ASSIGNMENT,
        ] {
            let r = RemotingCommand::request(c).with_body(&b"{not json"[..]);
            assert!(
                matches!(by_fields(&r), Access::Unresolved(_)),
                "{}",
                code::name(c)
            );
        }
        for (r, says) in [
            (
                with(code::PULL_MESSAGE, &[("consumerGroup", "G")]),
                "names no topic",
            ),
            (with(code::SEND_MESSAGE_V2, &[]), "names no topic"),
            (
                with(code::SEND_MESSAGE_V2, &[("b", "%RETRY%")]),
                "names no group",
            ),
        ] {
            assert_eq!(by_fields(&r).unresolved().as_deref(), Some(says));
        }
    }

    #[test]
    fn operations_requests_are_admin_only() {
        for code in [
            code::VOSTOK_MESSAGE_STATUS,
            code::VOSTOK_BROWSE_MESSAGES,
            code::VOSTOK_REMOVE_MESSAGE,
            code::VOSTOK_RESEND_DLQ_MESSAGE,
            code::VOSTOK_GET_GROUP_LAG,
            code::VOSTOK_GET_CONNECTED_CLIENTS,
        ] {
            let r = with(code, &[("topic", "T"), ("group", "G")]);
            assert_eq!(by_fields(&r), Access::Admin, "{}", code::name(code));
        }
    }

    #[test]
    fn a_broker_balanced_consumer_needs_its_topic_and_group() {
        let body = br#"{"topic":"T","consumerGroup":"G","clientId":"c","strategyName":"AVG","messageModel":"CLUSTERING"}"#;
        let r = RemotingCommand::request(code::QUERY_ASSIGNMENT).with_body(&body[..]);
        assert_eq!(
            by_fields(&r),
            Access::Needs(vec![
                Need::subscribe(Resource::topic("T")),
                Need::subscribe(Resource::group("G"))
            ])
        );
    }

    #[test]
    fn sends_pulls_and_unknown_codes() {
        assert_eq!(
            by_fields(&with(code::SEND_MESSAGE_V2, &[("b", "T")])),
            Access::Needs(vec![Need::publish(Resource::topic("T"))])
        );
        assert_eq!(
            by_fields(&with(code::SEND_MESSAGE, &[("topic", "%RETRY%G")])),
            Access::Needs(vec![Need::subscribe(Resource::group("G"))])
        );
        assert_eq!(
            by_fields(&with(
                code::PULL_MESSAGE,
                &[("topic", "T"), ("consumerGroup", "G")]
            )),
            Access::Needs(vec![
                Need::subscribe(Resource::topic("T")),
                Need::subscribe(Resource::group("G"))
            ])
        );
        assert_eq!(
            by_fields(&with(code::GET_MAX_OFFSET, &[("topic", "T")])),
            Access::Names(vec![Resource::topic("T")])
        );
        assert_eq!(
            by_fields(&with(code::UNREGISTER_CLIENT, &[("producerGroup", "P")])),
            Access::Names(vec![Resource::group("P")])
        );
        assert_eq!(by_fields(&with(code::UNREGISTER_CLIENT, &[])), Access::Open);
        assert_eq!(
            by_fields(&with(code::GET_ALL_TOPIC_CONFIG, &[])),
            Access::Scoped(vec![])
        );
        assert_eq!(
            by_fields(&with(
                code::GET_CONSUME_STATS,
                &[("consumerGroup", "G"), ("topic", "T")]
            )),
            Access::Scoped(vec![Resource::group("G"), Resource::topic("T")])
        );
        assert_eq!(
            by_fields(&with(code::GET_CONSUME_STATS, &[("consumerGroup", "G")])),
            Access::Scoped(vec![Resource::group("G")])
        );
        for admin in [
            code::UPDATE_AND_CREATE_TOPIC,
            code::GET_BROKER_CONFIG,
            code::UPDATE_BROKER_CONFIG,
            code::INVOKE_BROKER_TO_RESET_OFFSET,
            code::CLEAN_EXPIRED_CONSUMEQUEUE,
            code::DELETE_EXPIRED_COMMITLOG,
            code::GET_CONSUMER_RUNNING_INFO,
            code::CONSUME_MESSAGE_DIRECTLY,
            code::QUERY_CONSUME_QUEUE,
            code::GET_BROKER_HA_STATUS,
            code::RESET_MASTER_FLUSH_OFFSET,
            code::CLEAN_UNUSED_TOPIC,
            code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
            code::SET_MESSAGE_REQUEST_MODE,
            code::GET_ALL_MESSAGE_REQUEST_MODE,
            code::UPDATE_AND_CREATE_ACL_CONFIG,
            code::DELETE_ACL_CONFIG,
            code::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
            code::GET_BROKER_CLUSTER_ACL_INFO,
            4242,
        ] {
            assert_eq!(by_fields(&with(admin, &[])), Access::Admin, "code {admin}");
        }
    }
}
