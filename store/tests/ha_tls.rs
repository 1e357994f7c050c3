//! TLS on the HA port over real sockets (docs/replication.md#tls): an enforcing master
//! replicates to a TLS slave and refuses a plain one, with a warning naming the
//! reason; a permissive master serves both; a plain master refuses a TLS slave.
//! Certificates are made here (rcgen).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{message, pull_all, settle, small_config};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vostok_remoting::tls::{
    ClientAuth, ClientTls, ClientTlsOptions, ServerTls, ServerTlsOptions, TlsMode,
};
use vostok_store::ha::{self, HaClient};
use vostok_store::{MessageStore, PutMessageStatus};

const FILE: usize = 64 * 1024;
const WAIT: Duration = Duration::from_secs(20);

/// A CA and a server certificate for 127.0.0.1, as PEM files.
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
            .push(DnType::CommonName, "Vostok HA test CA");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
        let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.path().join("server.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("server.key"), key.serialize_pem()).unwrap();
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn server(&self, mode: TlsMode) -> Arc<ServerTls> {
        Arc::new(
            ServerTls::new(&ServerTlsOptions {
                mode,
                cert_path: self.path("server.pem"),
                key_path: self.path("server.key"),
                key_password: None,
                client_auth: ClientAuth::None,
                trust_cert_path: None,
            })
            .unwrap(),
        )
    }

    /// A client that verifies the master's certificate against the test CA.
    fn client(&self) -> Arc<ClientTls> {
        ClientTls::new(&ClientTlsOptions {
            trust_cert_path: Some(self.path("ca.pem")),
            ..ClientTlsOptions::default()
        })
        .unwrap()
    }
}

/// What the code under test logged, for the refusal warnings.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

impl Logs {
    /// Captures this thread's logs while the guard lives: the tests run on a
    /// current-thread runtime, so the master's tasks log here.
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        (logs.clone(), tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

struct Master {
    store: Arc<MessageStore>,
    addr: String,
    shutdown: CancellationToken,
}

impl Drop for Master {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn master(root: &Path, sync: bool, tls: Option<Arc<ServerTls>>) -> Master {
    let mut config = small_config(root, FILE);
    config.ha.sync_master = sync;
    config.sync_flush_timeout = Duration::from_secs(10);
    let store = MessageStore::open(config).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    tokio::spawn(ha::serve(
        store.clone(),
        listener,
        tls,
        TaskTracker::new(),
        shutdown.clone(),
    ));
    Master {
        store,
        addr,
        shutdown,
    }
}

struct Slave {
    store: Arc<MessageStore>,
    shutdown: CancellationToken,
}

impl Drop for Slave {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn slave(root: &Path, master: &str, tls: Option<Arc<ClientTls>>) -> Slave {
    let mut config = small_config(root, FILE);
    config.ha.master_address = Some(master.to_owned());
    let store = MessageStore::open(config).unwrap();
    let shutdown = CancellationToken::new();
    HaClient::start(store.clone(), tls, &TaskTracker::new(), shutdown.clone());
    Slave { store, shutdown }
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn put(store: &MessageStore, n: usize, expect: PutMessageStatus) {
    for i in 0..n {
        let r = store
            .put_message(message(
                "T",
                (i % 4) as i32,
                vec![b'x'; 100 + i % 900],
                String::new(),
            ))
            .await;
        assert_eq!(r.status, expect);
    }
}

#[tokio::test]
async fn an_enforcing_master_replicates_to_a_tls_slave() {
    let pki = Pki::new();
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(mdir.path(), true, Some(pki.server(TlsMode::Enforcing))).await;
    let s = slave(sdir.path(), &m.addr, Some(pki.client()));
    wait_for("the TLS slave to connect", || {
        m.store.ha_slaves().len() == 1
    })
    .await;
    // SYNC_MASTER: each PUT_OK is the slave's acknowledgement, over TLS.
    put(&m.store, 600, PutMessageStatus::PutOk).await;
    assert!(m.store.max_phy_offset() > 2 * FILE as i64, "several files");
    wait_for("the slave to catch up", || {
        s.store.max_phy_offset() == m.store.max_phy_offset()
    })
    .await;
    settle(&m.store);
    settle(&s.store);
    for q in 0..4 {
        assert_eq!(pull_all(&s.store, "T", q), pull_all(&m.store, "T", q));
    }
}

#[tokio::test]
async fn an_enforcing_master_refuses_a_plain_slave_and_says_why() {
    let (logs, _guard) = Logs::capture();
    let pki = Pki::new();
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(mdir.path(), false, Some(pki.server(TlsMode::Enforcing))).await;
    put(&m.store, 20, PutMessageStatus::PutOk).await;
    let s = slave(sdir.path(), &m.addr, None);
    wait_for("the master's warning", || {
        logs.text().contains("HA connection refused")
    })
    .await;
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("HA connection refused"))
        .unwrap();
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains("tls.server.mode=enforcing accepts only TLS"),
        "{line}"
    );
    wait_for("the slave to see the refusal", || {
        s.store.ha_master_link().last_error.is_some()
    })
    .await;
    let error = s.store.ha_master_link().last_error.unwrap();
    assert!(error.contains("tls.enable=true"), "{error}");
    put(&m.store, 20, PutMessageStatus::PutOk).await;
    assert_eq!(s.store.max_phy_offset(), 0, "no data reached the slave");
    assert!(m.store.ha_slaves().is_empty(), "never counted as a slave");
}

#[tokio::test]
async fn a_permissive_master_serves_a_plain_and_a_tls_slave() {
    let pki = Pki::new();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let m = master(dirs[0].path(), false, Some(pki.server(TlsMode::Permissive))).await;
    let plain = slave(dirs[1].path(), &m.addr, None);
    let tls = slave(dirs[2].path(), &m.addr, Some(pki.client()));
    put(&m.store, 200, PutMessageStatus::PutOk).await;
    let max = m.store.max_phy_offset();
    wait_for("both slaves to catch up", || {
        plain.store.max_phy_offset() == max && tls.store.max_phy_offset() == max
    })
    .await;
    assert_eq!(m.store.ha_slaves().len(), 2);
}

#[tokio::test]
async fn a_plain_master_refuses_a_tls_slave_and_says_why() {
    let (logs, _guard) = Logs::capture();
    let pki = Pki::new();
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(mdir.path(), false, None).await;
    put(&m.store, 20, PutMessageStatus::PutOk).await;
    let s = slave(sdir.path(), &m.addr, Some(pki.client()));
    wait_for("the master's error", || {
        logs.text()
            .contains("the slave opened a TLS handshake but this HA port is plain")
    })
    .await;
    wait_for("the slave to see the refusal", || {
        s.store.ha_master_link().last_error.is_some()
    })
    .await;
    let error = s.store.ha_master_link().last_error.unwrap();
    assert!(error.contains("TLS handshake with the master"), "{error}");
    assert_eq!(s.store.max_phy_offset(), 0, "no data reached the slave");
}
