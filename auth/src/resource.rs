//! What a request needs, as the server that knows its request codes decides it
//! (the broker's and the name server's access tables), and what a refusal says.
//!
//! A [`Resource`] borrows its name from the request where it can: deciding a send
//! copies no topic name.

use std::borrow::Cow;

use crate::permission;

/// Topic name prefix of a consumer group's retry topic.
pub const RETRY_PREFIX: &str = "%RETRY%";

/// The topic message traces are sent to: any authenticated account may publish to it.
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// A topic or a consumer group, by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource<'a> {
    Topic(Cow<'a, str>),
    Group(Cow<'a, str>),
}

impl<'a> Resource<'a> {
    /// The resource of a topic name: a `%RETRY%G` topic is group G's.
    pub fn topic(name: &'a str) -> Resource<'a> {
        match name.strip_prefix(RETRY_PREFIX) {
            Some(group) => Resource::Group(Cow::Borrowed(group)),
            None => Resource::Topic(Cow::Borrowed(name)),
        }
    }

    pub fn group(name: &'a str) -> Resource<'a> {
        Resource::Group(Cow::Borrowed(
            name.strip_prefix(RETRY_PREFIX).unwrap_or(name),
        ))
    }

    /// The same resource, owning its name.
    pub fn into_owned(self) -> Resource<'static> {
        match self {
            Resource::Topic(t) => Resource::Topic(Cow::Owned(t.into_owned())),
            Resource::Group(g) => Resource::Group(Cow::Owned(g.into_owned())),
        }
    }

    /// The topic or group name.
    pub fn name(&self) -> &str {
        match self {
            Resource::Topic(n) | Resource::Group(n) => n,
        }
    }

    /// The key of plain_acl.yml's permission table: the topic, or `%RETRY%` + group.
    pub fn plain_key(&self) -> String {
        match self {
            Resource::Topic(t) => t.to_string(),
            Resource::Group(g) => format!("{RETRY_PREFIX}{g}"),
        }
    }

    pub fn is_group(&self) -> bool {
        matches!(self, Resource::Group(_))
    }

    /// `topic` or `group`, for remarks.
    pub fn kind(&self) -> &'static str {
        match self {
            Resource::Topic(_) => "topic",
            Resource::Group(_) => "group",
        }
    }
}

impl std::fmt::Display for Resource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Topic(t) => write!(f, "topic {t}"),
            Resource::Group(g) => write!(f, "group {g}"),
        }
    }
}

/// One permission a request needs on one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need<'a> {
    pub resource: Resource<'a>,
    /// [`permission::PUB`], [`permission::SUB`] or [`permission::ANY`].
    pub perm: u8,
}

impl<'a> Need<'a> {
    pub fn publish(resource: Resource<'a>) -> Need<'a> {
        Need {
            resource,
            perm: permission::PUB,
        }
    }

    pub fn subscribe(resource: Resource<'a>) -> Need<'a> {
        Need {
            resource,
            perm: permission::SUB,
        }
    }
}

/// What a request needs beyond a valid signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access<'a> {
    /// Nothing more: any authenticated account.
    Open,
    /// Any authenticated account, but the request names these topics or groups (a
    /// route, a queue's offsets): a user confined to a namespace may name only its own
    /// ([`crate::namespace`]).
    Names(Vec<Resource<'a>>),
    /// An admin account (ACL 1.0 `admin: true`, ACL 2.0 SUPER user).
    Admin,
    /// An admin account, or a user confined to namespaces when every topic or group
    /// named here is inside them ([`crate::namespace`]): administrative reads that a
    /// confined user may make about its own namespaces. With no names, the request is
    /// a list, which the server answers with only the user's namespaces' rows.
    Scoped(Vec<Resource<'a>>),
    /// These permissions (none may be missing). A need whose resource has no name (the
    /// request left the field out) is refused, never read as the account's default.
    Needs(Vec<Need<'a>>),
    /// What the request touches cannot be told: a body that does not parse, a stored
    /// message it points to that cannot be read. Refused to every account but an admin,
    /// who holds every permission anyway; the remark says what is missing.
    Unresolved(Cow<'a, str>),
}

impl Access<'_> {
    /// Why the request is refused whatever the account may do, if it is: a need
    /// without a resource name, or an unresolved request.
    pub fn unresolved(&self) -> Option<String> {
        match self {
            Access::Unresolved(why) => Some(why.to_string()),
            Access::Needs(needs) => needs
                .iter()
                .find(|n| n.resource.name().is_empty())
                .map(|n| format!("names no {}", n.resource.kind())),
            Access::Open | Access::Names(_) | Access::Admin | Access::Scoped(_) => None,
        }
    }
}

/// Why a request was refused: the remark the client gets. It names the account, the
/// resource and the permission, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Denied {
    pub reason: String,
    /// The sender could not be authenticated (no key, unknown key, bad signature),
    /// as opposed to an authenticated sender lacking a permission. gRPC answers the
    /// first UNAUTHORIZED and the second FORBIDDEN, as Apache's proxy does.
    pub unauthenticated: bool,
}

impl Denied {
    /// An authenticated sender that lacks what the request needs.
    pub fn new(reason: impl Into<String>) -> Denied {
        Denied {
            reason: reason.into(),
            unauthenticated: false,
        }
    }

    /// A sender that could not be authenticated.
    pub fn unauthenticated(reason: impl Into<String>) -> Denied {
        Denied {
            reason: reason.into(),
            unauthenticated: true,
        }
    }
}
