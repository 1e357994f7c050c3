//! TLS on the gRPC port (docs/grpc.md#tls): the Java and Go 5.x clients connect with TLS
//! by default and accept any certificate; Python and Node.js connect in plaintext. So
//! both are served on one port: a connection whose first byte is a TLS handshake record
//! (0x16) is TLS, anything else is HTTP/2 in the clear (Apache's proxy decides the same
//! way, `tls.server.mode=permissive`).
//!
//! The certificate is self-signed, made at start for `localhost`, `127.0.0.1` and the
//! broker's address (`rcgen`), as Apache's proxy does in its default
//! `tlsTestModeEnable`. ALPN offers `h2`, which gRPC clients require.

use std::sync::Arc;

use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::error::BrokerError;

/// The first byte of a TLS handshake record.
pub(crate) const TLS_HANDSHAKE: u8 = 0x16;

fn tls_error(reason: impl ToString) -> BrokerError {
    BrokerError::Config {
        key: "grpcServerPort".into(),
        reason: format!("cannot set up TLS: {}", reason.to_string()),
    }
}

/// An acceptor with a fresh self-signed certificate naming `hosts`.
pub(crate) fn self_signed_acceptor(hosts: &[String]) -> Result<TlsAcceptor, BrokerError> {
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    names.extend(hosts.iter().filter(|h| !h.is_empty()).cloned());
    names.sort();
    names.dedup();
    let certified = rcgen::generate_simple_self_signed(names).map_err(tls_error)?;
    let cert: CertificateDer<'static> = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(tls_error)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_acceptor_is_made() {
        assert!(self_signed_acceptor(&["10.0.0.1".into()]).is_ok());
    }
}
