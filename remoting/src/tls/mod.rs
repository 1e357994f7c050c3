//! TLS on remoting connections (docs/security.md#tls), with rustls.
//!
//! * [`config`]: RocketMQ's `tls.*` keys and the options they resolve to.
//! * [`pem`]: certificates and keys (encrypted PKCS#8 included) from PEM files.
//! * [`ServerTls`]: what a listening port does with a new connection per
//!   `tls.server.mode` — peeks the first byte (0x16 opens a TLS handshake) and either
//!   completes the handshake, keeps the connection plain, or closes it.
//!   [`ServerTls::admit`] says why it refused one, for callers that log it.
//! * [`ClientTls`]: wraps an outgoing connection in TLS.
//! * [`Stream`]: a connection either way, for [`crate::channel::Channel`].
//!
//! Any listener can use the two halves: accept a `TcpStream`, hand it to
//! [`ServerTls::accept`], and read and write the [`Stream`] it returns; connect a
//! `TcpStream` and hand it to [`ClientTls::connect`]. The remoting server and client
//! do exactly that.

pub mod config;
pub mod pem;
mod stream;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tracing::debug;

pub use config::{ClientAuth, ClientTlsOptions, ServerTlsOptions, TlsConfig, TlsMode};
pub use stream::Stream;

/// First byte of a TLS record carrying a handshake (a ClientHello opens with it).
pub const TLS_HANDSHAKE_BYTE: u8 = 0x16;

/// How long a new connection may take to send its first byte and finish the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{key}: {reason}")]
    Key { key: String, reason: String },
    #[error("cannot read the {what} file {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("TLS setup: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("client certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

impl TlsError {
    pub(crate) fn key(key: &str, reason: impl Into<String>) -> Self {
        TlsError::Key {
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}

/// The rustls server side of `options` (certificate, key, client verification),
/// offering `alpn` (e.g. `h2` for gRPC). Blocking file reads: call at start-up.
pub fn server_config(
    options: &ServerTlsOptions,
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs = pem::load_certs(&options.cert_path)?;
    let key = pem::load_key(&options.key_path, options.key_password.as_deref())?;
    let provider = provider();
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match (options.client_auth, &options.trust_cert_path) {
        (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
        (auth, Some(ca)) => {
            let roots = Arc::new(pem::load_roots(ca)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = if auth == ClientAuth::Optional {
                verifier.allow_unauthenticated().build()?
            } else {
                verifier.build()?
            };
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key)?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server side of one port: its mode and, unless disabled, its TLS acceptor.
pub struct ServerTls {
    mode: TlsMode,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mode", &self.mode)
            .finish()
    }
}

impl ServerTls {
    /// Loads the certificate, key and client CA (blocking file reads: call at start-up).
    pub fn new(options: &ServerTlsOptions) -> Result<ServerTls, TlsError> {
        Ok(ServerTls {
            mode: options.mode,
            acceptor: tokio_rustls::TlsAcceptor::from(server_config(options, &[])?),
        })
    }

    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// Decides what a new connection is: `None` when it must be closed (a plain
    /// connection in enforcing mode, TLS when disabled, a peer that went away or sent
    /// nothing in time, a failed handshake — each logged at debug: on a public port
    /// these are scanners as often as misconfigured clients).
    pub async fn accept(&self, tcp: TcpStream) -> Option<Stream> {
        let peer = tcp.peer_addr().ok();
        match self.admit(tcp).await {
            Ok(stream) => Some(stream),
            Err(refused) => {
                debug!(?peer, reason = %refused, "connection closed");
                None
            }
        }
    }

    /// Like [`ServerTls::accept`], but says why a connection is refused, for ports
    /// where the caller logs refusals itself (the HA port: a refused peer there is a
    /// misconfigured slave, worth a warning).
    pub async fn admit(&self, tcp: TcpStream) -> Result<Stream, Refused> {
        let mut first = [0u8; 1];
        let peeked = tokio::time::timeout(HANDSHAKE_TIMEOUT, tcp.peek(&mut first)).await;
        match peeked {
            Ok(Ok(1)) => {}
            Ok(Ok(_)) => return Err(Refused::Gone(None)),
            Ok(Err(e)) => return Err(Refused::Gone(Some(e))),
            Err(_) => return Err(Refused::Silent),
        }
        let tls = first[0] == TLS_HANDSHAKE_BYTE;
        match (self.mode, tls) {
            (TlsMode::Disabled, false) | (TlsMode::Permissive, false) => Ok(Stream::Plain(tcp)),
            (TlsMode::Enforcing, false) => Err(Refused::Plain),
            (TlsMode::Disabled, true) => Err(Refused::Tls),
            (_, true) => {
                let handshake =
                    tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(tcp)).await;
                match handshake {
                    Ok(Ok(stream)) => Ok(Stream::Server(Box::new(stream))),
                    Ok(Err(e)) => Err(Refused::Handshake(e)),
                    Err(_) => Err(Refused::HandshakeTimeout),
                }
            }
        }
    }
}

/// Why [`ServerTls::admit`] closed a connection.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("plain connection refused: tls.server.mode=enforcing accepts only TLS")]
    Plain,
    #[error("TLS connection refused: tls.server.mode=disabled")]
    Tls,
    #[error("the peer closed the connection before its first byte{}", .0.as_ref().map(|e| format!(" ({e})")).unwrap_or_default())]
    Gone(Option<std::io::Error>),
    #[error("no first byte within {HANDSHAKE_TIMEOUT:?}")]
    Silent,
    #[error("TLS handshake failed: {0}")]
    Handshake(#[source] std::io::Error),
    #[error("TLS handshake not finished within {HANDSHAKE_TIMEOUT:?}")]
    HandshakeTimeout,
}

/// The client side: wraps outgoing connections in TLS.
pub struct ClientTls {
    connector: tokio_rustls::TlsConnector,
    verify_server: bool,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("verify_server", &self.verify_server)
            .finish()
    }
}

impl ClientTls {
    /// Loads the CA and client certificate (blocking file reads: call at start-up).
    pub fn new(options: &ClientTlsOptions) -> Result<Arc<ClientTls>, TlsError> {
        options.check()?;
        let provider = provider();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let builder = match (&options.trust_cert_path, options.verify_server) {
            (Some(ca), true) => builder.with_root_certificates(pem::load_roots(ca)?),
            _ => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(TrustAny(provider))),
        };
        let config = match (&options.cert_path, &options.key_path) {
            (Some(cert), Some(key)) => builder.with_client_auth_cert(
                pem::load_certs(cert)?,
                pem::load_key(key, options.key_password.as_deref())?,
            )?,
            _ => builder.with_no_client_auth(),
        };
        Ok(Arc::new(ClientTls {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            verify_server: options.verify_server,
        }))
    }

    /// Runs the handshake over `tcp`, connected to `addr` (`host:port`): the host is
    /// the name the server's certificate must carry (an IP address or a DNS name).
    pub async fn connect(&self, addr: &str, tcp: TcpStream) -> std::io::Result<Stream> {
        let host = addr
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or(addr)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = match host.parse::<IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(host.to_owned()).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("bad server name {host:?}: {e}"),
                )
            })?,
        };
        let stream = self.connector.connect(name, tcp).await?;
        Ok(Stream::Client(Box::new(stream)))
    }
}

/// Accepts any server certificate (`tls.client.authServer=false`); signatures are
/// still checked, so the handshake itself is sound, but anyone may be the server.
#[derive(Debug)]
struct TrustAny(Arc<CryptoProvider>);

impl ServerCertVerifier for TrustAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
