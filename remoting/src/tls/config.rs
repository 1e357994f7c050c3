//! RocketMQ's `tls.*` keys (docs/security.md#tls), read from `broker.conf`,
//! `namesrv.conf`, `-o` flags and the file named by `tls.config.file`.
//!
//! [`TlsConfig`] keeps the keys as given; [`TlsConfig::resolve`] reads
//! `tls.config.file` (keys given directly win over the file's) and turns them into
//! [`ServerTlsOptions`] and [`ClientTlsOptions`].
//!
//! Vostok differs from Java in its defaults, each towards refusing rather than
//! trusting: there is no test mode with a self-signed certificate (TLS is served only
//! with `tls.server.certPath` and `tls.server.keyPath`; the mode then defaults to
//! permissive), client certificates are always verified against
//! `tls.server.trustCertPath`, and a client verifies the server's certificate unless
//! `tls.client.authServer=false` is given explicitly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::TlsError;
use crate::support::keys::{flag, unknown_key, Key, Section, Table};

/// `tls.server.mode`: what a server port accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain remoting only; a TLS handshake is closed.
    Disabled,
    /// TLS and plain remoting on one port, told apart by the first byte.
    Permissive,
    /// TLS only; a plain connection is closed.
    Enforcing,
}

impl TlsMode {
    pub fn name(self) -> &'static str {
        match self {
            TlsMode::Disabled => "disabled",
            TlsMode::Permissive => "permissive",
            TlsMode::Enforcing => "enforcing",
        }
    }
}

impl std::str::FromStr for TlsMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disabled" => Ok(TlsMode::Disabled),
            "permissive" => Ok(TlsMode::Permissive),
            "enforcing" => Ok(TlsMode::Enforcing),
            other => Err(format!(
                "unknown mode {other:?} (disabled, permissive or enforcing)"
            )),
        }
    }
}

/// `tls.server.need.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Optional,
    Require,
}

impl std::str::FromStr for ClientAuth {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "optional" => Ok(ClientAuth::Optional),
            "require" => Ok(ClientAuth::Require),
            other => Err(format!(
                "unknown value {other:?} (none, optional or require)"
            )),
        }
    }
}

/// A server port's TLS settings, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTlsOptions {
    pub mode: TlsMode,
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
    pub key_password: Option<String>,
    pub client_auth: ClientAuth,
    /// CA certificates client certificates are verified against.
    pub trust_cert_path: Option<PathBuf>,
}

/// A client's TLS settings (the broker's outgoing connections, the SDK, the tools).
#[derive(Clone, PartialEq, Eq)]
pub struct ClientTlsOptions {
    /// CA certificates the server's certificate is verified against.
    pub trust_cert_path: Option<PathBuf>,
    /// Verify the server's certificate (chain and name). Turning it off trusts any
    /// server: an eavesdropper can then stand in the middle.
    pub verify_server: bool,
    /// Client certificate and key, for servers that require mutual TLS.
    pub cert_path: Option<PathBuf>,
    pub key_path: Option<PathBuf>,
    pub key_password: Option<String>,
}

impl Default for ClientTlsOptions {
    fn default() -> Self {
        ClientTlsOptions {
            trust_cert_path: None,
            verify_server: true,
            cert_path: None,
            key_path: None,
            key_password: None,
        }
    }
}

impl std::fmt::Debug for ClientTlsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTlsOptions")
            .field("trust_cert_path", &self.trust_cert_path)
            .field("verify_server", &self.verify_server)
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

/// Keys whose values stay out of printed configurations and logs.
pub const SECRET_KEYS: &[&str] = &["tls.server.keyPassword", "tls.client.keyPassword"];

/// The `tls.*` keys as given.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TlsConfig {
    keys: BTreeMap<String, String>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.to_properties()).finish()
    }
}

fn check_mode(v: &str) -> Result<(), String> {
    v.parse::<TlsMode>().map(drop)
}

fn check_client_auth(v: &str) -> Result<(), String> {
    v.parse::<ClientAuth>().map(drop)
}

fn check_flag(v: &str) -> Result<(), String> {
    flag(v).map(drop)
}

fn any(_: &str) -> Result<(), String> {
    Ok(())
}

/// A `tls.*` key: kept as given once `check` accepts it; empty unsets it.
macro_rules! tls_key {
    ($name:literal, $check:expr, $doc:literal) => {
        Key::new(
            $name,
            $doc,
            |c: &mut TlsConfig, v| {
                let v = v.trim();
                if v.is_empty() {
                    c.keys.remove($name);
                } else {
                    ($check)(v)?;
                    c.keys.insert($name.to_owned(), v.to_owned());
                }
                Ok(())
            },
            |c| match c.get($name) {
                Some(_) if SECRET_KEYS.contains(&$name) => "******".to_owned(),
                Some(v) => v.to_owned(),
                None => String::new(),
            },
        )
    };
}

/// Every `tls.*` key RocketMQ defines.
pub static KEYS: Table<TlsConfig> = Table {
    keys: &[
        tls_key!("tls.server.mode", check_mode, "`disabled`, `permissive` (TLS and plain on one port) or `enforcing`; empty: permissive with a certificate, else disabled"),
        tls_key!("tls.enable", check_flag, "the server's own outgoing connections use TLS"),
        tls_key!("tls.config.file", any, "a properties file with more `tls.*` keys; keys given directly win"),
        tls_key!("tls.test.mode.enable", check_flag, "accepted; Vostok has no self-signed test mode"),
        tls_key!("tls.server.need.client.auth", check_client_auth, "`none`, `optional` or `require` a client certificate"),
        tls_key!("tls.server.keyPath", any, "the server's private key (PEM)"),
        tls_key!("tls.server.keyPassword", any, "its password; printed as `******`"),
        tls_key!("tls.server.certPath", any, "the server's certificate chain (PEM)"),
        tls_key!("tls.server.authClient", check_flag, "accepted; client certificates are always verified"),
        tls_key!("tls.server.trustCertPath", any, "CA certificates client certificates are verified against"),
        tls_key!("tls.client.keyPath", any, "the client certificate's private key"),
        tls_key!("tls.client.keyPassword", any, "its password; printed as `******`"),
        tls_key!("tls.client.certPath", any, "a client certificate, for servers that require one"),
        tls_key!("tls.client.authServer", check_flag, "verify the server's certificate; `false` trusts any server"),
        tls_key!("tls.client.trustCertPath", any, "CA certificates the server's certificate is verified against"),
    ],
    nested: &[],
};

impl Section for TlsConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl TlsConfig {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.keys.get(key).map(String::as_str)
    }

    /// The keys given, secrets masked, for the start-up log.
    pub fn to_properties(&self) -> Vec<(String, String)> {
        self.key_values()
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect()
    }

    /// The keys in effect: those of `tls.config.file` (when given), overridden by
    /// those given directly. Reads the file.
    pub fn effective(&self) -> Result<TlsConfig, TlsError> {
        let Some(file) = self.get("tls.config.file") else {
            return Ok(self.clone());
        };
        let path = Path::new(file);
        let pairs = crate::support::properties::load(path).map_err(|source| TlsError::Read {
            what: "tls.config.file",
            path: path.to_path_buf(),
            source,
        })?;
        let mut merged = TlsConfig::default();
        for (k, v) in pairs {
            // The file may carry other keys (Java's carries none): only tls.* count.
            if k != "tls.config.file" && k.starts_with("tls.") {
                merged
                    .set_key(&k, &v)
                    .map_err(|reason| TlsError::key(&k, reason))
                    .and_then(|known| match known {
                        true => Ok(()),
                        false => Err(TlsError::key(&k, unknown_key(&k, KEYS.names()))),
                    })?;
            }
        }
        for (k, v) in &self.keys {
            merged.keys.insert(k.clone(), v.clone());
        }
        Ok(merged)
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        self.get(key).filter(|v| !v.is_empty()).map(PathBuf::from)
    }

    fn flag(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(|v| flag(v).ok())
    }

    /// The server side: `None` when no TLS is served (no certificate and no mode, or
    /// mode `disabled`). Call on [`TlsConfig::effective`].
    pub fn server(&self) -> Result<Option<ServerTlsOptions>, TlsError> {
        let cert = self.path("tls.server.certPath");
        let key = self.path("tls.server.keyPath");
        let mode = match self.get("tls.server.mode") {
            Some(m) => m
                .parse::<TlsMode>()
                .map_err(|r| TlsError::key("tls.server.mode", r))?,
            None if cert.is_some() || key.is_some() => TlsMode::Permissive,
            None => TlsMode::Disabled,
        };
        if mode == TlsMode::Disabled {
            return Ok(None);
        }
        let (Some(cert_path), Some(key_path)) = (cert, key) else {
            return Err(TlsError::key(
                "tls.server.mode",
                format!(
                    "mode {} needs tls.server.certPath and tls.server.keyPath (Vostok has no self-signed test mode)",
                    mode.name()
                ),
            ));
        };
        let client_auth = match self.get("tls.server.need.client.auth") {
            Some(v) => v
                .parse()
                .map_err(|r| TlsError::key("tls.server.need.client.auth", r))?,
            None => ClientAuth::None,
        };
        let trust_cert_path = self.path("tls.server.trustCertPath");
        if client_auth != ClientAuth::None && trust_cert_path.is_none() {
            return Err(TlsError::key(
                "tls.server.trustCertPath",
                "client certificates are verified against this CA file: it must be given",
            ));
        }
        Ok(Some(ServerTlsOptions {
            mode,
            cert_path,
            key_path,
            key_password: self.get("tls.server.keyPassword").map(str::to_owned),
            client_auth,
            trust_cert_path,
        }))
    }

    /// The client side: `None` unless `tls.enable=true`. Call on
    /// [`TlsConfig::effective`].
    pub fn client(&self) -> Result<Option<ClientTlsOptions>, TlsError> {
        if self.flag("tls.enable") != Some(true) {
            return Ok(None);
        }
        let options = ClientTlsOptions {
            trust_cert_path: self.path("tls.client.trustCertPath"),
            verify_server: self.flag("tls.client.authServer") != Some(false),
            cert_path: self.path("tls.client.certPath"),
            key_path: self.path("tls.client.keyPath"),
            key_password: self.get("tls.client.keyPassword").map(str::to_owned),
        };
        options.check()?;
        Ok(Some(options))
    }
}

impl ClientTlsOptions {
    /// Rejects combinations that cannot work.
    pub fn check(&self) -> Result<(), TlsError> {
        if self.verify_server && self.trust_cert_path.is_none() {
            return Err(TlsError::key(
                "tls.client.trustCertPath",
                "the server's certificate is verified against this CA file: give it, or set tls.client.authServer=false to trust any server",
            ));
        }
        if self.cert_path.is_some() != self.key_path.is_some() {
            return Err(TlsError::key(
                "tls.client.certPath",
                "a client certificate needs both tls.client.certPath and tls.client.keyPath",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> TlsConfig {
        let mut c = TlsConfig::default();
        for (k, v) in pairs {
            assert!(c.set_key(k, v).unwrap(), "{k}");
        }
        c
    }

    #[test]
    fn modes_default_from_the_certificate() {
        assert_eq!(config(&[]).server().unwrap(), None);
        let c = config(&[
            ("tls.server.certPath", "/c.pem"),
            ("tls.server.keyPath", "/k.pem"),
        ]);
        assert_eq!(c.server().unwrap().unwrap().mode, TlsMode::Permissive);
        let c = config(&[("tls.server.mode", "enforcing")]);
        assert!(c.server().is_err(), "enforcing without a certificate");
        let c = config(&[
            ("tls.server.mode", "disabled"),
            ("tls.server.certPath", "/c.pem"),
        ]);
        assert_eq!(c.server().unwrap(), None);
    }

    #[test]
    fn bad_keys_and_values_are_errors() {
        let mut c = TlsConfig::default();
        assert!(!c.set_key("listenPort", "1").unwrap());
        let e = KEYS
            .apply_known(&mut c, "tls.server.moed", "enforcing")
            .unwrap_err();
        assert!(e.contains("did you mean 'tls.server.mode'"), "{e}");
        assert!(c.set_key("tls.server.mode", "strict").is_err());
        assert!(c.set_key("tls.enable", "yes").is_err());
    }

    #[test]
    fn mutual_tls_needs_a_ca_and_clients_verify_by_default() {
        let c = config(&[
            ("tls.server.certPath", "/c.pem"),
            ("tls.server.keyPath", "/k.pem"),
            ("tls.server.need.client.auth", "require"),
        ]);
        assert!(c.server().is_err());
        assert_eq!(config(&[]).client().unwrap(), None);
        assert!(config(&[("tls.enable", "true")]).client().is_err());
        let insecure = config(&[("tls.enable", "true"), ("tls.client.authServer", "false")]);
        assert!(!insecure.client().unwrap().unwrap().verify_server);
    }

    #[test]
    fn the_file_fills_in_keys_not_given_directly_and_passwords_stay_masked() {
        let dir = tempfile_dir();
        let file = dir.join("tls.properties");
        std::fs::write(
            &file,
            "tls.server.certPath=/from-file.pem\ntls.server.keyPath=/k.pem\ntls.server.keyPassword=hunter22\n",
        )
        .unwrap();
        let c = config(&[
            ("tls.config.file", file.to_str().unwrap()),
            ("tls.server.certPath", "/direct.pem"),
        ]);
        let effective = c.effective().unwrap();
        let server = effective.server().unwrap().unwrap();
        assert_eq!(server.cert_path, PathBuf::from("/direct.pem"));
        assert_eq!(server.key_password.as_deref(), Some("hunter22"));
        assert!(!format!("{effective:?}").contains("hunter22"));
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "vostok-tls-config-{}-{}",
            std::process::id(),
            crate::command::next_opaque()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
