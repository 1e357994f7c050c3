//! `migrateAuthFromV1Enabled`: ACL 1.0 accounts become ACL 2.0 users and ACLs, as
//! Apache's `AuthMigrator` does. An account whose user already exists is left alone,
//! so the import runs at every start without undoing later changes.
//!
//! Account → user: accessKey → username, secretKey → password, admin → SUPER.
//! Permissions → CUSTOM entries (`Topic:t`/`Group:g`, PUB → Pub, SUB → Sub,
//! PUB|SUB → both, DENY → All with Deny); defaults → DEFAULT entries on `Topic:*` and
//! `Group:*`. White addresses are not migrated (ACL 2.0 takes IPs or CIDR blocks).

use tracing::{info, warn};

use super::model::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use super::store::AuthMetadata;
use crate::plain::PlainAccount;
use crate::resource::RETRY_PREFIX;

fn entry(resource: String, word: &str) -> PolicyEntryInfo {
    let word = word.trim();
    let actions: Vec<String> = match word {
        "PUB" => vec!["Pub".into()],
        "SUB" => vec!["Sub".into()],
        "PUB|SUB" | "SUB|PUB" => vec!["Pub".into(), "Sub".into()],
        _ => vec!["All".into()],
    };
    let decision = if matches!(word, "PUB" | "SUB" | "PUB|SUB" | "SUB|PUB") {
        "Allow"
    } else {
        "Deny"
    };
    PolicyEntryInfo {
        resource,
        actions,
        source_ips: vec![],
        decision: decision.into(),
    }
}

fn perm_entries(list: &[String], ty: &str) -> Vec<PolicyEntryInfo> {
    list.iter()
        .filter_map(|p| p.split_once('='))
        .map(|(name, word)| {
            let name = name.trim();
            let name = if ty == "Group" {
                name.strip_prefix(RETRY_PREFIX).unwrap_or(name)
            } else {
                name
            };
            entry(format!("{ty}:{name}"), word)
        })
        .collect()
}

/// Imports `accounts`; returns how many users were created.
pub fn migrate<'a>(
    metadata: &AuthMetadata,
    accounts: impl IntoIterator<Item = &'a PlainAccount>,
) -> usize {
    let mut created = 0;
    for account in accounts {
        if metadata.user(&account.access_key).is_some() {
            continue;
        }
        let user = UserInfo {
            username: Some(account.access_key.clone()),
            password: Some(account.secret_key().to_owned()),
            user_type: Some(if account.admin { "Super" } else { "Normal" }.into()),
            user_status: None,
        };
        if let Err(e) = metadata.create_user(user) {
            warn!(access_key = %account.access_key, error = %e, "ACL migration: user not created");
            continue;
        }
        created += 1;
        let mut custom = perm_entries(&account.topic_perms, "Topic");
        custom.extend(perm_entries(&account.group_perms, "Group"));
        let mut default = Vec::new();
        if let Some(w) = account
            .default_topic_word
            .as_deref()
            .filter(|w| !w.trim().is_empty())
        {
            default.push(entry("Topic:*".into(), w));
        }
        if let Some(w) = account
            .default_group_word
            .as_deref()
            .filter(|w| !w.trim().is_empty())
        {
            default.push(entry("Group:*".into(), w));
        }
        let mut policies = Vec::new();
        if !custom.is_empty() {
            policies.push(PolicyInfo {
                policy_type: Some("Custom".into()),
                entries: custom,
            });
        }
        if !default.is_empty() {
            policies.push(PolicyInfo {
                policy_type: Some("Default".into()),
                entries: default,
            });
        }
        if policies.is_empty() {
            continue;
        }
        let subject = format!("User:{}", account.access_key);
        let acl = AclInfo {
            subject: Some(subject.clone()),
            policies,
        };
        if let Err(e) = metadata.upsert_acl(&subject, acl) {
            warn!(access_key = %account.access_key, error = %e, "ACL migration: ACL not created");
        }
    }
    if created > 0 {
        info!(
            users = created,
            "ACL 1.0 accounts migrated to ACL 2.0 users"
        );
    }
    created
}
