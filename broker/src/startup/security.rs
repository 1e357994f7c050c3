//! Start-up of the security pieces (docs/security.md): the ACL guard, the TLS of the
//! listeners, and the client the broker uses towards the name servers (signed with
//! `accessKey`/`secretKey`, in TLS with `tls.enable`).
//!
//! In standalone mode with ACL on and no `accessKey`, the broker makes up credentials
//! for itself and hands them to its embedded name server as the one account allowed
//! to register its broker name, so a standalone broker needs no extra account.

use std::sync::Arc;

use vostok_auth::Guard;
use vostok_remoting::auth::{AclClientHook, SessionCredentials};
use vostok_remoting::tls::{ClientTls, ServerTls, TlsMode};
use vostok_remoting::{ClientConfig, RemotingClient};

use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// What start-up builds from the security keys.
pub(crate) struct Security {
    pub guard: Option<Guard>,
    pub server_tls: Option<Arc<ServerTls>>,
    /// The same certificate for the gRPC port (ALPN `h2`), with the remoting port's
    /// mode; `None` when `tls.server.*` is not configured.
    pub grpc_tls: Option<(TlsMode, Arc<tokio_rustls::rustls::ServerConfig>)>,
    pub client_tls: Option<Arc<ClientTls>>,
    /// What the broker signs its own requests with.
    pub credentials: Option<SessionCredentials>,
}

/// Reads the ACL files and certificates (blocking: run on the blocking pool).
pub(crate) fn open(config: &mut BrokerConfig) -> Result<Security, BrokerError> {
    let security = &config.security;
    let tls = security
        .tls
        .effective()
        .map_err(|e| BrokerError::config("tls.config.file", e))?;
    let server_options = tls
        .server()
        .map_err(|e| BrokerError::config("tls.server.mode", e))?;
    let client_options = tls
        .client()
        .map_err(|e| BrokerError::config("tls.enable", e))?;
    let server_tls = server_options
        .as_ref()
        .map(|o| ServerTls::new(o).map(Arc::new))
        .transpose()
        .map_err(|e| BrokerError::config("tls.server.certPath", e))?;
    if config.is_standalone()
        && server_options
            .as_ref()
            .is_some_and(|o| o.mode == TlsMode::Enforcing)
        && client_options.is_none()
    {
        return Err(BrokerError::config(
            "tls.enable",
            "a standalone broker with tls.server.mode=enforcing registers with its embedded name server over TLS: set tls.enable=true and tls.client.trustCertPath",
        ));
    }
    let grpc_tls = server_options
        .as_ref()
        .map(|o| vostok_remoting::tls::server_config(o, &[b"h2"]).map(|config| (o.mode, config)))
        .transpose()
        .map_err(|e| BrokerError::config("tls.server.certPath", e))?;
    let client_tls = client_options
        .as_ref()
        .map(ClientTls::new)
        .transpose()
        .map_err(|e| BrokerError::config("tls.client.trustCertPath", e))?;
    let guard = Guard::open(&security.guard_config(config.config_dir())?)
        .map_err(|e| BrokerError::config("aclEnable", e))?;
    let mut credentials = security.credentials();
    if credentials.is_none() && security.is_on() && config.is_standalone() {
        credentials = Some(SessionCredentials::new(
            format!("vostok-broker-{:016x}", rand::random::<u64>()),
            format!("{:032x}", rand::random::<u128>()),
        ));
    }
    Ok(Security {
        guard,
        server_tls,
        grpc_tls,
        client_tls,
        credentials,
    })
}

/// The client towards the name servers.
pub(crate) fn outer_client(
    security: &Security,
    runtime: &tokio::runtime::Handle,
) -> RemotingClient {
    let client = RemotingClient::new(
        ClientConfig {
            tls: security.client_tls.clone(),
            runtime: Some(runtime.clone()),
            ..ClientConfig::default()
        },
        None,
    );
    if let Some(credentials) = &security.credentials {
        client.register_rpc_hook(Arc::new(AclClientHook::new(credentials.clone())));
    }
    client
}
