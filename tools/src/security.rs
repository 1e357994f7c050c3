//! What `mqadmin` and `mqbench` share to reach a secured cluster: ACL credentials
//! (`--access-key`/`--secret-key`, signed as Java's `AclClientRPCHook` signs) and TLS
//! (`--tls`, verified against `--tls-trust-cert` unless `--tls-insecure`; a client
//! certificate for mutual TLS with `--tls-cert`/`--tls-key`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use vostok_client::{ClientConfig, ClientTls, ClientTlsOptions, SessionCredentials};
use vostok_remoting::auth::AclClientHook;
use vostok_remoting::RemotingClient;

#[derive(Args, Debug, Clone, Default)]
pub struct SecurityArgs {
    /// ACL access key (user name for ACL 2.0); every request is signed with it.
    #[arg(
        long = "access-key",
        value_name = "KEY",
        env = "ROCKETMQ_ACCESS_KEY",
        global = true
    )]
    pub access_key: Option<String>,
    /// ACL secret key (password for ACL 2.0).
    #[arg(
        long = "secret-key",
        value_name = "SECRET",
        env = "ROCKETMQ_SECRET_KEY",
        hide_env_values = true,
        global = true
    )]
    pub secret_key: Option<String>,
    /// Connect with TLS.
    #[arg(long, global = true)]
    pub tls: bool,
    /// CA certificates (PEM) the server's certificate is verified against.
    #[arg(long = "tls-trust-cert", value_name = "PEM", global = true)]
    pub tls_trust_cert: Option<PathBuf>,
    /// Trust any server certificate (tls.client.authServer=false): for tests only.
    #[arg(long = "tls-insecure", global = true)]
    pub tls_insecure: bool,
    /// Client certificate (PEM), for servers requiring mutual TLS.
    #[arg(long = "tls-cert", value_name = "PEM", global = true)]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long = "tls-key", value_name = "PEM", global = true)]
    pub tls_key: Option<PathBuf>,
}

impl SecurityArgs {
    pub fn credentials(&self) -> Result<Option<SessionCredentials>, String> {
        match (&self.access_key, &self.secret_key) {
            (Some(ak), Some(sk)) => Ok(Some(SessionCredentials::new(ak, sk))),
            (None, None) => Ok(None),
            _ => Err("--access-key and --secret-key go together".into()),
        }
    }

    /// The TLS connector, when `--tls` is given (reads the PEM files).
    pub fn client_tls(&self) -> Result<Option<Arc<ClientTls>>, String> {
        if !self.tls {
            return Ok(None);
        }
        let options = ClientTlsOptions {
            trust_cert_path: self.tls_trust_cert.clone(),
            verify_server: !self.tls_insecure,
            cert_path: self.tls_cert.clone(),
            key_path: self.tls_key.clone(),
            key_password: None,
        };
        ClientTls::new(&options).map(Some).map_err(|e| {
            format!("{e} (give --tls-trust-cert, or --tls-insecure to trust any server)")
        })
    }

    /// Sets credentials and TLS on an SDK config.
    pub fn apply(&self, config: &mut ClientConfig) -> Result<(), String> {
        config.credentials = self.credentials()?;
        config.remoting.tls = self.client_tls()?;
        Ok(())
    }

    /// A raw remoting client with the same credentials and TLS.
    pub fn remoting_client(&self) -> Result<RemotingClient, String> {
        let client = RemotingClient::new(
            vostok_remoting::ClientConfig {
                tls: self.client_tls()?,
                ..vostok_remoting::ClientConfig::default()
            },
            None,
        );
        if let Some(credentials) = self.credentials()? {
            client.register_rpc_hook(Arc::new(AclClientHook::new(credentials)));
        }
        Ok(client)
    }
}
