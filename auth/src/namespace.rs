//! Namespaces that isolate (docs/security.md#namespaces).
//!
//! RocketMQ's namespace is a name prefix: topic `ns1%orders`, group `ns1%g`, the
//! group's retry topic `%RETRY%ns1%g` and its dead-letter topic `%DLQ%ns1%g`. With
//! ACL 2.0, an ACL entry whose resource is `Namespace:ns1` and whose decision is
//! Allow grants its actions on every topic and group of `ns1` and **confines** the
//! user: every topic or group a request of that user names must then be inside one of
//! the namespaces its ACL allows, whatever its other entries say, and what the servers
//! list for it (console pages, /metrics) shows only those namespaces. SUPER users are
//! never confined.
//!
//! Sends to the message-trace topic (`RMQ_SYS_TRACE_TOPIC`), shared by every client,
//! are not confined (its policies still decide); reading it is.
//!
//! This module holds every namespace rule; the guard applies them
//! ([`crate::Guard::check`]), so remoting, gRPC and the console refuse alike.

use crate::permission;
use crate::proof::{Proof, TimeWindow};
use crate::resource::{Access, Denied, Need, Resource, TRACE_TOPIC};
use crate::v2::store::{subject_key, AuthMetadata, CompiledAcl};

/// The namespace `name` (a topic or group, or a retry or dead-letter topic) is in, if
/// it has one: `ns1` for `ns1%orders`, `%RETRY%ns1%g` and `%DLQ%ns1%g` (the clients'
/// naming rule, `vostok_remoting::protocol::topic::wrap_namespace`).
pub use vostok_remoting::protocol::topic::namespace_of;

/// Whether `name` is a topic or group of namespace `ns`.
pub fn is_in(ns: &str, name: &str) -> bool {
    namespace_of(name) == Some(ns)
}

/// The namespaces a user is confined to: it may name nothing outside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    namespaces: Vec<String>,
}

impl Confinement {
    /// The confinement of a user whose ACL is `acl`: the names of its Allow entries on
    /// `Namespace:<name>` resources, `None` when it has none.
    pub fn of(acl: Option<&CompiledAcl>) -> Option<Confinement> {
        let acl = acl?;
        let mut namespaces: Vec<String> = acl
            .custom
            .iter()
            .chain(&acl.default)
            .filter(|e| e.allow)
            .filter_map(|e| e.resource.namespace().map(str::to_owned))
            .collect();
        namespaces.sort();
        namespaces.dedup();
        (!namespaces.is_empty()).then_some(Confinement { namespaces })
    }

    /// The namespaces, sorted.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Whether topic or group `name` is inside the confinement.
    pub fn admits(&self, name: &str) -> bool {
        namespace_of(name).is_some_and(|ns| self.namespaces.iter().any(|n| n == ns))
    }

    /// Refuses a request of `user` (request `code`) needing `access` when it names a
    /// topic or group outside the confinement.
    pub fn check(&self, user: &str, code: i32, access: &Access<'_>) -> Result<(), Denied> {
        let admits = |r: &Resource<'_>| self.admits_resource(r) || is_client_group(code, r);
        let outside = match access {
            Access::Needs(needs) => needs
                .iter()
                .filter(|n| !is_trace_send(n))
                .map(|n| &n.resource)
                .find(|r| !admits(r)),
            Access::Names(names) | Access::Scoped(names) => names.iter().find(|r| !admits(r)),
            Access::Open | Access::Admin | Access::Unresolved(_) => None,
        };
        match outside {
            None => Ok(()),
            Some(outside) => Err(Denied::new(format!(
                "access denied: User:{user} is confined to namespace {} and {} is outside it (request {})",
                self.namespaces.join(", "),
                outside,
                vostok_remoting::protocol::request_code::name(code)
            ))),
        }
    }

    fn admits_resource(&self, resource: &Resource<'_>) -> bool {
        self.admits(resource.name())
    }
}

/// The confinement of the ACL 2.0 user of `metadata` who signed `request`, for a
/// server that lists on the users' behalf without deciding by their ACLs (a name
/// server answering route and topic-list queries): `None` when the request names no
/// such user (the server's own rules decide), `Some(Ok(None))` for a user who is not
/// confined (or SUPER), an error when the user is disabled or the signature or its
/// time is bad.
pub fn of_signer(
    metadata: &AuthMetadata,
    request: &impl Proof,
    window: &TimeWindow,
) -> Option<Result<Option<Confinement>, Denied>> {
    let snapshot = metadata.snapshot();
    let name = request.access_key()?;
    let user = snapshot.users.get(name)?;
    let is_super = user.is_super();
    let clock = (window, vostok_remoting::support::time::now_millis());
    Some(
        crate::v2::check::authenticate(&snapshot, request, clock).map(|name| {
            (!is_super)
                .then(|| Confinement::of(snapshot.acls.get(&subject_key(name))))
                .flatten()
        }),
    )
}

/// Groups clients register on their own, whatever namespace the application is in
/// (Apache's `MixAll` names): every Java client's heartbeat carries
/// `CLIENT_INNER_PRODUCER`, the tools pull as `TOOLS_CONSUMER`.
pub const CLIENT_GROUPS: &[&str] = &[
    "CLIENT_INNER_PRODUCER",
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "__MONITOR_CONSUMER",
];

/// Prefix of the groups the broker itself uses (`MixAll.CID_SYS_RMQ_TRANS` and kin).
const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// Whether `resource` is a client-internal group named by a heartbeat or an
/// unregistration: those requests may carry it whatever the confinement. Elsewhere (a
/// pull, an offset) the group is confined like any other.
fn is_client_group(code: i32, resource: &Resource<'_>) -> bool {
    use vostok_remoting::protocol::request_code as rc;
    matches!(code, rc::HEART_BEAT | rc::UNREGISTER_CLIENT)
        && matches!(resource, Resource::Group(g)
            if CLIENT_GROUPS.contains(&g.as_ref()) || g.starts_with(SYSTEM_GROUP_PREFIX))
}

/// A send to the message-trace topic, which clients share whatever their namespace
/// (write only: reading it stays with those its policies allow).
fn is_trace_send(need: &Need<'_>) -> bool {
    need.perm == permission::PUB && matches!(&need.resource, Resource::Topic(t) if t == TRACE_TOPIC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v2::model::{Entry, PolicyEntryInfo};

    fn entry(resource: &str, decision: &str) -> Entry {
        Entry::compile(&PolicyEntryInfo {
            resource: resource.into(),
            actions: vec!["Pub".into(), "Sub".into()],
            source_ips: vec![],
            decision: decision.into(),
        })
        .unwrap()
    }

    #[test]
    fn names_carry_their_namespace_in_every_form() {
        assert_eq!(namespace_of("ns1%orders"), Some("ns1"));
        assert_eq!(namespace_of("%RETRY%ns1%g"), Some("ns1"));
        assert_eq!(namespace_of("%DLQ%ns1%g"), Some("ns1"));
        assert_eq!(namespace_of("orders"), None);
        assert_eq!(namespace_of("%RETRY%g"), None);
        assert_eq!(namespace_of("%orders"), None);
        assert!(is_in("ns1", "ns1%a%b"));
        assert!(!is_in("ns1", "ns10%a"));
    }

    #[test]
    fn an_allowed_namespace_entry_confines_and_a_denied_one_does_not() {
        let acl = CompiledAcl {
            custom: vec![entry("Namespace:ns1", "Allow"), entry("Topic:*", "Allow")],
            default: vec![entry("Namespace:ns2", "Deny")],
        };
        let c = Confinement::of(Some(&acl)).unwrap();
        assert_eq!(c.namespaces(), ["ns1"]);
        assert!(c.admits("ns1%orders") && c.admits("%DLQ%ns1%g"));
        assert!(!c.admits("ns2%orders") && !c.admits("orders"));
        let plain = CompiledAcl {
            custom: vec![entry("Topic:*", "Allow")],
            default: vec![],
        };
        assert_eq!(Confinement::of(Some(&plain)), None);
        assert_eq!(Confinement::of(None), None);

        let needs = |names: &[&'static str]| {
            Access::Needs(
                names
                    .iter()
                    .map(|n| Need::publish(Resource::topic(n)))
                    .collect(),
            )
        };
        assert!(c.check("a", 10, &needs(&["ns1%x", "%RETRY%ns1%g"])).is_ok());
        let refused = c.check("a", 10, &needs(&["ns1%x", "ns2%y"])).unwrap_err();
        assert!(refused.reason.contains("topic ns2%y"), "{}", refused.reason);
        assert!(c.check("a", 10, &Access::Open).is_ok());
        assert!(
            c.check("a", 10, &needs(&[TRACE_TOPIC])).is_ok(),
            "traces are sent"
        );
        let read_traces = Access::Needs(vec![Need::subscribe(Resource::topic(TRACE_TOPIC))]);
        assert!(c.check("a", 10, &read_traces).is_err(), "not read");
        let named = |n: &'static str| Access::Names(vec![Resource::topic(n)]);
        assert!(c.check("a", 10, &named("ns1%x")).is_ok());
        assert!(c.check("a", 10, &named("ns2%x")).is_err());
        let scoped = |n: &'static str| Access::Scoped(vec![Resource::topic(n)]);
        assert!(c.check("a", 21, &scoped("ns1%x")).is_ok());
        assert!(c.check("a", 21, &scoped("ns2%x")).is_err());
        assert!(c.check("a", 21, &Access::Scoped(vec![])).is_ok(), "a list");
    }

    #[test]
    fn heartbeats_may_carry_the_groups_clients_register_on_their_own() {
        use vostok_remoting::protocol::request_code as rc;
        let acl = CompiledAcl {
            custom: vec![entry("Namespace:ns1", "Allow")],
            default: vec![],
        };
        let c = Confinement::of(Some(&acl)).unwrap();
        let groups = |names: &[&'static str]| {
            Access::Names(names.iter().map(|n| Resource::group(n)).collect())
        };
        let internal = groups(&[
            "CLIENT_INNER_PRODUCER",
            "TOOLS_CONSUMER",
            "CID_RMQ_SYS_TRANS",
        ]);
        assert!(c.check("a", rc::HEART_BEAT, &internal).is_ok());
        assert!(c.check("a", rc::UNREGISTER_CLIENT, &internal).is_ok());
        assert!(
            c.check("a", rc::PULL_MESSAGE, &internal).is_err(),
            "elsewhere confined"
        );
        assert!(c.check("a", rc::HEART_BEAT, &groups(&["ns2%p"])).is_err());
        assert!(c
            .check("a", rc::HEART_BEAT, &groups(&["DEFAULT_PRODUCER"]))
            .is_err());
    }
}
