//! The broker's security keys (docs/security.md): ACL 1.0 and 2.0 switches, the
//! credentials the broker signs its own requests with, and the `tls.*` keys.

use std::path::PathBuf;

use vostok_auth::v2::UserInfo;
use vostok_auth::{GuardConfig, TimeWindow};
use vostok_remoting::auth::SessionCredentials;
use vostok_remoting::tls::TlsConfig;

use vostok_remoting::support::keys::{AtLeast, Flag, Key, Section, Table, Text};
use vostok_remoting::{config_key, config_within};

use crate::error::BrokerError;

#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecurityConfig {
    /// `aclEnable`: ACL 1.0, accounts from `$ROCKETMQ_HOME/conf/plain_acl.yml`.
    pub acl_enable: bool,
    /// `authenticationEnabled` / `authorizationEnabled`: ACL 2.0.
    pub authentication_enabled: bool,
    pub authorization_enabled: bool,
    /// `migrateAuthFromV1Enabled`: import plain_acl.yml accounts into ACL 2.0.
    pub migrate_auth_from_v1_enabled: bool,
    /// `initAuthenticationUser`: `{"username":"...","password":"..."}`, a SUPER user
    /// created when absent.
    pub init_authentication_user: String,
    /// `authenticationWhitelist` / `authorizationWhitelist`: request codes (comma
    /// separated) that skip the check.
    pub authentication_whitelist: String,
    pub authorization_whitelist: String,
    /// `accessKey` / `secretKey`: what the broker signs its own requests with
    /// (registration with the name servers).
    pub access_key: String,
    pub secret_key: String,
    /// `rocketmqHome`: where `conf/plain_acl.yml` is looked for; empty means
    /// `$ROCKETMQ_HOME`, else the working directory.
    pub rocketmq_home: String,
    /// `authenticationMaxTimeSkewMillis`, `authenticationTimeRequired`,
    /// `grpcSignedDateUtc` (**Vostok**): how far a signed time may be from the clock
    /// (docs/security.md#replay).
    pub time_window: TimeWindow,
    pub tls: TlsConfig,
}

impl std::fmt::Debug for SecurityConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.key_values()).finish()
    }
}

fn codes(key: &str, list: &str) -> Result<Vec<i32>, BrokerError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse().map_err(|_| BrokerError::Config {
                key: key.to_owned(),
                reason: format!("{s:?} is not a request code"),
            })
        })
        .collect()
}

fn mask(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        "******".to_owned()
    }
}

/// The ACL, credential and `tls.*` keys.
pub static KEYS: Table<SecurityConfig> = Table {
    keys: &[
        config_key!("aclEnable", acl_enable: Flag, "ACL 1.0: accounts from `$ROCKETMQ_HOME/conf/plain_acl.yml`"),
        config_key!("authenticationEnabled", authentication_enabled: Flag, "ACL 2.0 authentication"),
        config_key!("authorizationEnabled", authorization_enabled: Flag, "ACL 2.0 authorization"),
        config_key!("migrateAuthFromV1Enabled", migrate_auth_from_v1_enabled: Flag, "import `plain_acl.yml` accounts into ACL 2.0"),
        Key::new(
            "initAuthenticationUser",
            "`{\"username\":...,\"password\":...}`, a SUPER user created when absent; printed as `******`",
            |c, v| {
                c.init_authentication_user = v.trim().to_owned();
                Ok(())
            },
            |c| mask(&c.init_authentication_user),
        ),
        config_key!("authenticationWhitelist", authentication_whitelist: Text, "request codes, comma separated, that skip authentication"),
        config_key!("authorizationWhitelist", authorization_whitelist: Text, "request codes, comma separated, that skip authorization"),
        config_key!("accessKey", access_key: Text, "what the broker signs its own requests with"),
        Key::new(
            "secretKey",
            "its secret; printed as `******`",
            |c, v| {
                c.secret_key = v.trim().to_owned();
                Ok(())
            },
            |c| mask(&c.secret_key),
        ),
        config_key!("rocketmqHome", rocketmq_home: Text, "where `conf/plain_acl.yml` is looked for; empty: `$ROCKETMQ_HOME`, else the working directory"),
        config_key!("authenticationMaxTimeSkewMillis", time_window.max_skew_ms: AtLeast(1i64), "how far a signed time may be from the clock (docs/security.md#replay)"),
        config_key!("authenticationTimeRequired", time_window.required: Flag, "a signed request must carry its time"),
        config_key!("grpcSignedDateUtc", time_window.grpc_date_utc: Flag, "gRPC clients sign their date in UTC"),
        Key::ignored("authenticationProvider"),
        Key::ignored("authenticationMetadataProvider"),
        Key::ignored("authorizationProvider"),
        Key::ignored("authorizationMetadataProvider"),
    ],
    nested: &[config_within!(SecurityConfig, tls, vostok_remoting::tls::config::KEYS)],
};

impl Section for SecurityConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl SecurityConfig {
    pub fn is_on(&self) -> bool {
        self.acl_enable || self.authentication_enabled || self.authorization_enabled
    }

    /// The credentials of the broker's own requests, when configured.
    pub fn credentials(&self) -> Option<SessionCredentials> {
        (!self.access_key.is_empty())
            .then(|| SessionCredentials::new(&self.access_key, &self.secret_key))
    }

    /// What the guard is built from; `config_dir` holds ACL 2.0's users and ACLs.
    pub fn guard_config(&self, config_dir: PathBuf) -> Result<GuardConfig, BrokerError> {
        let init_user = if self.init_authentication_user.is_empty() {
            None
        } else {
            Some(
                serde_json::from_str::<UserInfo>(&self.init_authentication_user).map_err(|e| {
                    BrokerError::Config {
                        key: "initAuthenticationUser".into(),
                        reason: format!("expected {{\"username\":...,\"password\":...}}: {e}"),
                    }
                })?,
            )
        };
        Ok(GuardConfig {
            acl_enable: self.acl_enable,
            authentication_enabled: self.authentication_enabled,
            authorization_enabled: self.authorization_enabled,
            migrate_auth_from_v1_enabled: self.migrate_auth_from_v1_enabled,
            rocketmq_home: vostok_auth::plain_store::rocketmq_home_or(&self.rocketmq_home),
            metadata_dir: Some(config_dir.join("auth")),
            init_user,
            authentication_whitelist: codes(
                "authenticationWhitelist",
                &self.authentication_whitelist,
            )?,
            authorization_whitelist: codes(
                "authorizationWhitelist",
                &self.authorization_whitelist,
            )?,
            extra_accounts: Vec::new(),
            time_window: self.time_window,
        })
    }
}
