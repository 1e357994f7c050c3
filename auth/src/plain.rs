//! ACL 1.0 accounts: RocketMQ's `plain_acl.yml` (docs/security.md#plain-acl).
//!
//! ```yaml
//! globalWhiteRemoteAddresses:
//!   - 10.10.103.*
//! accounts:
//!   - accessKey: RocketMQ
//!     secretKey: 12345678
//!     whiteRemoteAddress: 192.168.0.*
//!     admin: false
//!     defaultTopicPerm: DENY
//!     defaultGroupPerm: SUB
//!     topicPerms: [topicA=DENY, topicB=PUB|SUB]
//!     groupPerms: [groupA=DENY, groupB=PUB|SUB]
//!     brokerNames: [broker-a]     # Vostok: broker names this account may register
//! ```
//!
//! `dataVersion` is read and ignored. Keys and secrets must be longer than 6
//! characters, as in Java. `brokerNames` is Vostok's: the name server lets an admin
//! account register or unregister only these broker names (Java ignores the key).

use std::collections::HashMap;
use std::fmt;

use vostok_remoting::auth::signature::SigningKey;
use yaml_rust2::{Yaml, YamlLoader};

use crate::address::AddressPattern;
use crate::permission;
use crate::resource::{Resource, RETRY_PREFIX};

/// One account of a plain ACL file.
#[derive(Clone)]
pub struct PlainAccount {
    pub access_key: String,
    /// Private, with `signing_key` made from it: the two never disagree.
    secret_key: String,
    signing_key: SigningKey,
    pub white_remote_address: AddressPattern,
    pub admin: bool,
    pub default_topic_perm: u8,
    pub default_group_perm: u8,
    /// Topic names and `%RETRY%<group>` keys to permission bits.
    pub perms: HashMap<String, u8>,
    pub broker_names: Vec<String>,
    /// As written, for the migration to ACL 2.0.
    pub topic_perms: Vec<String>,
    pub group_perms: Vec<String>,
    pub default_topic_word: Option<String>,
    pub default_group_word: Option<String>,
}

impl fmt::Debug for PlainAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlainAccount")
            .field("access_key", &self.access_key)
            .field("admin", &self.admin)
            .field("broker_names", &self.broker_names)
            .finish_non_exhaustive()
    }
}

impl PlainAccount {
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// The HMAC keyed with the secret, once per account (per reload), not per request.
    pub fn signing_key(&self) -> &SigningKey {
        &self.signing_key
    }

    /// The bits this account owns on `resource` (its own entry, else the default).
    pub fn owned(&self, resource: &Resource) -> u8 {
        let entry = match resource {
            // The common case (every send) looks up without building a key.
            Resource::Topic(t) => self.perms.get(&**t),
            Resource::Group(_) => self.perms.get(&resource.plain_key()),
        };
        match entry {
            Some(bits) => *bits,
            None if resource.is_group() => self.default_group_perm,
            None => self.default_topic_perm,
        }
    }

    /// An admin account known without a file: a server's own peer (the broker an
    /// embedded name server serves), allowed the broker names given.
    pub fn internal(
        credentials: &vostok_remoting::auth::SessionCredentials,
        broker_names: Vec<String>,
    ) -> PlainAccount {
        PlainAccount {
            access_key: credentials.access_key.clone(),
            secret_key: credentials.secret_key.clone(),
            signing_key: SigningKey::new(&credentials.secret_key),
            white_remote_address: AddressPattern::Never,
            admin: true,
            default_topic_perm: permission::DENY,
            default_group_perm: permission::DENY,
            perms: HashMap::new(),
            broker_names,
            topic_perms: Vec::new(),
            group_perms: Vec::new(),
            default_topic_word: None,
            default_group_word: None,
        }
    }

    /// Whether this account may register or unregister `broker_name` with a name server.
    pub fn may_use_broker_name(&self, broker_name: &str) -> bool {
        self.admin
            && self
                .broker_names
                .iter()
                .any(|n| n == "*" || n == broker_name)
    }
}

/// One parsed file.
#[derive(Debug, Clone, Default)]
pub struct PlainAclFile {
    pub global_white: Vec<AddressPattern>,
    pub accounts: Vec<PlainAccount>,
}

fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn list(y: &Yaml) -> Vec<String> {
    match y {
        Yaml::Array(items) => items.iter().filter_map(scalar).collect(),
        Yaml::BadValue | Yaml::Null => Vec::new(),
        // A single value where a list is expected: Java's YAML reads it the same way.
        other => scalar(other).into_iter().collect(),
    }
}

fn perm_entries(entries: &[String], group: bool, into: &mut HashMap<String, u8>) {
    for entry in entries {
        // Java skips entries that are not `name=PERM`.
        let Some((name, word)) = entry.split_once('=') else {
            continue;
        };
        let name = name.trim();
        let key = if group && !name.starts_with(RETRY_PREFIX) {
            format!("{RETRY_PREFIX}{name}")
        } else {
            name.to_owned()
        };
        into.insert(key, permission::parse(word));
    }
}

fn account(y: &Yaml, index: usize) -> Result<PlainAccount, String> {
    let field = |k: &str| scalar(&y[k]);
    let access_key = field("accessKey").unwrap_or_default();
    if access_key.len() <= 6 {
        return Err(format!(
            "account {index}: accessKey must be longer than 6 characters"
        ));
    }
    let secret_key = field("secretKey").unwrap_or_default();
    if secret_key.len() <= 6 {
        return Err(format!(
            "account {access_key}: secretKey must be longer than 6 characters"
        ));
    }
    let white = field("whiteRemoteAddress").unwrap_or_default();
    let white_remote_address = AddressPattern::parse(&white)
        .map_err(|e| format!("account {access_key}: whiteRemoteAddress: {e}"))?;
    let admin = match &y["admin"] {
        Yaml::Boolean(b) => *b,
        other => scalar(other).is_some_and(|s| s.eq_ignore_ascii_case("true")),
    };
    let default_topic_word = field("defaultTopicPerm");
    let default_group_word = field("defaultGroupPerm");
    let topic_perms = list(&y["topicPerms"]);
    let group_perms = list(&y["groupPerms"]);
    let mut perms = HashMap::new();
    perm_entries(&topic_perms, false, &mut perms);
    perm_entries(&group_perms, true, &mut perms);
    Ok(PlainAccount {
        default_topic_perm: default_topic_word
            .as_deref()
            .map_or(permission::DENY, permission::parse),
        default_group_perm: default_group_word
            .as_deref()
            .map_or(permission::DENY, permission::parse),
        broker_names: list(&y["brokerNames"]),
        access_key,
        signing_key: SigningKey::new(&secret_key),
        secret_key,
        white_remote_address,
        admin,
        perms,
        topic_perms,
        group_perms,
        default_topic_word,
        default_group_word,
    })
}

/// Parses one file. A malformed file is an error as a whole: half an ACL is not used.
pub fn parse(text: &str) -> Result<PlainAclFile, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    let Some(doc) = docs.first() else {
        return Ok(PlainAclFile::default());
    };
    let mut file = PlainAclFile::default();
    for pattern in list(&doc["globalWhiteRemoteAddresses"]) {
        file.global_white.push(
            AddressPattern::parse(&pattern)
                .map_err(|e| format!("globalWhiteRemoteAddresses: {e}"))?,
        );
    }
    if let Yaml::Array(accounts) = &doc["accounts"] {
        for (i, y) in accounts.iter().enumerate() {
            file.accounts.push(account(y, i)?);
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
      - broken
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
    brokerNames: [broker-a]
dataVersion:
  - counter: 1
    timestamp: 1
"#;

    #[test]
    fn reads_every_key_of_the_apache_sample() {
        let file = parse(SAMPLE).unwrap();
        assert_eq!(file.global_white.len(), 2);
        let a = &file.accounts[0];
        assert_eq!(a.access_key, "RocketMQ");
        assert_eq!(
            a.secret_key(),
            "12345678",
            "a numeric secret is read as text"
        );
        assert!(!a.admin);
        assert_eq!(a.white_remote_address, AddressPattern::Never);
        assert_eq!(a.owned(&Resource::topic("topicA")), permission::DENY);
        assert_eq!(
            a.owned(&Resource::topic("topicB")),
            permission::PUB | permission::SUB
        );
        assert_eq!(a.owned(&Resource::topic("other")), permission::DENY);
        assert_eq!(a.owned(&Resource::group("groupC")), permission::SUB);
        assert_eq!(a.owned(&Resource::topic("%RETRY%groupA")), permission::DENY);
        assert_eq!(a.owned(&Resource::group("unlisted")), permission::SUB);
        let b = &file.accounts[1];
        assert!(b.admin && b.may_use_broker_name("broker-a") && !b.may_use_broker_name("broker-b"));
        assert!(!a.may_use_broker_name("broker-a"));
        assert!(!format!("{b:?}").contains("12345678"));
    }

    #[test]
    fn short_keys_and_bad_patterns_refuse_the_file() {
        assert!(parse("accounts:\n  - accessKey: short\n    secretKey: 12345678\n").is_err());
        assert!(parse("accounts:\n  - accessKey: longenough\n    secretKey: 123\n").is_err());
        assert!(parse("globalWhiteRemoteAddresses: [300.1.1.1]\n").is_err());
        assert!(parse("accounts: [\n").is_err());
        assert!(parse("").unwrap().accounts.is_empty());
    }
}
