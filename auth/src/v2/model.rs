//! ACL 2.0's users and ACLs as they travel (`UserInfo`, `AclInfo` JSON bodies of
//! requests 3001–3010) and as they are stored, plus the parsed forms decisions use.
//!
//! ```json
//! {"username":"alice","password":"...","userType":"Normal","userStatus":"enable"}
//! {"subject":"User:alice","policies":[{"policyType":"Custom","entries":[
//!   {"resource":"Topic:orders","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/8"],"decision":"Allow"}]}]}
//! ```
//!
//! Names are read case-insensitively, as Java's `getByName` does. Resources:
//! `Topic:name`, `Group:name`, `Topic:prefix*`, `Topic:*`, `*` (any), `Namespace:ns`
//! (every topic and group of namespace `ns`, and a confinement to it:
//! the namespace module) and `Cluster:` (stored, never matched by a topic or group
//! request).

pub use vostok_remoting::protocol::body::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};

use vostok_remoting::protocol::topic::namespace_of;

use crate::address;
use crate::resource::Resource;

/// `policyType`: CUSTOM entries are looked at first, DEFAULT ones when none matched.
pub fn is_default_policy(policy_type: Option<&str>) -> bool {
    policy_type.is_some_and(|t| t.eq_ignore_ascii_case("Default"))
}

/// A resource pattern of a policy entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourcePattern {
    Any,
    /// `(type, name)`: `type` is `Topic`, `Group`, `Cluster` or `Namespace`.
    Literal(String, String),
    Prefixed(String, String),
    AllOfType(String),
}

impl ResourcePattern {
    pub fn parse(key: &str) -> Option<ResourcePattern> {
        let key = key.trim();
        if key == "*" {
            return Some(ResourcePattern::Any);
        }
        let (ty, name) = key.split_once(':')?;
        let ty = ["Topic", "Group", "Cluster", "Namespace", "Any"]
            .into_iter()
            .find(|t| t.eq_ignore_ascii_case(ty))?
            .to_owned();
        if ty == "Any" {
            return Some(ResourcePattern::Any);
        }
        Some(if name == "*" {
            ResourcePattern::AllOfType(ty)
        } else if let Some(prefix) = name.strip_suffix('*') {
            ResourcePattern::Prefixed(ty, prefix.to_owned())
        } else {
            ResourcePattern::Literal(ty, name.to_owned())
        })
    }

    fn matches(&self, resource: &Resource) -> bool {
        let (ty, name) = match resource {
            Resource::Topic(t) => ("Topic", &**t),
            Resource::Group(g) => ("Group", &**g),
        };
        match self {
            ResourcePattern::Any => true,
            ResourcePattern::AllOfType(t) => t == ty,
            ResourcePattern::Literal(t, n) if t == "Namespace" => namespace_of(name) == Some(n),
            ResourcePattern::Literal(t, n) => t == ty && n == name,
            ResourcePattern::Prefixed(t, p) => t == ty && name.starts_with(p.as_str()),
        }
    }

    /// The namespace a `Namespace:<name>` pattern names.
    pub fn namespace(&self) -> Option<&str> {
        match self {
            ResourcePattern::Literal(t, n) if t == "Namespace" => Some(n),
            _ => None,
        }
    }

    /// Higher is more specific: literal, then longer prefixes, then all of a type, then
    /// any. A namespace counts as the prefix `<name>%`.
    fn specificity(&self) -> (u8, usize) {
        match self {
            ResourcePattern::Literal(t, n) if t == "Namespace" => (2, n.len() + 1),
            ResourcePattern::Literal(..) => (3, 0),
            ResourcePattern::Prefixed(_, p) => (2, p.len()),
            ResourcePattern::AllOfType(_) => (1, 0),
            ResourcePattern::Any => (0, 0),
        }
    }
}

/// Action names, as Java's `Action`.
pub const ACTIONS: &[&str] = &[
    "All", "Any", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List",
];

/// A policy entry ready for matching.
#[derive(Debug, Clone)]
pub struct Entry {
    pub resource: ResourcePattern,
    pub actions: Vec<String>,
    pub source_ips: Vec<String>,
    pub allow: bool,
}

impl Entry {
    pub fn compile(info: &PolicyEntryInfo) -> Result<Entry, String> {
        let resource = ResourcePattern::parse(&info.resource)
            .ok_or_else(|| format!("bad resource {:?}", info.resource))?;
        if info.actions.is_empty() {
            return Err("the actions are empty".into());
        }
        let mut actions = Vec::new();
        for a in &info.actions {
            let name = ACTIONS
                .iter()
                .find(|n| n.eq_ignore_ascii_case(a.trim()))
                .ok_or_else(|| format!("unknown action {a:?}"))?;
            if *name == "Any" {
                return Err("the actions can not be Any".into());
            }
            actions.push((*name).to_owned());
        }
        for ip in &info.source_ips {
            if !address::is_valid_source_ip(ip) {
                return Err(format!("bad source ip {ip:?} (an address or a CIDR block)"));
            }
        }
        let allow = match info.decision.trim().to_ascii_lowercase().as_str() {
            "allow" => true,
            "deny" => false,
            other => return Err(format!("unknown decision {other:?} (Allow or Deny)")),
        };
        Ok(Entry {
            resource,
            actions,
            source_ips: info.source_ips.clone(),
            allow,
        })
    }

    /// Whether this entry speaks about `action` (`Pub`/`Sub`, or `Any` for either) on
    /// `resource` from `ip`.
    pub fn matches(&self, resource: &Resource, action: &str, ip: std::net::IpAddr) -> bool {
        self.resource.matches(resource)
            && (action == "Any" || self.actions.iter().any(|a| a == "All" || a == action))
            && (self.source_ips.is_empty()
                || self
                    .source_ips
                    .iter()
                    .any(|p| address::source_ip_matches(p, ip)))
    }
}

/// The entry that decides, among those that match (Java `comparePolicyEntries`): the
/// most specific resource, and at equal specificity a Deny over an Allow.
pub fn deciding<'a>(matching: impl Iterator<Item = &'a Entry>) -> Option<&'a Entry> {
    matching.max_by_key(|e| (e.resource.specificity(), !e.allow))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(resource: &str, actions: &[&str], decision: &str) -> Entry {
        Entry::compile(&PolicyEntryInfo {
            resource: resource.into(),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            source_ips: vec![],
            decision: decision.into(),
        })
        .unwrap()
    }

    #[test]
    fn the_most_specific_entry_decides_and_deny_wins_ties() {
        let ip = "127.0.0.1".parse().unwrap();
        let entries = [
            entry("Topic:*", &["Pub"], "Allow"),
            entry("Topic:order*", &["Pub"], "Deny"),
            entry("Topic:orders", &["Pub"], "Allow"),
            entry("Topic:orders", &["All"], "Deny"),
        ];
        let t = |name: &str| Resource::topic(name).into_owned();
        let decide = |name: &str| {
            deciding(entries.iter().filter(|e| e.matches(&t(name), "Pub", ip))).map(|e| e.allow)
        };
        assert_eq!(decide("orders"), Some(false), "deny wins among literals");
        assert_eq!(decide("order-x"), Some(false), "prefix beats all-topics");
        assert_eq!(decide("other"), Some(true));
        assert!(entries[0].matches(&t("x"), "Any", ip));
        assert!(!entries[0].matches(&Resource::group("x"), "Pub", ip));
    }

    #[test]
    fn a_namespace_entry_covers_its_topics_and_groups_and_a_literal_beats_it() {
        let ip = "127.0.0.1".parse().unwrap();
        let entries = [
            entry("Namespace:ns1", &["Pub", "Sub"], "Allow"),
            entry("Topic:ns1%secret", &["Pub"], "Deny"),
            entry("Topic:ns1*", &["Pub"], "Deny"),
        ];
        let decide = |r: Resource<'static>| {
            deciding(entries.iter().filter(|e| e.matches(&r, "Pub", ip))).map(|e| e.allow)
        };
        assert!(entries[0].matches(&Resource::topic("ns1%orders"), "Pub", ip));
        assert!(entries[0].matches(&Resource::topic("%RETRY%ns1%g"), "Sub", ip));
        assert!(entries[0].matches(&Resource::group("ns1%g"), "Sub", ip));
        assert!(!entries[0].matches(&Resource::topic("ns2%orders"), "Pub", ip));
        assert!(!entries[0].matches(&Resource::topic("ns1"), "Pub", ip));
        assert_eq!(
            decide(Resource::topic("ns1%orders")),
            Some(true),
            "ns1% beats ns1*"
        );
        assert_eq!(decide(Resource::topic("ns1%secret")), Some(false));
    }

    #[test]
    fn bad_entries_are_refused() {
        let bad = |resource: &str, actions: &[&str], decision: &str, ips: &[&str]| {
            Entry::compile(&PolicyEntryInfo {
                resource: resource.into(),
                actions: actions.iter().map(|a| a.to_string()).collect(),
                source_ips: ips.iter().map(|a| a.to_string()).collect(),
                decision: decision.into(),
            })
            .is_err()
        };
        assert!(bad("Queue:x", &["Pub"], "Allow", &[]));
        assert!(bad("Topic:x", &["Any"], "Allow", &[]));
        assert!(bad("Topic:x", &[], "Allow", &[]));
        assert!(bad("Topic:x", &["Pub"], "Maybe", &[]));
        assert!(bad("Topic:x", &["Pub"], "Allow", &["10.0.0.*"]));
        assert!(!bad("topic:x", &["pub"], "allow", &["10.0.0.0/8"]));
    }
}
