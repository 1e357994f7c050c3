//! Replication between two stores over real TCP: the slave ends up with the master's
//! commitlog byte for byte, builds its queues from it, resumes after a restart; a
//! SYNC_MASTER acknowledges only what a slave holds; a slave ahead of its master is
//! refused.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{message, props, pull_all, settle, small_config};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vostok_store::ha::wire::encode_report;
use vostok_store::ha::{self, HaClient};
use vostok_store::{MessageStore, PutMessageStatus, StoreConfig};

const FILE: usize = 64 * 1024;
const WAIT: Duration = Duration::from_secs(20);

struct Master {
    store: Arc<MessageStore>,
    addr: String,
    shutdown: CancellationToken,
}

/// A master; a SYNC_MASTER put waits `slave_wait` for a slave (short where a test
/// wants FLUSH_SLAVE_TIMEOUT, long where it wants PUT_OK even on a loaded machine).
async fn master_waiting(root: &Path, sync: bool, slave_wait: Duration) -> Master {
    let mut config = small_config(root, FILE);
    config.ha.sync_master = sync;
    config.sync_flush_timeout = slave_wait;
    let store = MessageStore::open(config).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    tokio::spawn(ha::serve(
        store.clone(),
        listener,
        None,
        TaskTracker::new(),
        shutdown.clone(),
    ));
    Master {
        store,
        addr,
        shutdown,
    }
}

async fn master(root: &Path, sync: bool) -> Master {
    master_waiting(root, sync, Duration::from_secs(10)).await
}

fn slave_config(root: &Path, master: &str) -> StoreConfig {
    let mut config = small_config(root, FILE);
    config.ha.master_address = Some(master.to_owned());
    config
}

fn slave(root: &Path, master: &str) -> (Arc<MessageStore>, CancellationToken) {
    let store = MessageStore::open(slave_config(root, master)).unwrap();
    let shutdown = CancellationToken::new();
    HaClient::start(store.clone(), None, &TaskTracker::new(), shutdown.clone());
    (store, shutdown)
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn put_some(store: &MessageStore, n: usize, tag: &str) {
    for i in 0..n {
        let p = props(Some(tag), Some(&format!("{tag}-{i}")), None);
        let r = store
            .put_message(message("T", (i % 4) as i32, vec![b'x'; 100 + i % 700], p))
            .await;
        assert!(r.is_ok(), "{:?}", r.status);
    }
}

/// How many events a replication histogram counted (`le:count,...,max:ms`).
fn events(store: &MessageStore, key: &str) -> u64 {
    let all = store.ha_delay_histograms();
    let (_, h) = all.iter().find(|(k, _)| *k == key).unwrap();
    h.split(',')
        .filter(|p| !p.starts_with("max:"))
        .map(|p| p.split_once(':').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

/// The concatenated commitlog files of a store, from its first file on.
fn commitlog_bytes(root: &Path, upto: i64) -> Vec<u8> {
    let mut names: Vec<_> = std::fs::read_dir(root.join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for n in names {
        out.extend(std::fs::read(n).unwrap());
    }
    out.truncate(upto as usize);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_holds_the_masters_commitlog_byte_for_byte_and_resumes_after_a_restart() {
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(mdir.path(), false).await;
    let (s, stop) = slave(sdir.path(), &m.addr);
    // Reported before the first put: a new slave that first reports 0 to a master
    // already past its first file starts from the master's last file (as Apache's
    // does), and this test compares the whole log.
    wait_for("the slave's first report", || {
        m.store.ha_slaves().iter().any(|l| l.ack_offset >= 0)
    })
    .await;
    put_some(&m.store, 600, "a").await;
    assert!(m.store.max_phy_offset() > 3 * FILE as i64, "several files");
    wait_for("the slave to catch up", || {
        s.max_phy_offset() == m.store.max_phy_offset()
    })
    .await;
    assert_eq!(m.store.ha_slaves().len(), 1);
    // Every applied batch and every write to the slave was counted.
    assert!(events(&s, "haApplyDelayHistogram") > 0);
    assert!(events(&s, "haApplyWaitHistogram") > 0);
    assert!(events(&m.store, "haSendBlockHistogram") > 0);
    assert_eq!(events(&m.store, "haApplyDelayHistogram"), 0, "not a slave");
    settle(&m.store);
    settle(&s);
    for q in 0..4 {
        assert_eq!(
            pull_all(&s, "T", q),
            pull_all(&m.store, "T", q),
            "queue {q}"
        );
    }
    assert_eq!(
        s.query_message("T", "a-7", 8, 0, i64::MAX).messages.len(),
        1
    );

    // The slave stops (as after a crash, its client is gone) and the master goes on.
    stop.cancel();
    s.shutdown();
    drop(s);
    put_some(&m.store, 300, "b").await;
    let (s, _stop) = slave(sdir.path(), &m.addr);
    wait_for("the restarted slave to catch up", || {
        s.max_phy_offset() == m.store.max_phy_offset()
    })
    .await;
    m.store.flush().unwrap();
    s.flush().unwrap();
    let end = m.store.max_phy_offset();
    assert!(commitlog_bytes(sdir.path(), end) == commitlog_bytes(mdir.path(), end));
    settle(&s);
    assert_eq!(
        s.query_message("T", "b-299", 8, 0, i64::MAX).messages.len(),
        1
    );
    m.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_slave_starts_at_the_masters_last_file() {
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(mdir.path(), false).await;
    put_some(&m.store, 400, "a").await;
    let max = m.store.max_phy_offset();
    let (s, _stop) = slave(sdir.path(), &m.addr);
    wait_for("the slave to catch up", || s.max_phy_offset() == max).await;
    assert_eq!(s.min_phy_offset(), max - max % FILE as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_master_acknowledges_only_what_a_slave_holds() {
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(mdir.path(), true).await;
    // No slave: stored, but SLAVE_NOT_AVAILABLE.
    let r = m
        .store
        .put_message(message("T", 0, "alone", String::new()))
        .await;
    assert_eq!(r.status, PutMessageStatus::SlaveNotAvailable);
    let (s, stop) = slave(sdir.path(), &m.addr);
    wait_for("the slave to connect", || m.store.ha_slaves().len() == 1).await;
    for i in 0..50 {
        let r = m
            .store
            .put_message(message("T", 0, format!("m{i}"), String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk);
        let a = r.append.unwrap();
        // Acknowledged only once the slave holds it.
        assert!(s.raw_write_end() >= a.wrote_offset + a.wrote_bytes as i64);
    }
    // The slave goes away: no more PUT_OK.
    stop.cancel();
    wait_for("the master to notice", || m.store.ha_slaves().is_empty()).await;
    let r = m
        .store
        .put_message(message("T", 0, "after", String::new()))
        .await;
    assert_eq!(r.status, PutMessageStatus::SlaveNotAvailable);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_master_whose_slave_is_frozen_answers_flush_slave_timeout() {
    let mdir = tempfile::tempdir().unwrap();
    let m = master_waiting(mdir.path(), true, Duration::from_millis(300)).await;
    // A slave that reports once and then neither reads nor reports.
    let mut frozen = TcpStream::connect(&m.addr).await.unwrap();
    frozen.write_all(&encode_report(0)).await.unwrap();
    wait_for("the frozen slave to register", || {
        m.store
            .ha_slaves()
            .first()
            .is_some_and(|s| s.ack_offset == 0)
    })
    .await;
    for i in 0..3 {
        let r = m
            .store
            .put_message(message("T", 0, format!("f{i}"), String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::FlushSlaveTimeout);
        assert!(r.append.is_some(), "stored all the same");
    }
    drop(frozen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_ahead_of_its_master_is_refused_not_forked() {
    let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = master(mdir.path(), false).await;
    put_some(&m.store, 10, "m").await;
    // The "slave" wrote more on its own than the master has.
    {
        let own = MessageStore::open(small_config(sdir.path(), FILE)).unwrap();
        put_some(&own, 50, "s").await;
        own.shutdown();
    }
    let (s, _stop) = slave(sdir.path(), &m.addr);
    let before = s.max_phy_offset();
    assert!(before > m.store.max_phy_offset());
    wait_for("the refusal", || s.ha_master_link().last_error.is_some()).await;
    put_some(&m.store, 100, "m2").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        s.max_phy_offset(),
        before,
        "nothing written at a forked offset"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_slaves_replicate_and_either_acknowledges_a_sync_master() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let m = master(dirs[0].path(), true).await;
    let (s1, _stop1) = slave(dirs[1].path(), &m.addr);
    let (s2, stop2) = slave(dirs[2].path(), &m.addr);
    wait_for("both slaves to connect", || m.store.ha_slaves().len() == 2).await;
    put_some(&m.store, 200, "two").await;
    let max = m.store.max_phy_offset();
    wait_for("both slaves to catch up", || {
        s1.max_phy_offset() == max && s2.max_phy_offset() == max
    })
    .await;
    // One slave gone: the other still acknowledges.
    stop2.cancel();
    wait_for("the master to drop it", || m.store.ha_slaves().len() == 1).await;
    let r = m
        .store
        .put_message(message("T", 1, "one left", String::new()))
        .await;
    assert_eq!(r.status, PutMessageStatus::PutOk);
}
