//! What a request needs, as the server that knows its request codes decides it
//! (the broker's and the name server's access tables), and what a refusal says.

use crate::permission;

/// Topic name prefix of a consumer group's retry topic.
pub const RETRY_PREFIX: &str = "%RETRY%";

/// The topic message traces are sent to: any authenticated account may publish to it.
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// A topic or a consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource {
    Topic(String),
    Group(String),
}

impl Resource {
    /// The resource of a topic name: a `%RETRY%G` topic is group G's.
    pub fn topic(name: &str) -> Resource {
        match name.strip_prefix(RETRY_PREFIX) {
            Some(group) => Resource::Group(group.to_owned()),
            None => Resource::Topic(name.to_owned()),
        }
    }

    pub fn group(name: &str) -> Resource {
        Resource::Group(name.strip_prefix(RETRY_PREFIX).unwrap_or(name).to_owned())
    }

    /// The key of plain_acl.yml's permission table: the topic, or `%RETRY%` + group.
    pub fn plain_key(&self) -> String {
        match self {
            Resource::Topic(t) => t.clone(),
            Resource::Group(g) => format!("{RETRY_PREFIX}{g}"),
        }
    }

    pub fn is_group(&self) -> bool {
        matches!(self, Resource::Group(_))
    }
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Topic(t) => write!(f, "topic {t}"),
            Resource::Group(g) => write!(f, "group {g}"),
        }
    }
}

/// One permission a request needs on one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub resource: Resource,
    /// [`permission::PUB`], [`permission::SUB`] or [`permission::ANY`].
    pub perm: u8,
}

impl Need {
    pub fn publish(resource: Resource) -> Need {
        Need {
            resource,
            perm: permission::PUB,
        }
    }

    pub fn subscribe(resource: Resource) -> Need {
        Need {
            resource,
            perm: permission::SUB,
        }
    }
}

/// What a request needs beyond a valid signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Nothing more: any authenticated account.
    Open,
    /// An admin account (ACL 1.0 `admin: true`, ACL 2.0 SUPER user).
    Admin,
    /// These permissions (none may be missing).
    Needs(Vec<Need>),
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
