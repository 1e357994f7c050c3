//! Who is looking at a page, and what they may see and do
//! (docs/operations.md#console-security). With ACL off, anyone who reaches the console
//! may do everything. With ACL on, every page and action is the request an account
//! could make itself, checked by the broker's guard exactly as that request would be:
//!
//! | page or action | stands for | needs |
//! |---|---|---|
//! | `/` (brokers), `/clients`, `/producers`, `/config` | GET_BROKER_RUNTIME_INFO, connection lists, GET_BROKER_CONFIG | admin |
//! | `/topics`, `/groups` | listings | nothing; each row SUB on its topic or group |
//! | `/topic`, `/topic/edit`, `/messages`, `/message`, `/browse` | QUERY_MESSAGE, PULL_MESSAGE | SUB on the topic (and the group browsed after); a message's trace also SUB on the trace topic |
//! | `/group` | QUERY_CONSUMER_OFFSET | SUB on the group |
//! | `/offsets`, `/subscription` | QUERY_CONSUMER_OFFSET | SUB on the group (a new group's form: nothing) |
//! | `/dlq`, `/dlq/export` | PULL_MESSAGE | SUB on the group and its DLQ topic |
//! | `/send` (a test message) | SEND_MESSAGE | PUB on the topic |
//! | create, change, delete topic; remove, resend message (one or a DLQ's all); resend a message to a group (CONSUME_MESSAGE_DIRECTLY); reset offsets; create, change, delete group; change run-time keys | their admin requests | admin |

use std::net::IpAddr;
use std::sync::Arc;

use vostok_auth::{Access, Denied, Need, Resource};
use vostok_observe::http::HttpRequest;
use vostok_remoting::protocol::request_code as code;

use super::session::Session;
use crate::state::Broker;

/// The viewer of one request: its address and, with ACL on, its session.
#[derive(Clone)]
pub(crate) struct Viewer {
    broker: Arc<Broker>,
    ip: IpAddr,
    session: Option<Arc<Session>>,
    /// The console refuses every change (off loopback, ACL off).
    read_only: bool,
}

impl Viewer {
    pub(crate) fn new(broker: Arc<Broker>, ip: IpAddr, session: Option<Arc<Session>>) -> Self {
        Viewer {
            broker,
            ip,
            session,
            read_only: false,
        }
    }

    /// The same viewer on a console that refuses every change when `read_only`: it sees
    /// no action button.
    pub(crate) fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The signed-in account, with ACL on.
    pub(crate) fn account(&self) -> Option<&str> {
        self.session.as_deref().map(|s| s.access_key.as_str())
    }

    /// The keys that sign the viewer's requests to other brokers: its account's with
    /// ACL on, none (plain requests) with ACL off.
    pub(crate) fn credentials(&self) -> Option<&vostok_remoting::auth::SessionCredentials> {
        self.session.as_deref().map(Session::credentials)
    }

    /// Whether the viewer may do what request `code` needing `access` does; always, with
    /// ACL off.
    pub(crate) fn check(&self, code: i32, access: Access<'_>) -> Result<(), Denied> {
        let Some(guard) = &self.broker.guard else {
            return Ok(());
        };
        let Some(session) = &self.session else {
            return Err(Denied::unauthenticated("sign in first"));
        };
        guard
            .check(self.ip, &session.proof(code), || access)
            .map(|_| ())
    }

    pub(crate) fn may(&self, code: i32, access: Access<'_>) -> bool {
        self.check(code, access).is_ok()
    }

    /// Whether the viewer may make admin requests (change topics, remove messages).
    pub(crate) fn is_admin(&self) -> bool {
        !self.read_only && self.may(code::UPDATE_AND_CREATE_TOPIC, Access::Admin)
    }

    /// Whether the viewer may send to `topic` from the console (a SEND_MESSAGE).
    pub(crate) fn may_send(&self, topic: &str) -> bool {
        !self.read_only
            && self.may(
                code::SEND_MESSAGE,
                Access::Needs(vec![Need::publish(Resource::topic(topic))]),
            )
    }

    /// Whether the viewer may read `topic` (a listing's row).
    pub(crate) fn reads_topic(&self, topic: &str) -> bool {
        self.may(code::QUERY_MESSAGE, sub([Resource::topic(topic)]))
    }

    /// Whether the viewer may read group `group`'s progress (a listing's row).
    pub(crate) fn reads_group(&self, group: &str) -> bool {
        self.may(code::QUERY_CONSUMER_OFFSET, sub([Resource::group(group)]))
    }
}

fn sub<'a>(resources: impl IntoIterator<Item = Resource<'a>>) -> Access<'a> {
    Access::Needs(resources.into_iter().map(Need::subscribe).collect())
}

/// What showing the page `r` asks for needs, as the request it stands for; `None` for
/// pages that filter their rows instead.
pub(crate) fn page_needs(r: &HttpRequest) -> Option<(i32, Access<'static>)> {
    let owned = |r: Resource<'_>| r.into_owned();
    let param = |k: &str| r.param(k);
    match r.path.as_str() {
        "/" => Some((code::GET_BROKER_RUNTIME_INFO, Access::Admin)),
        "/clients" => Some((code::VOSTOK_GET_CONNECTED_CLIENTS, Access::Admin)),
        "/config" => Some((code::GET_BROKER_CONFIG, Access::Admin)),
        "/producers" => Some((code::GET_PRODUCER_CONNECTION_LIST, Access::Admin)),
        "/topic" | "/topic/edit" => {
            let name = param("name").unwrap_or_default();
            Some((code::QUERY_MESSAGE, sub([owned(Resource::topic(&name))])))
        }
        "/group" | "/offsets" | "/subscription" => {
            let name = param("name").or_else(|| param("group")).unwrap_or_default();
            Some((
                code::QUERY_CONSUMER_OFFSET,
                sub([owned(Resource::group(&name))]),
            ))
        }
        // The search form alone shows nothing.
        "/messages" | "/message" => param("topic")
            .filter(|t| !t.trim().is_empty())
            .map(|t| (code::QUERY_MESSAGE, sub([owned(Resource::topic(t.trim()))]))),
        "/dlq" | "/dlq/export" => {
            let group = param("group").unwrap_or_default();
            let dlq = vostok_remoting::protocol::topic::dlq_topic(&group);
            Some((
                code::PULL_MESSAGE,
                sub([owned(Resource::topic(&dlq)), owned(Resource::group(&group))]),
            ))
        }
        "/browse" => {
            let topic = param("topic").unwrap_or_default();
            let group = param("group").filter(|g| !g.is_empty());
            let mut resources = vec![owned(Resource::topic(&topic))];
            resources.extend(group.map(|g| owned(Resource::group(&g))));
            Some((code::PULL_MESSAGE, sub(resources)))
        }
        _ => None,
    }
}

/// What the action at `path` on `topic` needs: a test send PUB on its topic, every
/// other change an admin account.
pub(crate) fn action_access<'a>(path: &str, topic: &'a str) -> Access<'a> {
    match path {
        "/messages/send" => Access::Needs(vec![Need::publish(Resource::topic(topic))]),
        _ => Access::Admin,
    }
}

/// The request the action at `path` (a form POST) stands for.
pub(crate) fn action_code(path: &str) -> Option<i32> {
    match path {
        "/topics/create" => Some(code::UPDATE_AND_CREATE_TOPIC),
        "/topics/delete" => Some(code::DELETE_TOPIC_IN_BROKER),
        "/messages/remove" => Some(code::VOSTOK_REMOVE_MESSAGE),
        "/messages/resend" | "/dlq/resend-all" => Some(code::VOSTOK_RESEND_DLQ_MESSAGE),
        "/offsets/reset" => Some(code::INVOKE_BROKER_TO_RESET_OFFSET),
        "/config/update" => Some(code::UPDATE_BROKER_CONFIG),
        "/topics/update" => Some(code::UPDATE_AND_CREATE_TOPIC),
        "/messages/send" => Some(code::SEND_MESSAGE),
        "/messages/consume" => Some(code::CONSUME_MESSAGE_DIRECTLY),
        "/groups/update" => Some(code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP),
        "/groups/delete" => Some(code::DELETE_SUBSCRIPTIONGROUP),
        _ => None,
    }
}
