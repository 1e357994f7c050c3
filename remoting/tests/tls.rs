//! TLS on the remoting server and client over real sockets: the three server modes,
//! mutual TLS, server verification, with certificates made here (rcgen).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, SanType,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use vostok_remoting::tls::{
    ClientAuth, ClientTls, ClientTlsOptions, ServerTls, ServerTlsOptions, TlsMode,
};
use vostok_remoting::{
    BoxFuture, Channel, ClientConfig, RemotingClient, RemotingCommand, RemotingServer,
    RequestProcessor, ServerConfig,
};

const ECHO: i32 = 1000;
const T: Duration = Duration::from_secs(10);

struct Echo;

impl RequestProcessor for Echo {
    fn process<'a>(
        &'a self,
        _: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move { Some(RemotingCommand::success().with_body(request.body.clone())) })
    }
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "Vostok test CA");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        write("ca.pem", ca_cert.pem());
        for (name, usage) in [
            ("server", ExtendedKeyUsagePurpose::ServerAuth),
            ("client", ExtendedKeyUsagePurpose::ClientAuth),
        ] {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
            params
                .subject_alt_names
                .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
            write(&format!("{name}.pem"), cert.pem());
            write(&format!("{name}.key"), key.serialize_pem());
        }
        // A second CA that signed nothing here: a client trusting it must refuse the server.
        let other_key = KeyPair::generate().unwrap();
        let mut other = CertificateParams::new(Vec::<String>::new()).unwrap();
        other.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        write("other-ca.pem", other.self_signed(&other_key).unwrap().pem());
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn server(&self, mode: TlsMode, client_auth: ClientAuth) -> Arc<ServerTls> {
        Arc::new(
            ServerTls::new(&ServerTlsOptions {
                mode,
                cert_path: self.path("server.pem"),
                key_path: self.path("server.key"),
                key_password: None,
                client_auth,
                trust_cert_path: Some(self.path("ca.pem")),
            })
            .unwrap(),
        )
    }

    fn client(&self, ca: &str, with_cert: bool) -> Arc<ClientTls> {
        ClientTls::new(&ClientTlsOptions {
            trust_cert_path: Some(self.path(ca)),
            verify_server: true,
            cert_path: with_cert.then(|| self.path("client.pem")),
            key_path: with_cert.then(|| self.path("client.key")),
            key_password: None,
        })
        .unwrap()
    }
}

async fn serve(tls: Option<Arc<ServerTls>>) -> RemotingServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    RemotingServer::start(
        listener,
        Arc::new(Echo),
        ServerConfig {
            tls,
            ..ServerConfig::default()
        },
        Vec::new(),
    )
}

fn client(tls: Option<Arc<ClientTls>>) -> RemotingClient {
    RemotingClient::new(
        ClientConfig {
            tls,
            connect_timeout: T,
            ..ClientConfig::default()
        },
        None,
    )
}

async fn echo(
    client: &RemotingClient,
    addr: &str,
) -> Result<Bytes, vostok_remoting::RemotingError> {
    let request = RemotingCommand::request(ECHO).with_body(Bytes::from_static(b"ping"));
    client.invoke_sync(addr, request, T).await.map(|r| r.body)
}

/// Whether the server closes a raw connection that sends `first` (without answering).
async fn closes_after(addr: &str, first: &[u8]) -> bool {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(first).await.unwrap();
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(T, tcp.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn enforcing_serves_tls_and_closes_plain_connections() {
    let pki = Pki::new();
    let server = serve(Some(pki.server(TlsMode::Enforcing, ClientAuth::None))).await;
    let addr = server.local_addr().to_string();
    let tls = client(Some(pki.client("ca.pem", false)));
    assert_eq!(
        echo(&tls, &addr).await.unwrap(),
        Bytes::from_static(b"ping")
    );
    let plain = client(None);
    assert!(
        echo(&plain, &addr).await.is_err(),
        "a plain client must be refused"
    );
    // A plain frame's first byte is its length's high byte: 0x00.
    assert!(closes_after(&addr, &[0, 0, 0, 10]).await);
}

#[tokio::test]
async fn permissive_serves_tls_and_plain_on_one_port() {
    let pki = Pki::new();
    let server = serve(Some(pki.server(TlsMode::Permissive, ClientAuth::None))).await;
    let addr = server.local_addr().to_string();
    let tls = client(Some(pki.client("ca.pem", false)));
    let plain = client(None);
    for _ in 0..3 {
        assert_eq!(
            echo(&tls, &addr).await.unwrap(),
            Bytes::from_static(b"ping")
        );
        assert_eq!(
            echo(&plain, &addr).await.unwrap(),
            Bytes::from_static(b"ping")
        );
    }
    assert_eq!(server.channels().len(), 2);
}

#[tokio::test]
async fn disabled_closes_a_tls_handshake() {
    let pki = Pki::new();
    let server = serve(Some(pki.server(TlsMode::Disabled, ClientAuth::None))).await;
    let addr = server.local_addr().to_string();
    assert!(echo(&client(Some(pki.client("ca.pem", false))), &addr)
        .await
        .is_err());
    assert!(echo(&client(None), &addr).await.is_ok());
    assert!(closes_after(&addr, &[0x16, 3, 1, 0, 5]).await);
}

#[tokio::test]
async fn mutual_tls_refuses_a_client_without_a_certificate() {
    let pki = Pki::new();
    let server = serve(Some(pki.server(TlsMode::Enforcing, ClientAuth::Require))).await;
    let addr = server.local_addr().to_string();
    let with_cert = client(Some(pki.client("ca.pem", true)));
    assert_eq!(
        echo(&with_cert, &addr).await.unwrap(),
        Bytes::from_static(b"ping")
    );
    // TLS 1.3: the server checks the client certificate after the client's side of the
    // handshake is done, so the refusal shows on the first call, not on connect.
    let without = client(Some(pki.client("ca.pem", false)));
    assert!(echo(&without, &addr).await.is_err());
}

#[tokio::test]
async fn a_client_refuses_a_server_its_ca_did_not_sign() {
    let pki = Pki::new();
    let server = serve(Some(pki.server(TlsMode::Enforcing, ClientAuth::None))).await;
    let addr = server.local_addr().to_string();
    let wrong_ca = client(Some(pki.client("other-ca.pem", false)));
    assert!(echo(&wrong_ca, &addr).await.is_err());
    let insecure = client(Some(
        ClientTls::new(&ClientTlsOptions {
            verify_server: false,
            ..ClientTlsOptions::default()
        })
        .unwrap(),
    ));
    assert!(
        echo(&insecure, &addr).await.is_ok(),
        "authServer=false trusts any server"
    );
}

#[test]
fn missing_files_name_the_file() {
    let err = ServerTls::new(&ServerTlsOptions {
        mode: TlsMode::Enforcing,
        cert_path: Path::new("/nonexistent/cert.pem").to_path_buf(),
        key_path: Path::new("/nonexistent/key.pem").to_path_buf(),
        key_password: None,
        client_auth: ClientAuth::None,
        trust_cert_path: None,
    })
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/cert.pem"), "{err}");
}
