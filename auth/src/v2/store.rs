//! ACL 2.0 metadata: users and their ACLs, kept in memory and persisted as JSON under
//! the broker's config directory (`<storePathRootDir>/config/auth/users.json` and
//! `acls.json`, crash-safe with a `.bak`). Apache keeps them in RocksDB under
//! `config/users` and `config/acls`; the request codes and bodies are the same.
//!
//! Mutations write the files before they answer (blocking: callers run them on the
//! blocking pool); reads take a snapshot.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use vostok_remoting::auth::signature::SigningKey;
use vostok_remoting::support::config_file;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use super::model::{is_default_policy, AclInfo, Entry, PolicyInfo, ResourcePattern, UserInfo};
use crate::error::AuthError;

/// A refused management request: the remark, answered with NO_PERMISSION or
/// INVALID_PARAMETER by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Storage(String),
}

/// An ACL ready for decisions.
#[derive(Debug, Default)]
pub struct CompiledAcl {
    pub custom: Vec<Entry>,
    pub default: Vec<Entry>,
}

#[derive(Debug, Default, Clone)]
struct Tables {
    users: BTreeMap<String, UserInfo>,
    acls: BTreeMap<String, AclInfo>,
}

/// What decisions read: users by name, compiled ACLs by subject.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub users: HashMap<String, UserInfo>,
    pub acls: HashMap<String, CompiledAcl>,
    /// Each user's password as an HMAC key, keyed once per change rather than per
    /// request (a user without a password has the empty one).
    pub signing_keys: HashMap<String, SigningKey>,
}

#[derive(Debug)]
pub struct AuthMetadata {
    dir: PathBuf,
    tables: Mutex<Tables>,
    snapshot: RwLock<Arc<Snapshot>>,
}

/// `User:<name>` (a bare name is taken as a user's).
pub fn subject_key(subject: &str) -> String {
    let s = subject.trim();
    match s.split_once(':') {
        Some((ty, name)) if ty.eq_ignore_ascii_case("User") => format!("User:{name}"),
        Some(_) => s.to_owned(),
        None => format!("User:{s}"),
    }
}

fn compile(acl: &AclInfo) -> Result<CompiledAcl, String> {
    let mut out = CompiledAcl::default();
    for policy in &acl.policies {
        let entries = policy
            .entries
            .iter()
            .map(Entry::compile)
            .collect::<Result<Vec<_>, _>>()?;
        if is_default_policy(policy.policy_type.as_deref()) {
            out.default.extend(entries);
        } else {
            out.custom.extend(entries);
        }
    }
    Ok(out)
}

fn policy_type_name(t: Option<&str>) -> String {
    if is_default_policy(t) {
        "Default"
    } else {
        "Custom"
    }
    .to_owned()
}

impl AuthMetadata {
    /// Loads `dir/users.json` and `dir/acls.json` (blocking); missing files are empty.
    pub fn open(dir: PathBuf) -> Result<AuthMetadata, AuthError> {
        let users: BTreeMap<String, UserInfo> =
            config_file::load(&dir.join("users.json"), |b| serde_json::from_slice(b).ok())
                .unwrap_or_default();
        let acls: BTreeMap<String, AclInfo> =
            config_file::load(&dir.join("acls.json"), |b| serde_json::from_slice(b).ok())
                .unwrap_or_default();
        let tables = Tables { users, acls };
        let snapshot = Self::build(&tables).map_err(AuthError::Config)?;
        Ok(AuthMetadata {
            dir,
            tables: Mutex::new(tables),
            snapshot: RwLock::new(Arc::new(snapshot)),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Reads the files again (blocking) and puts what they hold in force when it
    /// differs: for a server that follows another's users (a name server reading a
    /// broker's directory). Whether anything changed; on an error the users in force
    /// stay.
    pub fn reload(&self) -> Result<bool, AuthError> {
        let fresh = Self::open(self.dir.clone())?;
        let fresh = fresh.tables.locked().clone();
        let mut tables = self.tables.locked();
        let same = |a: &Tables, b: &Tables| {
            serde_json::to_vec(&(&a.users, &a.acls)).ok()
                == serde_json::to_vec(&(&b.users, &b.acls)).ok()
        };
        if same(&tables, &fresh) {
            return Ok(false);
        }
        let snapshot = Self::build(&fresh).map_err(AuthError::Config)?;
        *tables = fresh;
        *self.snapshot.write_locked() = Arc::new(snapshot);
        Ok(true)
    }

    fn build(tables: &Tables) -> Result<Snapshot, String> {
        let mut snapshot = Snapshot {
            users: tables
                .users
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            acls: HashMap::new(),
            signing_keys: tables
                .users
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        SigningKey::new(v.password.as_deref().unwrap_or("")),
                    )
                })
                .collect(),
        };
        for (subject, acl) in &tables.acls {
            snapshot.acls.insert(
                subject.clone(),
                compile(acl).map_err(|e| format!("ACL of {subject}: {e}"))?,
            );
        }
        Ok(snapshot)
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read_locked().clone()
    }

    /// Applies `change` to a copy of the tables, persists it, and puts it in force.
    fn mutate<T>(
        &self,
        change: impl FnOnce(&mut Tables) -> Result<T, MetadataError>,
    ) -> Result<T, MetadataError> {
        let mut tables = self.tables.locked();
        let mut next = tables.clone();
        let out = change(&mut next)?;
        let snapshot = Self::build(&next).map_err(MetadataError::Invalid)?;
        self.persist(&next)
            .map_err(|e| MetadataError::Storage(e.to_string()))?;
        *tables = next;
        *self.snapshot.write_locked() = Arc::new(snapshot);
        Ok(out)
    }

    fn persist(&self, tables: &Tables) -> Result<(), AuthError> {
        std::fs::create_dir_all(&self.dir).map_err(|source| AuthError::Write {
            path: self.dir.clone(),
            source,
        })?;
        for (name, bytes) in [
            ("users.json", serde_json::to_vec_pretty(&tables.users)),
            ("acls.json", serde_json::to_vec_pretty(&tables.acls)),
        ] {
            let path = self.dir.join(name);
            let bytes = bytes.map_err(|e| AuthError::Config(e.to_string()))?;
            config_file::persist(&path, &bytes).map_err(|source| AuthError::Write {
                path: path.clone(),
                source,
            })?;
            restrict(&path);
        }
        Ok(())
    }

    pub fn create_user(&self, mut user: UserInfo) -> Result<(), MetadataError> {
        let name = user
            .username
            .clone()
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| MetadataError::Invalid("The username is blank".into()))?;
        if user.password.as_deref().is_none_or(|p| p.is_empty()) {
            return Err(MetadataError::Invalid("The password is blank".into()));
        }
        user.user_type = Some(if user.is_super() { "Super" } else { "Normal" }.into());
        user.user_status = Some(
            if user.is_disabled() {
                "disable"
            } else {
                "enable"
            }
            .into(),
        );
        self.mutate(|t| {
            if t.users.contains_key(&name) {
                return Err(MetadataError::Refused(format!(
                    "The user {name} already exists"
                )));
            }
            t.users.insert(name, user);
            Ok(())
        })
    }

    pub fn update_user(&self, user: UserInfo) -> Result<(), MetadataError> {
        let name = user.username.clone().unwrap_or_default();
        self.mutate(|t| {
            let old = t
                .users
                .get_mut(&name)
                .ok_or_else(|| MetadataError::Refused(format!("The user {name} does not exist")))?;
            if let Some(p) = user.password.clone().filter(|p| !p.is_empty()) {
                old.password = Some(p);
            }
            if user.user_type.is_some() {
                old.user_type = Some(if user.is_super() { "Super" } else { "Normal" }.into());
            }
            if let Some(s) = user.user_status {
                old.user_status = Some(
                    if s.eq_ignore_ascii_case("disable") {
                        "disable"
                    } else {
                        "enable"
                    }
                    .into(),
                );
            }
            Ok(())
        })
    }

    /// Deletes a user and its ACL; deleting an absent user succeeds.
    pub fn delete_user(&self, name: &str) -> Result<(), MetadataError> {
        self.mutate(|t| {
            t.users.remove(name);
            t.acls.remove(&subject_key(name));
            Ok(())
        })
    }

    pub fn user(&self, name: &str) -> Option<UserInfo> {
        self.snapshot().users.get(name).cloned()
    }

    pub fn list_users(&self, filter: Option<&str>) -> Vec<UserInfo> {
        let tables = self.tables.locked();
        tables
            .users
            .iter()
            .filter(|(n, _)| filter.is_none_or(|f| n.contains(f)))
            .map(|(_, u)| u.clone())
            .collect()
    }

    /// Creates or merges an ACL (requests CREATE_ACL and UPDATE_ACL alike, as Java):
    /// entries replace those of the same policy type and resource.
    pub fn upsert_acl(&self, subject: &str, acl: AclInfo) -> Result<(), MetadataError> {
        let key = subject_key(acl.subject.as_deref().unwrap_or(subject));
        if acl.policies.is_empty() || acl.policies.iter().any(|p| p.entries.is_empty()) {
            return Err(MetadataError::Invalid(
                "The policies of the acl are empty".into(),
            ));
        }
        compile(&acl).map_err(MetadataError::Invalid)?;
        self.mutate(|t| {
            let user = key.strip_prefix("User:").unwrap_or(&key);
            if !t.users.contains_key(user) {
                return Err(MetadataError::Refused(format!(
                    "The subject of {key} does not exist"
                )));
            }
            let stored = t.acls.entry(key.clone()).or_insert_with(|| AclInfo {
                subject: Some(key.clone()),
                policies: vec![],
            });
            for policy in acl.policies {
                let ty = policy_type_name(policy.policy_type.as_deref());
                let slot = match stored
                    .policies
                    .iter_mut()
                    .position(|p| policy_type_name(p.policy_type.as_deref()) == ty)
                {
                    Some(i) => &mut stored.policies[i],
                    None => {
                        stored.policies.push(PolicyInfo {
                            policy_type: Some(ty.clone()),
                            entries: vec![],
                        });
                        stored
                            .policies
                            .last_mut()
                            .unwrap_or_else(|| unreachable!("just pushed"))
                    }
                };
                for entry in policy.entries {
                    let resource = ResourcePattern::parse(&entry.resource);
                    match slot
                        .entries
                        .iter_mut()
                        .find(|e| ResourcePattern::parse(&e.resource) == resource)
                    {
                        Some(old) => *old = entry,
                        None => slot.entries.push(entry),
                    }
                }
            }
            Ok(())
        })
    }

    /// Deletes a subject's whole ACL, or one resource's entry of one policy type.
    pub fn delete_acl(
        &self,
        subject: &str,
        policy_type: Option<&str>,
        resource: Option<&str>,
    ) -> Result<(), MetadataError> {
        let key = subject_key(subject);
        let ty = policy_type_name(policy_type);
        self.mutate(|t| {
            let Some(acl) = t.acls.get_mut(&key) else {
                return Err(MetadataError::Refused(format!(
                    "The acl of {key} does not exist"
                )));
            };
            match resource.filter(|r| !r.trim().is_empty()) {
                None => {
                    t.acls.remove(&key);
                }
                Some(resource) => {
                    let pattern = ResourcePattern::parse(resource);
                    for policy in &mut acl.policies {
                        if policy_type_name(policy.policy_type.as_deref()) == ty {
                            policy
                                .entries
                                .retain(|e| ResourcePattern::parse(&e.resource) != pattern);
                        }
                    }
                    acl.policies.retain(|p| !p.entries.is_empty());
                    if acl.policies.is_empty() {
                        t.acls.remove(&key);
                    }
                }
            }
            Ok(())
        })
    }

    pub fn acl(&self, subject: &str) -> Result<Option<AclInfo>, MetadataError> {
        let key = subject_key(subject);
        let tables = self.tables.locked();
        let user = key.strip_prefix("User:").unwrap_or(&key);
        if !tables.users.contains_key(user) {
            return Err(MetadataError::Refused(format!(
                "The subject {key} does not exist"
            )));
        }
        Ok(tables.acls.get(&key).cloned())
    }

    pub fn list_acls(
        &self,
        subject_filter: Option<&str>,
        resource_filter: Option<&str>,
    ) -> Vec<AclInfo> {
        let tables = self.tables.locked();
        tables
            .acls
            .iter()
            .filter(|(s, _)| subject_filter.is_none_or(|f| s.contains(f)))
            .filter(|(_, a)| {
                resource_filter.is_none_or(|f| {
                    a.policies
                        .iter()
                        .any(|p| p.entries.iter().any(|e| e.resource.contains(f)))
                })
            })
            .map(|(_, a)| a.clone())
            .collect()
    }
}

#[cfg(unix)]
fn restrict(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // The files hold passwords: owner only.
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(not(unix))]
fn restrict(_: &Path) {}
