//! Certificates and private keys from PEM files, as RocketMQ's `tls.*.certPath`,
//! `tls.*.keyPath` and `tls.*.keyPassword` name them.
//!
//! Keys may be PKCS#8, PKCS#1 (RSA) or SEC1 (EC); a key encrypted with a password
//! (`-----BEGIN ENCRYPTED PRIVATE KEY-----`, PKCS#8 with PBES2, what `openssl pkcs8
//! -topk8 -v2 aes-256-cbc` writes) is decrypted with `keyPassword`.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::TlsError;

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        what,
        path: path.to_path_buf(),
        source,
    })
}

fn invalid(path: &Path, reason: impl Into<String>) -> TlsError {
    TlsError::Invalid {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Every certificate of a PEM file (a chain: leaf first).
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path, "certificate")?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(path, format!("bad PEM: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(path, "no CERTIFICATE section"));
    }
    Ok(certs)
}

/// The private key of a PEM file, decrypted with `password` when it is encrypted.
pub fn load_key(path: &Path, password: Option<&str>) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path, "private key")?;
    let text = String::from_utf8_lossy(&pem);
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let Some(password) = password.filter(|p| !p.is_empty()) else {
            return Err(invalid(path, "the key is encrypted: set keyPassword"));
        };
        return decrypt(path, &text, password);
    }
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| invalid(path, format!("no usable private key: {e}")))
}

fn decrypt(path: &Path, text: &str, password: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    use pkcs8::der::Decode;
    let start = text
        .find("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        .unwrap_or_default();
    let end_marker = "-----END ENCRYPTED PRIVATE KEY-----";
    let end = text[start..]
        .find(end_marker)
        .map(|i| start + i + end_marker.len())
        .ok_or_else(|| invalid(path, "unterminated ENCRYPTED PRIVATE KEY section"))?;
    let (_, der) = pkcs8::der::pem::decode_vec(&text.as_bytes()[start..end])
        .map_err(|e| invalid(path, format!("bad PEM: {e}")))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::from_der(&der)
        .map_err(|e| invalid(path, format!("bad encrypted key: {e}")))?;
    let plain = info.decrypt(password).map_err(|_| {
        invalid(
            path,
            "cannot decrypt the key (wrong keyPassword or unsupported cipher)",
        )
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        plain.as_bytes().to_vec(),
    )))
}

/// The trust anchors of a PEM file of CA certificates.
pub fn load_roots(path: &Path) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in load_certs(path)? {
        roots
            .add(cert)
            .map_err(|e| invalid(path, format!("unusable CA certificate: {e}")))?;
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pkcs8::der::pem::LineEnding;
    use pkcs8::pkcs5::pbes2;
    use pkcs8::PrivateKeyInfo;

    /// A key encrypted as `openssl pkcs8 -topk8 -v2 aes-256-cbc` encrypts it.
    #[test]
    fn an_encrypted_key_needs_its_password() {
        let key = rcgen::KeyPair::generate().unwrap();
        let der = key.serialize_der();
        let info = PrivateKeyInfo::try_from(der.as_slice()).unwrap();
        let params = pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, &[7; 16], &[9; 16]).unwrap();
        let encrypted = info.encrypt_with_params(params, "hunter22").unwrap();
        let pem = encrypted
            .to_pem("ENCRYPTED PRIVATE KEY", LineEnding::LF)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        std::fs::write(&path, pem.as_bytes()).unwrap();
        let loaded = load_key(&path, Some("hunter22")).unwrap();
        assert_eq!(loaded.secret_der(), der.as_slice());
        assert!(load_key(&path, Some("wrong")).is_err());
        let e = load_key(&path, None).unwrap_err();
        assert!(e.to_string().contains("keyPassword"), "{e}");
        // The plain key loads without a password.
        std::fs::write(&path, key.serialize_pem()).unwrap();
        assert!(load_key(&path, None).is_ok());
    }
}
