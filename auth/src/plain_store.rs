//! The ACL 1.0 accounts in force: every plain ACL file merged, reloaded when one
//! changes (Java's `PlainPermissionManager` and `AclFileWatchService`).
//!
//! Files: `<home>/conf/plain_acl.yml` plus every `*.yml`/`*.yaml` under
//! `<home>/conf/acl/`, recursively (`tools.yml` skipped), where home is
//! `$ROCKETMQ_HOME`, else the working directory. An access key defined twice: the
//! first file (in path order, `plain_acl.yml` first) wins, with a warning.
//!
//! Reload: [`PlainAclStore::watch`] polls every [`POLL_INTERVAL`]; when the set of
//! files or any file's content changed, all are read again. A file that no longer
//! parses keeps the accounts in force (a warning names it): a typo must not lock
//! every client out, nor let every client in.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use crate::address::AddressPattern;
use crate::error::AuthError;
use crate::plain::{self, PlainAccount};

/// How often the files are looked at: a change is in force within this (plus a read).
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Largest ACL file read: they hold a few accounts.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The merged accounts of every file.
#[derive(Debug, Default)]
pub struct PlainAcl {
    pub global_white: Vec<AddressPattern>,
    pub accounts: HashMap<String, Arc<PlainAccount>>,
}

/// The installation directory ACL files are found under: `$ROCKETMQ_HOME`, else the
/// working directory.
pub fn rocketmq_home() -> PathBuf {
    std::env::var_os("ROCKETMQ_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The directory a server's `rocketmqHome` setting names, or [`rocketmq_home`] when it
/// is empty.
pub fn rocketmq_home_or(setting: &str) -> PathBuf {
    if setting.is_empty() {
        rocketmq_home()
    } else {
        PathBuf::from(setting)
    }
}

/// The ACL files under `home`, in the order they are merged.
pub fn acl_files(home: &Path) -> Vec<PathBuf> {
    let conf = home.join("conf");
    let mut files = Vec::new();
    let main = conf.join("plain_acl.yml");
    if main.is_file() {
        files.push(main);
    }
    let mut extra = Vec::new();
    let mut dirs = vec![conf.join("acl")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yml" || e == "yaml")
                && path.file_name().is_some_and(|n| n != "tools.yml")
            {
                extra.push(path);
            }
        }
    }
    extra.sort();
    files.extend(extra);
    files
}

type Fingerprint = Vec<(PathBuf, u64)>;

/// Reads and parses every file; the fingerprint tells later polls what changed.
fn load(home: &Path) -> Result<(PlainAcl, Fingerprint), AuthError> {
    let mut acl = PlainAcl::default();
    let mut fingerprint = Vec::new();
    for path in acl_files(home) {
        let too_big = std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_FILE_BYTES);
        if too_big {
            return Err(AuthError::Acl {
                path,
                reason: "larger than 4 MiB".into(),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|source| AuthError::Read {
            path: path.clone(),
            source,
        })?;
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        fingerprint.push((path.clone(), hasher.finish()));
        let file = plain::parse(&text).map_err(|reason| AuthError::Acl {
            path: path.clone(),
            reason,
        })?;
        acl.global_white.extend(file.global_white);
        for account in file.accounts {
            if acl.accounts.contains_key(&account.access_key) {
                warn!(access_key = %account.access_key, file = %path.display(), "access key defined twice; the first definition wins");
                continue;
            }
            acl.accounts
                .insert(account.access_key.clone(), Arc::new(account));
        }
    }
    Ok((acl, fingerprint))
}

fn fingerprint(home: &Path) -> Fingerprint {
    acl_files(home)
        .into_iter()
        .map(|path| {
            let mut hasher = DefaultHasher::new();
            std::fs::read_to_string(&path)
                .unwrap_or_default()
                .hash(&mut hasher);
            (path, hasher.finish())
        })
        .collect()
}

/// The accounts in force, swapped whole on reload.
#[derive(Debug)]
pub struct PlainAclStore {
    home: PathBuf,
    current: RwLock<Arc<PlainAcl>>,
    loaded: Mutex<Fingerprint>,
}

impl PlainAclStore {
    /// Loads the files under `home` (blocking reads). A file that does not parse is an
    /// error; no file at all is not (every signed request is then refused).
    pub fn open(home: PathBuf) -> Result<PlainAclStore, AuthError> {
        let (acl, fingerprint) = load(&home)?;
        if fingerprint.is_empty() {
            warn!(home = %home.display(), "no ACL file (conf/plain_acl.yml, conf/acl/*.yml): every request without a white-listed address is refused");
        }
        info!(home = %home.display(), accounts = acl.accounts.len(), files = fingerprint.len(), "ACL accounts loaded");
        Ok(PlainAclStore {
            home,
            current: RwLock::new(Arc::new(acl)),
            loaded: Mutex::new(fingerprint),
        })
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The accounts in force.
    pub fn snapshot(&self) -> Arc<PlainAcl> {
        self.current.read_locked().clone()
    }

    /// Reads the files again if any changed (blocking); true when new accounts are in force.
    pub fn reload_if_changed(&self) -> bool {
        let now = fingerprint(&self.home);
        if *self.loaded.locked() == now {
            return false;
        }
        match load(&self.home) {
            Ok((acl, fingerprint)) => {
                info!(
                    accounts = acl.accounts.len(),
                    files = fingerprint.len(),
                    "ACL files changed; reloaded"
                );
                *self.current.write_locked() = Arc::new(acl);
                *self.loaded.locked() = fingerprint;
                true
            }
            Err(e) => {
                warn!(error = %e, "ACL files changed but cannot be used; the previous accounts stay in force");
                // Not retried until the files change again.
                *self.loaded.locked() = now;
                false
            }
        }
    }

    /// Polls the files every `interval` until `stop` is cancelled (file reads run on the
    /// blocking pool).
    pub fn watch(
        self: &Arc<Self>,
        interval: Duration,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let store = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(interval) => {}
                }
                let s = store.clone();
                let _ = tokio::task::spawn_blocking(move || s.reload_if_changed()).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(home: &Path, rel: &str, text: &str) {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const ONE: &str = "accounts:\n  - accessKey: account-one\n    secretKey: secret-one\n";

    #[test]
    fn merges_the_main_file_and_the_acl_directory_first_definition_winning() {
        let home = tempfile::tempdir().unwrap();
        write(home.path(), "conf/plain_acl.yml", ONE);
        write(
            home.path(),
            "conf/acl/team/b.yaml",
            "globalWhiteRemoteAddresses: [10.0.0.1]\naccounts:\n  - accessKey: account-one\n    secretKey: other-secret\n  - accessKey: account-two\n    secretKey: secret-two\n",
        );
        write(home.path(), "conf/acl/tools.yml", "accounts: [\n");
        let store = PlainAclStore::open(home.path().to_path_buf()).unwrap();
        let acl = store.snapshot();
        assert_eq!(acl.accounts.len(), 2);
        assert_eq!(acl.accounts["account-one"].secret_key(), "secret-one");
        assert_eq!(acl.global_white.len(), 1);
    }

    #[test]
    fn reloads_a_changed_file_and_keeps_the_old_accounts_when_it_breaks() {
        let home = tempfile::tempdir().unwrap();
        write(home.path(), "conf/plain_acl.yml", ONE);
        let store = PlainAclStore::open(home.path().to_path_buf()).unwrap();
        assert!(!store.reload_if_changed());
        write(
            home.path(),
            "conf/plain_acl.yml",
            &ONE.replace("account-one", "account-new"),
        );
        assert!(store.reload_if_changed());
        assert!(store.snapshot().accounts.contains_key("account-new"));
        write(home.path(), "conf/plain_acl.yml", "accounts: [\n");
        assert!(!store.reload_if_changed());
        assert!(store.snapshot().accounts.contains_key("account-new"));
        write(home.path(), "conf/acl/extra.yml", ONE);
        assert!(!store.reload_if_changed(), "still broken");
        write(home.path(), "conf/plain_acl.yml", "accounts: []\n");
        assert!(store.reload_if_changed());
        assert!(store.snapshot().accounts.contains_key("account-one"));
    }

    #[test]
    fn a_broken_file_at_start_is_an_error_naming_it() {
        let home = tempfile::tempdir().unwrap();
        write(
            home.path(),
            "conf/plain_acl.yml",
            "accounts:\n  - accessKey: short\n",
        );
        let err = PlainAclStore::open(home.path().to_path_buf()).unwrap_err();
        assert!(err.to_string().contains("plain_acl.yml"), "{err}");
    }
}
