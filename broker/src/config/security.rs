//! The broker's security keys (docs/security.md): ACL 1.0 and 2.0 switches, the
//! credentials the broker signs its own requests with, and the `tls.*` keys.

use std::path::PathBuf;

use vostok_auth::v2::UserInfo;
use vostok_auth::{GuardConfig, TimeWindow};
use vostok_remoting::auth::SessionCredentials;
use vostok_remoting::tls::TlsConfig;

use crate::error::BrokerError;

/// Keys Apache reads to pick its ACL 2.0 providers; Vostok has one of each, so the
/// values are accepted and not used.
const PROVIDER_KEYS: &[&str] = &[
    "authenticationProvider",
    "authenticationMetadataProvider",
    "authorizationProvider",
    "authorizationMetadataProvider",
];

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
        f.debug_map().entries(self.to_properties()).finish()
    }
}

fn bool_value(key: &str, value: &str) -> Result<bool, BrokerError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(BrokerError::Config {
            key: key.to_owned(),
            reason: format!("expected true or false, got {value:?}"),
        }),
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

impl SecurityConfig {
    /// Applies a security key: `Ok(false)` when `key` is not one.
    pub fn apply(&mut self, key: &str, value: &str) -> Result<bool, BrokerError> {
        let v = value.trim();
        match key {
            "aclEnable" => self.acl_enable = bool_value(key, v)?,
            "authenticationEnabled" => self.authentication_enabled = bool_value(key, v)?,
            "authorizationEnabled" => self.authorization_enabled = bool_value(key, v)?,
            "migrateAuthFromV1Enabled" => self.migrate_auth_from_v1_enabled = bool_value(key, v)?,
            "initAuthenticationUser" => self.init_authentication_user = v.to_owned(),
            "authenticationWhitelist" => self.authentication_whitelist = v.to_owned(),
            "authorizationWhitelist" => self.authorization_whitelist = v.to_owned(),
            "accessKey" => self.access_key = v.to_owned(),
            "secretKey" => self.secret_key = v.to_owned(),
            "rocketmqHome" => self.rocketmq_home = v.to_owned(),
            "authenticationMaxTimeSkewMillis" => {
                self.time_window.max_skew_ms = match v.parse::<i64>() {
                    Ok(ms) if ms > 0 => ms,
                    _ => {
                        return Err(BrokerError::Config {
                            key: key.to_owned(),
                            reason: format!(
                                "expected a positive number of milliseconds, got {v:?}"
                            ),
                        })
                    }
                }
            }
            "authenticationTimeRequired" => self.time_window.required = bool_value(key, v)?,
            "grpcSignedDateUtc" => self.time_window.grpc_date_utc = bool_value(key, v)?,
            k if PROVIDER_KEYS.contains(&k) => {}
            _ => {
                return self.tls.apply(key, v).map_err(|e| BrokerError::Config {
                    key: key.to_owned(),
                    reason: e.to_string(),
                })
            }
        }
        Ok(true)
    }

    /// The keys as `mqbroker -p` prints them; the secret key is masked.
    pub fn to_properties(&self) -> Vec<(String, String)> {
        let mask = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                "******".to_owned()
            }
        };
        let mut out: Vec<(String, String)> = vec![
            ("aclEnable".into(), self.acl_enable.to_string()),
            (
                "authenticationEnabled".into(),
                self.authentication_enabled.to_string(),
            ),
            (
                "authorizationEnabled".into(),
                self.authorization_enabled.to_string(),
            ),
            (
                "migrateAuthFromV1Enabled".into(),
                self.migrate_auth_from_v1_enabled.to_string(),
            ),
            (
                "initAuthenticationUser".into(),
                mask(&self.init_authentication_user),
            ),
            (
                "authenticationWhitelist".into(),
                self.authentication_whitelist.clone(),
            ),
            (
                "authorizationWhitelist".into(),
                self.authorization_whitelist.clone(),
            ),
            ("accessKey".into(), self.access_key.clone()),
            ("secretKey".into(), mask(&self.secret_key)),
            ("rocketmqHome".into(), self.rocketmq_home.clone()),
            (
                "authenticationMaxTimeSkewMillis".into(),
                self.time_window.max_skew_ms.to_string(),
            ),
            (
                "authenticationTimeRequired".into(),
                self.time_window.required.to_string(),
            ),
            (
                "grpcSignedDateUtc".into(),
                self.time_window.grpc_date_utc.to_string(),
            ),
        ];
        out.extend(self.tls.to_properties());
        out
    }

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
