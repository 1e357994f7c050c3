//! Test certificates made at run time (no key is committed): a CA and a server
//! certificate for `localhost` and 127.0.0.1 signed by it, as PEM files.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};

/// Writes `ca.pem`, `server.pem` and `server.key` into `dir`; returns their paths in
/// that order.
pub fn write_server_pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let key = KeyPair::generate().expect("server key");
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().expect("an address")));
    let cert = params
        .signed_by(&key, &ca_cert, &ca_key)
        .expect("server certificate");
    let paths = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&paths.0, ca_cert.pem()).expect("write ca.pem");
    std::fs::write(&paths.1, cert.pem()).expect("write server.pem");
    std::fs::write(&paths.2, key.serialize_pem()).expect("write server.key");
    paths
}
