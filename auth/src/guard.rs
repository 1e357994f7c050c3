//! The one place a server asks "may this request run?" ([`Guard::check`]), whichever
//! ACL model is on (docs/security.md#which-model):
//!
//! * `aclEnable=true`: ACL 1.0, accounts from plain_acl.yml, reloaded on change;
//! * `authenticationEnabled` / `authorizationEnabled`: ACL 2.0, users and ACLs from
//!   the broker's config directory (`migrateAuthFromV1Enabled` imports plain_acl.yml
//!   first). When both models are switched on, ACL 2.0 decides (as Apache 5.3.3,
//!   which ignores `aclEnable`).
//!
//! The server passes the request and a closure naming what it needs ([`Access`]),
//! called only once the signature is good: resource lookups cost nothing for a
//! request refused earlier.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::warn;
use vostok_remoting::auth::ACCESS_KEY;
use vostok_remoting::support::time::coarse_now_millis;
use vostok_remoting::RemotingCommand;

use crate::error::AuthError;
use crate::namespace::Confinement;
use crate::plain::PlainAccount;
use crate::plain_check;
use crate::plain_store::{PlainAclStore, POLL_INTERVAL};
use crate::proof::{Proof, TimeWindow};
use crate::resource::{Access, Denied};
use crate::v2::check as v2_check;
use crate::v2::store::subject_key;
use crate::v2::{migrate, AuthMetadata, UserInfo};

/// Who made a request, once accepted.
#[derive(Debug, Clone)]
pub enum Principal {
    /// A global white address, or a request code on a whitelist: no account.
    Trusted,
    /// An ACL 1.0 account.
    Plain(Arc<PlainAccount>),
    /// An ACL 2.0 user, or `None` when authentication is off.
    User {
        name: Option<String>,
        is_super: bool,
        /// The namespaces the user is confined to ([`crate::namespace`]).
        confinement: Option<Confinement>,
    },
}

impl Principal {
    /// The namespaces this principal is confined to, if it is: what it may list.
    pub fn confinement(&self) -> Option<&Confinement> {
        match self {
            Principal::User { confinement, .. } => confinement.as_ref(),
            _ => None,
        }
    }

    pub fn access_key(&self) -> Option<&str> {
        match self {
            Principal::Trusted => None,
            Principal::Plain(a) => Some(&a.access_key),
            Principal::User { name, .. } => name.as_deref(),
        }
    }

    /// Whether this principal may register or unregister `broker_name` with a name
    /// server (see [`PlainAccount::may_use_broker_name`]).
    pub fn may_use_broker_name(&self, broker_name: &str) -> bool {
        match self {
            Principal::Trusted => true,
            Principal::Plain(a) => a.may_use_broker_name(broker_name),
            Principal::User { is_super, .. } => *is_super,
        }
    }

    /// Refuses request `code`, which acts for the broker (group) `broker_name`, unless
    /// this principal may use that name: no account takes over another broker's route
    /// or group.
    fn act_for_broker(&self, broker_name: &str, code: i32) -> Result<(), Denied> {
        if self.may_use_broker_name(broker_name) {
            return Ok(());
        }
        Err(Denied::new(format!(
            "access denied: AccessKey {} may not act as broker {broker_name:?} (request {}): list it under brokerNames in its account",
            self.access_key().unwrap_or("-"),
            vostok_remoting::protocol::request_code::name(code)
        )))
    }
}

/// What the guard is built from: the servers' `aclEnable` family of keys.
#[derive(Debug, Clone, Default)]
pub struct GuardConfig {
    pub acl_enable: bool,
    pub authentication_enabled: bool,
    pub authorization_enabled: bool,
    pub migrate_auth_from_v1_enabled: bool,
    /// Where `conf/plain_acl.yml` is looked for.
    pub rocketmq_home: PathBuf,
    /// Where ACL 2.0 users and ACLs are kept; required for ACL 2.0.
    pub metadata_dir: Option<PathBuf>,
    /// `initAuthenticationUser`: a SUPER user created when absent (the first one).
    pub init_user: Option<UserInfo>,
    /// Request codes that skip authentication / authorization (ACL 2.0 whitelists).
    pub authentication_whitelist: Vec<i32>,
    pub authorization_whitelist: Vec<i32>,
    /// Accounts known without a file: an embedded name server's own broker.
    pub extra_accounts: Vec<PlainAccount>,
    /// How far a signed time may be from the clock (docs/security.md#replay).
    pub time_window: TimeWindow,
}

impl GuardConfig {
    pub fn is_on(&self) -> bool {
        self.acl_enable || self.authentication_enabled || self.authorization_enabled
    }
}

struct V2 {
    metadata: Arc<AuthMetadata>,
    authenticate: bool,
    authorize: bool,
    authentication_whitelist: Vec<i32>,
    authorization_whitelist: Vec<i32>,
}

/// Authentication and authorization for one server.
pub struct Guard {
    plain: Option<Arc<PlainAclStore>>,
    extra: Vec<Arc<PlainAccount>>,
    v2: Option<V2>,
    time_window: TimeWindow,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("acl_v1", &self.plain.is_some())
            .field("acl_v2", &self.v2.is_some())
            .finish()
    }
}

impl Guard {
    /// Builds the guard (blocking file reads); `None` when every switch is off.
    pub fn open(config: &GuardConfig) -> Result<Option<Guard>, AuthError> {
        if !config.is_on() {
            return Ok(None);
        }
        let v2_on = config.authentication_enabled || config.authorization_enabled;
        let plain = if !v2_on || config.migrate_auth_from_v1_enabled {
            Some(Arc::new(PlainAclStore::open(config.rocketmq_home.clone())?))
        } else {
            None
        };
        let v2 = if v2_on {
            let dir = config.metadata_dir.clone().ok_or_else(|| {
                AuthError::Config("ACL 2.0 needs a directory for its users and ACLs".into())
            })?;
            let metadata = Arc::new(AuthMetadata::open(dir)?);
            if let Some(user) = &config.init_user {
                let name = user.username.clone().unwrap_or_default();
                if metadata.user(&name).is_none() {
                    let user = UserInfo {
                        user_type: Some("Super".into()),
                        ..user.clone()
                    };
                    if let Err(e) = metadata.create_user(user) {
                        warn!(user = %name, error = %e, "initAuthenticationUser not created");
                    }
                }
            }
            if config.migrate_auth_from_v1_enabled {
                if let Some(plain) = &plain {
                    let snapshot = plain.snapshot();
                    migrate::migrate(&metadata, snapshot.accounts.values().map(|a| &**a));
                }
            }
            if config.acl_enable {
                warn!("aclEnable is ignored: ACL 2.0 (authenticationEnabled / authorizationEnabled) is on");
            }
            Some(V2 {
                metadata,
                authenticate: config.authentication_enabled,
                authorize: config.authorization_enabled,
                authentication_whitelist: config.authentication_whitelist.clone(),
                authorization_whitelist: config.authorization_whitelist.clone(),
            })
        } else {
            None
        };
        Ok(Some(Guard {
            plain: if v2.is_some() { None } else { plain },
            extra: config
                .extra_accounts
                .iter()
                .cloned()
                .map(Arc::new)
                .collect(),
            v2,
            time_window: config.time_window,
        }))
    }

    /// Starts the hot reload of the ACL 1.0 files (nothing to do for ACL 2.0).
    pub fn watch(&self, stop: CancellationToken) {
        if let Some(plain) = &self.plain {
            plain.watch(POLL_INTERVAL, stop);
        }
    }

    /// The ACL 1.0 files, when they decide.
    pub fn plain(&self) -> Option<&Arc<PlainAclStore>> {
        self.plain.as_ref()
    }

    /// The ACL 2.0 users and ACLs, when they decide.
    pub fn metadata(&self) -> Option<&Arc<AuthMetadata>> {
        self.v2.as_ref().map(|v| &v.metadata)
    }

    /// Whether the request's `AccessKey` names a SUPER user (ACL 2.0), which alone may
    /// create or change SUPER users.
    pub fn is_super_request(&self, request: &RemotingCommand) -> bool {
        match (&self.v2, request.ext_fields.get(ACCESS_KEY)) {
            (Some(v2), Some(name)) => v2.metadata.user(name).is_some_and(|u| u.is_super()),
            (Some(v2), None) => !v2.authenticate,
            (None, _) => true,
        }
    }

    /// Accepts or refuses `request` from `ip`; `access` says what it needs beyond a
    /// valid signature and is called only when it matters.
    pub fn check<'r>(
        &self,
        ip: IpAddr,
        request: &impl Proof,
        access: impl FnOnce() -> Access<'r>,
    ) -> Result<Principal, Denied> {
        // The coarse clock (a tick behind at most) against a window of minutes: read
        // for every request, it costs no hardware counter read.
        let clock = (&self.time_window, coarse_now_millis());
        if let Some(v2) = &self.v2 {
            return self.check_v2(v2, ip, request, clock, access);
        }
        let snapshot = self
            .plain
            .as_ref()
            .map(|p| p.snapshot())
            .unwrap_or_default();
        if self.extra.is_empty() {
            return plain_check::check(&snapshot, ip, request, clock, access);
        }
        let mut merged = crate::plain_store::PlainAcl {
            global_white: snapshot.global_white.clone(),
            accounts: snapshot.accounts.clone(),
        };
        for account in &self.extra {
            merged
                .accounts
                .entry(account.access_key.clone())
                .or_insert_with(|| account.clone());
        }
        plain_check::check(&merged, ip, request, clock, access)
    }

    /// [`Guard::check`] for a remoting request. One that acts for a broker
    /// (`acts_for_broker`: registration, heartbeats, a group's master) must also come
    /// from an account that may use the name in its `brokerName` field, as the name
    /// server and the controller ask.
    pub fn check_remoting<'r>(
        &self,
        ip: IpAddr,
        request: &RemotingCommand,
        access: impl FnOnce() -> Access<'r>,
        acts_for_broker: bool,
    ) -> Result<Principal, Denied> {
        let principal = self.check(ip, request, access)?;
        if acts_for_broker {
            let name = request.ext_fields.get("brokerName").unwrap_or("");
            principal.act_for_broker(name, request.code)?;
        }
        Ok(principal)
    }

    /// The ACL 1.0 account `request` is signed with, checked strictly: no global or
    /// account white address stands in for the signature. For peers that must
    /// prove who they are, such as a controller's Raft messages.
    pub fn signer(&self, request: &impl Proof) -> Result<Arc<PlainAccount>, Denied> {
        let code = vostok_remoting::protocol::request_code::name(request.code());
        let Some(key) = request.access_key() else {
            return Err(Denied::unauthenticated(format!(
                "access denied: request {code} must be signed"
            )));
        };
        let account = self
            .plain
            .as_ref()
            .and_then(|p| p.snapshot().accounts.get(key).cloned())
            .or_else(|| self.extra.iter().find(|a| a.access_key == key).cloned())
            .ok_or_else(|| {
                Denied::unauthenticated(format!("access denied: unknown AccessKey {key}"))
            })?;
        if !request.signed_with(account.signing_key()) {
            return Err(Denied::unauthenticated(format!(
                "access denied: signature check failed for AccessKey {key}"
            )));
        }
        Ok(account)
    }

    fn check_v2<'r>(
        &self,
        v2: &V2,
        ip: IpAddr,
        request: &impl Proof,
        clock: (&TimeWindow, i64),
        access: impl FnOnce() -> Access<'r>,
    ) -> Result<Principal, Denied> {
        let snapshot = v2.metadata.snapshot();
        let code = request.code();
        let name = if v2.authenticate && !v2.authentication_whitelist.contains(&code) {
            Some(v2_check::authenticate(&snapshot, request, clock)?.to_owned())
        } else {
            request.access_key().map(str::to_owned)
        };
        let is_super = name
            .as_deref()
            .and_then(|n| snapshot.users.get(n))
            .is_some_and(|u| u.is_super());
        let confinement = match (&name, is_super || !v2.authorize) {
            (Some(name), false) => Confinement::of(snapshot.acls.get(&subject_key(name))),
            _ => None,
        };
        if v2.authorize && !v2.authorization_whitelist.contains(&code) {
            match &name {
                Some(name) => {
                    let access = access();
                    if let Some(confinement) = &confinement {
                        confinement.check(name, code, &access)?;
                    }
                    // A scoped request is an admin's, or a confined user's whose
                    // names the confinement has just admitted.
                    let access = match access {
                        Access::Scoped(names) if confinement.is_some() => Access::Names(names),
                        access => access,
                    };
                    v2_check::authorize(&snapshot, name, ip, code, access)?
                }
                None => {
                    return Err(Denied::unauthenticated(format!(
                        "access denied: no AccessKey on request {}",
                        vostok_remoting::protocol::request_code::name(code)
                    )))
                }
            }
        }
        Ok(Principal::User {
            name,
            is_super,
            confinement,
        })
    }
}
