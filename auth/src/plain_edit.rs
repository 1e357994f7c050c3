//! Changing the ACL 1.0 files at run time (UPDATE_AND_CREATE_ACL_CONFIG,
//! DELETE_ACL_CONFIG, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG; Java's
//! `PlainPermissionManager.updateAccessConfig`, `deleteAccessConfig`,
//! `updateGlobalWhiteAddrsConfig`, `getAllAclConfigVersion`).
//!
//! An account is changed in the file that defines it; a new one goes to
//! `conf/plain_acl.yml`. Only the fields given change. The edited file is checked as
//! a whole before it is written (a change that would break the file is refused and
//! nothing is written), gets its `dataVersion` counter raised, replaces the old one
//! atomically (write aside, then rename), and is in force when the call returns.
//! Comments in an edited file are not kept, as Apache's writer does not keep them.
//!
//! Each file's version is its own `dataVersion` entry (Apache's YAML form
//! `dataVersion: [{counter, timestamp}]`), else counter 0 and the file's modification
//! time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vostok_remoting::protocol::body::DataVersion;
use vostok_remoting::support::time::now_millis;
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

use crate::error::AuthError;
use crate::plain;
use crate::plain_store::{acl_files, PlainAclStore};

/// The fields of an account to create or change; `None` keeps what the file has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountChange {
    pub access_key: String,
    pub secret_key: Option<String>,
    pub white_remote_address: Option<String>,
    pub admin: Option<bool>,
    pub default_topic_perm: Option<String>,
    pub default_group_perm: Option<String>,
    pub topic_perms: Option<Vec<String>>,
    pub group_perms: Option<Vec<String>>,
}

fn key(name: &str) -> Yaml {
    Yaml::String(name.to_owned())
}

fn list(items: &[String]) -> Yaml {
    Yaml::Array(items.iter().map(|i| Yaml::String(i.clone())).collect())
}

/// The file's top level, read for editing (an empty file is an empty map).
fn read_doc(path: &Path) -> Result<Hash, AuthError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(AuthError::Read {
                path: path.to_owned(),
                source,
            })
        }
    };
    let bad = |reason: String| AuthError::Acl {
        path: path.to_owned(),
        reason,
    };
    let docs = YamlLoader::load_from_str(&text).map_err(|e| bad(format!("not YAML: {e}")))?;
    match docs.into_iter().next() {
        None | Some(Yaml::Null) => Ok(Hash::new()),
        Some(Yaml::Hash(h)) => Ok(h),
        Some(_) => Err(bad("not a map of keys".into())),
    }
}

/// A file's `dataVersion`: its own entry, else counter 0 at the file's mtime.
fn version_of(doc: &Hash, path: &Path) -> DataVersion {
    let entry = match doc.get(&key("dataVersion")) {
        Some(Yaml::Array(items)) => items.first().cloned(),
        Some(h @ Yaml::Hash(_)) => Some(h.clone()),
        _ => None,
    };
    if let Some(entry) = entry {
        let field = |k: &str| match &entry[k] {
            Yaml::Integer(i) => Some(*i),
            Yaml::String(s) => s.parse().ok(),
            _ => None,
        };
        if let (Some(counter), Some(timestamp)) = (field("counter"), field("timestamp")) {
            return DataVersion {
                counter,
                state_version: 0,
                timestamp,
            };
        }
    }
    let mtime = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    DataVersion {
        counter: 0,
        state_version: 0,
        timestamp: mtime,
    }
}

/// Raises the version, checks the result and replaces the file.
fn write_doc(path: &Path, mut doc: Hash) -> Result<(), AuthError> {
    let mut version = version_of(&doc, path);
    version.counter += 1;
    version.timestamp = now_millis();
    let mut entry = Hash::new();
    entry.insert(key("counter"), Yaml::Integer(version.counter));
    entry.insert(key("timestamp"), Yaml::Integer(version.timestamp));
    doc.insert(key("dataVersion"), Yaml::Array(vec![Yaml::Hash(entry)]));
    let mut text = String::new();
    YamlEmitter::new(&mut text)
        .dump(&Yaml::Hash(doc))
        .map_err(|e| AuthError::Acl {
            path: path.to_owned(),
            reason: format!("cannot write YAML: {e}"),
        })?;
    text.push('\n');
    plain::parse(&text).map_err(|reason| AuthError::Acl {
        path: path.to_owned(),
        reason,
    })?;
    let write = |e| AuthError::Write {
        path: path.to_owned(),
        source: e,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write)?;
    }
    let aside = path.with_extension("yml.writing");
    std::fs::write(&aside, text).map_err(write)?;
    std::fs::rename(&aside, path).map_err(write)
}

/// The file's accounts, taken out to be edited and put back with `doc.insert`.
fn take_accounts(doc: &mut Hash) -> Vec<Yaml> {
    match doc.remove(&key("accounts")) {
        Some(Yaml::Array(accounts)) => accounts,
        _ => Vec::new(),
    }
}

fn defines(doc: &Hash, access_key: &str) -> bool {
    matches!(doc.get(&key("accounts")), Some(Yaml::Array(accounts))
        if accounts.iter().any(|a| a["accessKey"].as_str() == Some(access_key)))
}

impl PlainAclStore {
    /// `conf/plain_acl.yml`: where new accounts and global white addresses go.
    pub fn default_file(&self) -> PathBuf {
        self.home().join("conf").join("plain_acl.yml")
    }

    /// The file defining `access_key`, in merge order.
    fn file_defining(&self, access_key: &str) -> Result<Option<PathBuf>, AuthError> {
        for path in acl_files(self.home()) {
            if defines(&read_doc(&path)?, access_key) {
                return Ok(Some(path));
            }
        }
        Ok(None)
    }

    /// Creates the account, or changes the fields given of an existing one.
    pub fn update_account(&self, change: &AccountChange) -> Result<(), AuthError> {
        let path = self
            .file_defining(&change.access_key)?
            .unwrap_or_else(|| self.default_file());
        let mut doc = read_doc(&path)?;
        let mut accounts = take_accounts(&mut doc);
        let index = accounts
            .iter()
            .position(|a| a["accessKey"].as_str() == Some(change.access_key.as_str()));
        let mut account = match index {
            Some(i) => match &accounts[i] {
                Yaml::Hash(h) => h.clone(),
                _ => Hash::new(),
            },
            None => Hash::new(),
        };
        account.insert(key("accessKey"), Yaml::String(change.access_key.clone()));
        let text = |v: &Option<String>| v.clone().map(Yaml::String);
        let fields = [
            ("secretKey", text(&change.secret_key)),
            ("whiteRemoteAddress", text(&change.white_remote_address)),
            ("admin", change.admin.map(Yaml::Boolean)),
            ("defaultTopicPerm", text(&change.default_topic_perm)),
            ("defaultGroupPerm", text(&change.default_group_perm)),
            ("topicPerms", change.topic_perms.as_deref().map(list)),
            ("groupPerms", change.group_perms.as_deref().map(list)),
        ];
        for (name, value) in fields {
            if let Some(value) = value {
                account.insert(key(name), value);
            }
        }
        match index {
            Some(i) => accounts[i] = Yaml::Hash(account),
            None => accounts.push(Yaml::Hash(account)),
        }
        doc.insert(key("accounts"), Yaml::Array(accounts));
        write_doc(&path, doc)?;
        self.reload_if_changed();
        Ok(())
    }

    /// Removes the account; `false` when no file defines it.
    pub fn delete_account(&self, access_key: &str) -> Result<bool, AuthError> {
        let Some(path) = self.file_defining(access_key)? else {
            return Ok(false);
        };
        let mut doc = read_doc(&path)?;
        let mut accounts = take_accounts(&mut doc);
        accounts.retain(|a| a["accessKey"].as_str() != Some(access_key));
        doc.insert(key("accounts"), Yaml::Array(accounts));
        write_doc(&path, doc)?;
        self.reload_if_changed();
        Ok(true)
    }

    /// Replaces the global white addresses of `file` (one of the ACL files, or
    /// `plain_acl.yml` when `None`): no other path is written.
    pub fn update_global_white(
        &self,
        addresses: &[String],
        file: Option<&Path>,
    ) -> Result<(), AuthError> {
        let path = match file {
            None => self.default_file(),
            Some(file) => {
                let wanted = std::fs::canonicalize(file).ok();
                acl_files(self.home())
                    .into_iter()
                    .find(|known| {
                        known == file || std::fs::canonicalize(known).ok() == wanted && wanted.is_some()
                    })
                    .ok_or_else(|| {
                        AuthError::Config(format!(
                            "{} is not one of this server's ACL files (conf/plain_acl.yml, conf/acl/*.yml under {})",
                            file.display(),
                            self.home().display()
                        ))
                    })?
            }
        };
        let mut doc = read_doc(&path)?;
        doc.insert(key("globalWhiteRemoteAddresses"), list(addresses));
        write_doc(&path, doc)?;
        self.reload_if_changed();
        Ok(())
    }

    /// Each ACL file's version, by path (Java's `getAllAclConfigVersion`).
    pub fn versions(&self) -> Result<BTreeMap<String, DataVersion>, AuthError> {
        let mut out = BTreeMap::new();
        for path in acl_files(self.home()) {
            let doc = read_doc(&path)?;
            out.insert(path.display().to_string(), version_of(&doc, &path));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "globalWhiteRemoteAddresses: [10.0.0.1]\naccounts:\n  - accessKey: account-one\n    secretKey: secret-one\n    brokerNames: [broker-a]\n";

    fn store_with(text: &str) -> (tempfile::TempDir, PlainAclStore) {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("conf")).unwrap();
        std::fs::write(home.path().join("conf/plain_acl.yml"), text).unwrap();
        let store = PlainAclStore::open(home.path().to_path_buf()).unwrap();
        (home, store)
    }

    #[test]
    fn accounts_are_created_changed_and_deleted_in_force_at_once() {
        let (_home, store) = store_with(ONE);
        let before = store.versions().unwrap();
        store
            .update_account(&AccountChange {
                access_key: "account-two".into(),
                secret_key: Some("secret-two".into()),
                topic_perms: Some(vec!["orders=PUB".into()]),
                ..AccountChange::default()
            })
            .unwrap();
        let acl = store.snapshot();
        assert_eq!(acl.accounts["account-two"].secret_key(), "secret-two");
        // Changing one field keeps the others, Vostok's own keys included.
        store
            .update_account(&AccountChange {
                access_key: "account-one".into(),
                admin: Some(true),
                ..AccountChange::default()
            })
            .unwrap();
        let one = store.snapshot().accounts["account-one"].clone();
        assert!(one.admin);
        assert_eq!(one.secret_key(), "secret-one");
        assert!(one.may_use_broker_name("broker-a"));
        let after = store.versions().unwrap();
        let file = store.default_file().display().to_string();
        assert_eq!(after[&file].counter, before[&file].counter + 2);
        assert!(store.delete_account("account-two").unwrap());
        assert!(!store.snapshot().accounts.contains_key("account-two"));
        assert!(!store.delete_account("account-two").unwrap());
    }

    #[test]
    fn a_change_that_breaks_the_file_writes_nothing() {
        let (_home, store) = store_with(ONE);
        let text = std::fs::read_to_string(store.default_file()).unwrap();
        let err = store
            .update_account(&AccountChange {
                access_key: "account-three".into(),
                secret_key: Some("short".into()),
                ..AccountChange::default()
            })
            .unwrap_err();
        assert!(err.to_string().contains("secretKey"), "{err}");
        assert_eq!(std::fs::read_to_string(store.default_file()).unwrap(), text);
    }

    #[test]
    fn global_white_addresses_only_go_to_acl_files() {
        let (home, store) = store_with(ONE);
        store
            .update_global_white(&["192.168.0.*".into()], None)
            .unwrap();
        assert_eq!(store.snapshot().global_white.len(), 1);
        let outside = home.path().join("elsewhere.yml");
        assert!(store
            .update_global_white(&["10.0.0.2".into()], Some(&outside))
            .is_err());
        assert!(!outside.exists());
        store
            .update_global_white(&["10.0.0.3".into()], Some(&store.default_file()))
            .unwrap();
    }
}
