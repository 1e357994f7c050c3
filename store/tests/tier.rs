//! Tiered storage: sealed commitlog files reach the tier (a directory, or a real
//! S3-compatible server), local retention then deletes them, and every message is
//! still read back byte-identical from offset 0; a file not yet in the tier is never
//! deleted; a store killed during uploads resumes them without duplicates.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::settle;
use common::tier::*;
use vostok_store::{GetMessageStatus, MessageStore};

/// Writes a message of another topic with the tier off: the store then has local data.
async fn seed_without_tier(root: &Path) {
    let store = MessageStore::open(common::small_config(root, FILE)).unwrap();
    let r = store
        .put_message(common::message("Seed", 0, &b"seed"[..], String::new()))
        .await;
    assert!(r.is_ok(), "{r:?}");
    store.shutdown();
}

/// Writes several files, uploads them, deletes them locally, and reads everything
/// back from offset 0.
async fn round_trip(root: &Path, keys: &[(&str, &str)]) {
    let store = MessageStore::open(tier_config(root, keys)).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let before = read_from_zero(&store);
    assert_eq!(before.iter().map(Vec::len).sum::<usize>(), 120);
    let files = file_count(&store);
    assert!(files >= 5, "{files} files");
    wait_uploaded(&store);
    assert_eq!(expire_local(&store), files - 1);
    assert!(store.min_phy_offset() > 0);
    assert_eq!(store.min_offset_in_queue(TOPIC, 0), 0, "the tier's min");
    // A record only the tier holds is not in memory, however young.
    assert!(!store.is_in_memory(0));
    assert!(store.is_in_memory(store.min_phy_offset()));
    let after = read_from_zero(&store);
    assert_eq!(after, before, "read back from the tier");
    // A tag filter works on tier data too.
    let status = store.tier_status().unwrap();
    assert!(
        status.reads > 0 && status.segments == files - 1,
        "{status:?}"
    );
    assert!(
        status.last_upload_ms > 0 && status.last_upload_error.is_none(),
        "{status:?}"
    );
    // Reopened: the record of what is in the tier survives.
    store.shutdown();
    drop(store);
    let store = MessageStore::open(tier_config(root, keys)).unwrap();
    assert_eq!(read_from_zero(&store), before, "after a restart");
    assert_eq!(
        store.tier_status().unwrap().segments_uploaded,
        0,
        "nothing uploaded twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_system_tier_serves_every_message_after_local_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    let keys = fs_keys(&tier_dir);
    round_trip(&dir.path().join("store"), &as_refs(&keys)).await;
    // The tier holds one data and one index object per segment.
    let objects = std::fs::read_dir(tier_dir.join("commitlog"))
        .unwrap()
        .count();
    let indexes = std::fs::read_dir(tier_dir.join("index")).unwrap().count();
    assert_eq!(objects, indexes);
    assert!(objects >= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_not_in_the_tier_is_never_deleted_and_puts_go_on() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: every upload fails quickly.
    let keys = [
        ("tieredBackendServiceProvider", "s3"),
        ("objectStoreEndpoint", "http://127.0.0.1:1"),
        ("objectStoreBucket", "unreachable"),
        ("objectStoreRegion", "us-east-1"),
        ("objectStoreAccessKey", "test"),
        ("objectStoreSecretKey", "test"),
        ("tieredStoreUploadTimeout", "2000"),
    ];
    // A store with local data opens whatever the tier's state (a new disk would not).
    seed_without_tier(dir.path()).await;
    let store = MessageStore::open(tier_config(dir.path(), &keys)).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let files = file_count(&store);
    assert!(
        store.wait_tier(WAIT, |s| s.upload_failures > 0),
        "no upload attempt"
    );
    let status = store.tier_status().unwrap();
    let (at, why) = status
        .last_upload_error
        .clone()
        .expect("the upload's error");
    assert!(at > 0 && why.starts_with("object store"), "{why}");
    assert_eq!(status.last_upload_ms, 0, "{status:?}");
    assert_eq!(expire_local(&store), 0, "files not in the tier are kept");
    assert_eq!(file_count(&store), files);
    fill(&store, 120, 10).await;
    settle(&store);
    assert_eq!(
        read_from_zero(&store).iter().map(Vec::len).sum::<usize>(),
        130
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_already_in_the_tier_is_recorded_not_uploaded_again() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    let keys = fs_keys(&tier_dir);
    let root = dir.path().join("store");
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    fill(&store, 0, 60).await;
    settle(&store);
    wait_uploaded(&store);
    let uploaded = store.tier_status().unwrap().segments_uploaded;
    store.shutdown();
    drop(store);
    // As if killed after the uploads but before they were recorded.
    std::fs::remove_file(root.join("tier/segments.json")).unwrap();
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    wait_uploaded(&store);
    let status = store.tier_status().unwrap();
    assert_eq!(status.segments as u64, uploaded);
    assert_eq!(
        status.segments_uploaded, 0,
        "found in the tier, not uploaded again"
    );
}

// ---- kill -9 during uploads ----

const CHILD_ENV: &str = "VOSTOK_TIER_CHILD_DIR";

/// The child: writes and uploads until killed, printing the tier's segment count.
#[test]
fn tier_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return; // not a child
    };
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let keys = fs_keys(&dir.join("tier"));
        let store =
            MessageStore::open(tier_config(&dir.join("store"), &as_refs(&keys))).expect("open");
        let mut i = 0;
        loop {
            fill(&store, i, 10).await;
            i += 10;
            let segments = store.tier_status().map_or(0, |s| s.segments);
            println!("segments {segments}");
            let _ = std::io::stdout().flush();
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_uploads_resumes_without_duplicates_or_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "tier_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    // Killed while it uploads: once a few segments are in the tier.
    loop {
        let line = lines.next().expect("child output").expect("child output");
        let n: usize = line
            .strip_prefix("segments ")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if n >= 4 {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    drop(lines);

    let keys = fs_keys(&dir.path().join("tier"));
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    settle(&store);
    let before_restart = store.tier_status().unwrap().segments;
    wait_uploaded(&store);
    let status = store.tier_status().unwrap();
    let sealed = file_count(&store) - 1;
    assert_eq!(status.segments, sealed);
    assert!(
        status.segments_uploaded as usize <= sealed - before_restart,
        "uploads resumed, none repeated: {status:?}, {before_restart} recorded before"
    );
    // One data object per segment, none left half-written.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("tier/commitlog"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), sealed, "{names:?}");
    let before = read_from_zero(&store);
    assert_eq!(expire_local(&store), sealed);
    assert_eq!(read_from_zero(&store), before);
}

// ---- S3 ----

/// Starts moto's S3 server (`VOSTOK_MOTO` = a Python with `moto[server]`), or `None`.
struct Moto {
    child: std::process::Child,
    port: u16,
    endpoint: String,
}

impl Moto {
    /// The keys of a store whose tier is the bucket `vostok-tier` on this server.
    fn keys(&self) -> [(&str, &str); 7] {
        [
            ("tieredBackendServiceProvider", "s3"),
            ("objectStoreEndpoint", self.endpoint.as_str()),
            ("objectStoreBucket", "vostok-tier"),
            ("objectStoreRegion", "us-east-1"),
            ("objectStoreAccessKey", "testing"),
            ("objectStoreSecretKey", "testing"),
            ("tieredStorePathPrefix", "cluster/broker-a"),
        ]
    }
}

/// Moto with the bucket `vostok-tier` created, or `None` with a line saying the test
/// is skipped.
fn moto_with_bucket() -> Option<Moto> {
    let Some(moto) = start_moto() else {
        eprintln!(
            "SKIPPED: no S3 test server; set VOSTOK_MOTO to a Python with moto[server] \
             installed (.ci/run does)"
        );
        return None;
    };
    create_bucket(moto.port, "vostok-tier");
    Some(moto)
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_moto() -> Option<Moto> {
    let python = std::env::var("VOSTOK_MOTO").ok()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new(&python)
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let endpoint = format!("http://127.0.0.1:{port}");
    let moto = Moto {
        child,
        port,
        endpoint,
    };
    let deadline = std::time::Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "moto did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(moto)
}

/// Creates a bucket with a plain HTTP PUT (moto accepts unsigned requests).
fn create_bucket(port: u16, bucket: &str) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_tier_serves_every_message_after_local_deletion() {
    let Some(moto) = moto_with_bucket() else {
        return;
    };
    let keys = moto.keys();
    let dir = tempfile::tempdir().unwrap();
    round_trip(dir.path(), &keys).await;
    drop(moto);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tier_segments_expire_once_their_local_files_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    let mut keys = fs_keys(&tier_dir);
    keys.push(("tieredStoreFileReservedTime", "0".to_owned()));
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    fill(&store, 0, 60).await;
    settle(&store);
    wait_uploaded(&store);
    // Still on the local disk: kept in the tier, however old.
    let segments = store.tier_status().unwrap().segments as u64;
    assert!(segments > 0);
    let deleted = expire_local(&store);
    assert!(deleted > 0);
    assert!(
        store.wait_tier(WAIT, |s| s.segments_expired == segments),
        "{:?}",
        store.tier_status()
    );
    // Emptied (the file-system backend removes empty directories too).
    for sub in ["commitlog", "index"] {
        let left = std::fs::read_dir(tier_dir.join(sub)).map_or(0, |d| d.count());
        assert_eq!(left, 0, "{sub}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tier_read_keeps_the_consumer_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    let keys = fs_keys(&tier_dir);
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    fill(&store, 0, 60).await;
    settle(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) > 0);
    // The segments' data vanish from the tier (their queue indexes stay).
    std::fs::remove_dir_all(tier_dir.join("commitlog")).unwrap();
    let r = store.get_message(TOPIC, 0, 0, 32, 0, None);
    assert!(r.messages.is_empty());
    assert_eq!(r.status, GetMessageStatus::OffsetFoundNull);
    assert_eq!(r.next_begin_offset, 0, "asked again, not skipped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_segment_missing_from_the_tier_is_uploaded_again_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    let keys = fs_keys(&tier_dir);
    let root = dir.path().join("store");
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    fill(&store, 0, 60).await;
    settle(&store);
    wait_uploaded(&store);
    let segments = store.tier_status().unwrap().segments;
    store.shutdown();
    drop(store);
    // An object removed behind the broker's back while it was down.
    let mut objects: Vec<PathBuf> = std::fs::read_dir(tier_dir.join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    objects.sort();
    std::fs::remove_file(&objects[1]).unwrap();
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    assert!(
        store.wait_tier(WAIT, |s| s.segments_uploaded == 1 && s.segments == segments),
        "{:?}",
        store.tier_status()
    );
    assert!(objects[1].exists(), "uploaded again");
    let before = read_from_zero(&store);
    assert!(expire_local(&store) > 0);
    assert_eq!(read_from_zero(&store), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_catch_up_once_the_tier_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    // A file where the tier's directory of segments belongs: every upload fails.
    std::fs::create_dir_all(&tier_dir).unwrap();
    std::fs::write(tier_dir.join("commitlog"), b"in the way").unwrap();
    let keys = fs_keys(&tier_dir);
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    fill(&store, 0, 60).await;
    settle(&store);
    assert!(
        store.wait_tier(WAIT, |s| s.upload_failures > 0),
        "no upload attempt"
    );
    assert_eq!(store.tier_status().unwrap().segments, 0);
    fill(&store, 60, 20).await;
    std::fs::remove_file(tier_dir.join("commitlog")).unwrap();
    settle(&store);
    wait_uploaded(&store);
    let before = read_from_zero(&store);
    assert_eq!(before.iter().map(Vec::len).sum::<usize>(), 80);
    assert!(expire_local(&store) > 0);
    assert_eq!(read_from_zero(&store), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_store_that_never_answers_holds_up_neither_puts_nor_shutdown() {
    // Connections are accepted by the kernel, and never answered.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let keys = [
        ("tieredBackendServiceProvider", "s3"),
        ("objectStoreEndpoint", endpoint.as_str()),
        ("objectStoreBucket", "silent"),
        ("objectStoreRegion", "us-east-1"),
        ("objectStoreAccessKey", "test"),
        ("objectStoreSecretKey", "test"),
        ("tieredStoreUploadTimeout", "600000"),
    ];
    seed_without_tier(dir.path()).await;
    let store = MessageStore::open(tier_config(dir.path(), &keys)).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    assert!(file_count(&store) >= 5);
    assert_eq!(
        read_from_zero(&store).iter().map(Vec::len).sum::<usize>(),
        120
    );
    // The tier is being listed (before any upload): the store has connected, and waits
    // for an answer.
    let (conn_tx, conn_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = conn_tx.send(silent.accept().map(|(c, _)| c));
    });
    let held = conn_rx.recv_timeout(WAIT).expect("no upload attempt");
    let status = store.tier_status().unwrap();
    assert_eq!(
        (status.segments, status.upload_failures),
        (0, 0),
        "still waiting"
    );
    // Shutdown does not wait for the upload (it would wait 10 minutes).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        store.shutdown();
        drop(store);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(WAIT).is_ok(),
        "shutdown waited for the object store"
    );
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_cache_stays_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut keys = fs_keys(&dir.path().join("tier"));
    keys.push(("tieredStoreReadCacheMaxSize", "10000".to_owned()));
    keys.push(("tieredStoreReadBlockSize", "4096".to_owned()));
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let before = read_from_zero(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) >= 4);
    assert_eq!(read_from_zero(&store), before);
    let status = store.tier_status().unwrap();
    assert!(status.cache_bytes <= 10_000, "{status:?}");
    assert!(status.cache_hits > 0, "blocks are reused: {status:?}");
    assert!(status.object_reads > 0 && status.object_read_failures == 0);
}

// ---- a lost local disk ----

/// The commitlog offset of a stored record.
fn phy_of(record: &[u8]) -> i64 {
    vostok_remoting::protocol::message::record::RecordView::parse_message(record, false)
        .expect("a stored record")
        .physical_offset()
}

/// Fills a store with the tier at `keys` until several files are in the tier, stops
/// it and deletes its whole directory (the tier stays). Returns, per queue, the
/// messages the tier holds (those of sealed files), and the first offset after them.
async fn lose_the_disk(root: &Path, keys: &[(&str, &str)]) -> (Vec<Vec<bytes::Bytes>>, i64) {
    let store = MessageStore::open(tier_config(root, keys)).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let before = read_from_zero(&store);
    assert!(file_count(&store) >= 5);
    wait_uploaded(&store);
    // The writer's file is lost with the disk; the sealed ones are in the tier.
    let writer_base = store.max_phy_offset() / FILE as i64 * FILE as i64;
    store.shutdown();
    drop(store);
    std::fs::remove_dir_all(root).unwrap();
    let in_tier = before
        .into_iter()
        .map(|q| q.into_iter().filter(|m| phy_of(m) < writer_base).collect())
        .collect();
    (in_tier, writer_base)
}

/// A store on a new disk, its tier holding `in_tier` up to `tier_end`: everything is
/// read from offset 0, byte-identical; new messages get commitlog and queue offsets
/// after the tier's, and keep them across a restart.
async fn continues_after_the_tier(
    root: &Path,
    keys: &[(&str, &str)],
    in_tier: &[Vec<bytes::Bytes>],
    tier_end: i64,
) {
    let store = MessageStore::open(tier_config(root, keys)).unwrap();
    assert_eq!(read_from_zero(&store), in_tier, "read back from the tier");
    assert_eq!(store.max_phy_offset(), tier_end);
    for (q, msgs) in in_tier.iter().enumerate() {
        let q = q as i32;
        assert_eq!(store.min_offset_in_queue(TOPIC, q), 0);
        assert_eq!(store.max_offset_in_queue(TOPIC, q), msgs.len() as i64);
        assert_eq!(store.next_queue_offset(TOPIC, q), msgs.len() as i64);
    }
    let status = store.tier_status().unwrap();
    assert_eq!(status.segments_uploaded, 0, "{status:?}");
    assert_eq!(status.last_segment, Some(tier_end - FILE as i64));
    // New messages: 2 per queue, after the tier's offsets.
    fill(&store, 1000, 6).await;
    settle(&store);
    let after = read_from_zero(&store);
    for (q, msgs) in after.iter().enumerate() {
        let old = &in_tier[q];
        assert_eq!(&msgs[..old.len()], &old[..], "queue {q}");
        assert_eq!(msgs.len(), old.len() + 2, "queue {q}");
        for m in &msgs[old.len()..] {
            assert!(phy_of(m) >= tier_end, "a new message at {}", phy_of(m));
        }
    }
    // Across a restart the queues start where they did.
    store.shutdown();
    drop(store);
    let store = MessageStore::open(tier_config(root, keys)).unwrap();
    assert_eq!(read_from_zero(&store), after, "after a restart");
    for (q, msgs) in in_tier.iter().enumerate() {
        assert_eq!(
            store.next_queue_offset(TOPIC, q as i32),
            msgs.len() as i64 + 2
        );
    }
}

/// `in_tier` without the messages of the segments at `bases`.
fn without(in_tier: &[Vec<bytes::Bytes>], bases: &[i64]) -> Vec<Vec<bytes::Bytes>> {
    in_tier
        .iter()
        .map(|q| {
            q.iter()
                .filter(|m| !bases.contains(&(phy_of(m) / FILE as i64 * FILE as i64)))
                .cloned()
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_record_is_rebuilt_from_the_tier() {
    let dir = tempfile::tempdir().unwrap();
    let keys = fs_keys(&dir.path().join("tier"));
    let root = dir.path().join("store");
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let before = read_from_zero(&store);
    wait_uploaded(&store);
    let segments = store.tier_status().unwrap().segments;
    // Only the tier holds them now.
    assert_eq!(expire_local(&store), segments);
    store.shutdown();
    drop(store);
    std::fs::remove_file(root.join("tier/segments.json")).unwrap();
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    assert!(
        store.wait_tier(WAIT, |s| s.segments == segments),
        "{:?}",
        store.tier_status()
    );
    assert_eq!(read_from_zero(&store), before);
    assert_eq!(store.tier_status().unwrap().segments_uploaded, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_disk_reads_the_tier_and_continues_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let keys = fs_keys(&dir.path().join("tier"));
    let root = dir.path().join("store");
    let (in_tier, tier_end) = lose_the_disk(&root, &as_refs(&keys)).await;
    assert!(in_tier.iter().map(Vec::len).sum::<usize>() >= 60);
    continues_after_the_tier(&root, &as_refs(&keys), &in_tier, tier_end).await;
    assert!(root.join("tier/segments.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_tier_object_is_not_recorded_after_a_lost_disk() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    let keys = fs_keys(&tier_dir);
    let root = dir.path().join("store");
    let (in_tier, tier_end) = lose_the_disk(&root, &as_refs(&keys)).await;
    let names = |sub: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(tier_dir.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    };
    let (data, index) = (names("commitlog"), names("index"));
    let segments = data.len();
    assert!(segments >= 4 && index.len() == segments);
    let base = |p: &Path| -> i64 { p.file_name().unwrap().to_str().unwrap().parse().unwrap() };
    // Truncated by hand; its index gone; its data gone (an index left alone). The
    // last one is damaged too: its offsets are still not given again.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&data[1])
        .unwrap()
        .set_len(100)
        .unwrap();
    std::fs::remove_file(&index[2]).unwrap();
    std::fs::remove_file(&data[segments - 1]).unwrap();
    let damaged = [base(&data[1]), base(&data[2]), base(&data[segments - 1])];
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    let status = store.tier_status().unwrap();
    assert_eq!(status.segments, segments - 3, "{status:?}");
    let record = std::fs::read_to_string(root.join("tier/segments.json")).unwrap();
    for b in damaged {
        assert!(
            !record.contains(&format!("\"base\":{b},")),
            "{b} in {record}"
        );
    }
    // Every message of a whole segment is read; those of the damaged ones are not.
    assert_eq!(read_from_zero(&store), without(&in_tier, &damaged));
    // Offsets go on after the tier's, damaged segments included.
    assert_eq!(store.max_phy_offset(), tier_end);
    for (q, msgs) in in_tier.iter().enumerate() {
        assert_eq!(store.next_queue_offset(TOPIC, q as i32), msgs.len() as i64);
    }
    // The damaged objects stay where they are.
    assert!(data[1].exists() && index[1].exists() && data[2].exists());
}

#[test]
fn a_new_disk_does_not_open_while_the_tier_cannot_be_listed() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1.
    let keys = [
        ("tieredBackendServiceProvider", "s3"),
        ("objectStoreEndpoint", "http://127.0.0.1:1"),
        ("objectStoreBucket", "unreachable"),
        ("objectStoreRegion", "us-east-1"),
        ("objectStoreAccessKey", "test"),
        ("objectStoreSecretKey", "test"),
        ("tieredStoreUploadTimeout", "2000"),
    ];
    let err = match MessageStore::open(tier_config(dir.path(), &keys)) {
        Ok(_) => panic!("opened without knowing what the tier holds"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("could not be listed"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_tier_is_read_and_continued_after_a_lost_disk() {
    let Some(moto) = moto_with_bucket() else {
        return;
    };
    let keys = moto.keys();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let (in_tier, tier_end) = lose_the_disk(&root, &keys).await;
    continues_after_the_tier(&root, &keys, &in_tier, tier_end).await;
    drop(moto);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_objects_damaged_by_hand_are_not_recorded_after_a_lost_disk() {
    let Some(moto) = moto_with_bucket() else {
        return;
    };
    let keys = moto.keys();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let (in_tier, tier_end) = lose_the_disk(&root, &keys).await;
    let segments = (tier_end / FILE as i64) as usize;
    assert!(segments >= 4);
    // One index deleted, one data object replaced by a short one (by a client of the
    // S3 API, as an operator would).
    use vostok_store::tier::backend::ObjectBackend;
    use vostok_store::tier::TierBackend;
    let by_hand = ObjectBackend::from_config(&tier_config(&root, &keys).tier).unwrap();
    let (gone, short) = (FILE as i64, 2 * FILE as i64);
    by_hand.delete(&format!("index/{gone:020}")).unwrap();
    by_hand
        .put(&format!("commitlog/{short:020}"), b"cut short")
        .unwrap();
    drop(by_hand);
    let store = MessageStore::open(tier_config(&root, &keys)).unwrap();
    let status = store.tier_status().unwrap();
    assert_eq!(status.segments, segments - 2, "{status:?}");
    assert_eq!(read_from_zero(&store), without(&in_tier, &[gone, short]));
    assert_eq!(store.max_phy_offset(), tier_end);
    drop(moto);
}

/// A store whose tier reads are starved: one reader, paced at one byte a second, so
/// that after the first object read every cold read waits for the budget (at most
/// `read_timeout_ms`).
fn starved_tier(root: &Path, read_timeout_ms: &str) -> std::sync::Arc<MessageStore> {
    let mut keys = fs_keys(&root.join("tier"));
    keys.push(("tieredStoreReadConcurrency", "1".to_owned()));
    keys.push(("tieredStoreReadBandwidth", "1".to_owned()));
    keys.push(("tieredStoreReadBlockSize", "4096".to_owned()));
    keys.push(("tieredStoreReadTimeout", read_timeout_ms.to_owned()));
    MessageStore::open(tier_config(&root.join("store"), &as_refs(&keys))).unwrap()
}

/// One async worker, as a broker whose workers all serve pulls: cold reads go to the
/// tier's reader threads, so the worker answers a pull of the hot tail while every
/// tier read waits for the budget.
#[tokio::test(flavor = "current_thread")]
async fn a_hot_tail_pull_is_answered_while_tier_reads_wait_for_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    // Far longer than the test: only the shutdown ends the cold reads.
    let store = starved_tier(dir.path(), "600000");
    fill(&store, 0, 120).await;
    settle(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) >= 4);
    fill(&store, 120, 3).await;
    settle(&store);
    let hot = store.max_offset_in_queue(TOPIC, 0) - 1;
    assert!(store.reads_from_tier(TOPIC, 0, 0));
    assert!(
        !store.reads_from_tier(TOPIC, 0, hot),
        "the hot tail is local"
    );

    const COLD: usize = 8;
    let cold: Vec<_> = (0..COLD)
        .map(|n| {
            let s = store.clone();
            store.on_tier_readers(move || s.get_message(TOPIC, (n % 3) as i32, 0, 32, 0, None))
        })
        .map(tokio::spawn)
        .collect();
    assert_eq!(store.tier_status().unwrap().reads_pending, COLD as u64);
    let r = store.get_message(TOPIC, 0, hot, 32, 0, None);
    assert_eq!(r.status, GetMessageStatus::Found);
    assert_eq!(r.messages.len(), 1);
    let status = store.tier_status().unwrap();
    assert_eq!(
        (status.reads_pending, status.reads_over_budget),
        (COLD as u64, 0),
        "the cold reads still wait: {status:?}"
    );

    // A shutdown ends the wait: not found, at the same offset.
    store.shutdown();
    for c in cold {
        let r = c.await.unwrap().expect("run by a reader");
        assert!(r.messages.is_empty());
        assert_eq!(r.status, GetMessageStatus::OffsetFoundNull);
        assert_eq!(r.next_begin_offset, 0, "asked again, not skipped");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tier_read_over_its_budget_answers_not_found_at_the_same_offset() {
    let dir = tempfile::tempdir().unwrap();
    let store = starved_tier(dir.path(), "200");
    fill(&store, 0, 120).await;
    settle(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) >= 4);
    // The first object read (the segment's queue index) is served and charged to the
    // pace; the block of records then waits past the read timeout for the pace.
    let r = store.get_message(TOPIC, 0, 0, 32, 0, None);
    assert!(r.messages.is_empty());
    assert_eq!(r.status, GetMessageStatus::OffsetFoundNull);
    let offset = 0;
    assert_eq!(r.next_begin_offset, offset, "asked again, not skipped");
    assert!(store.tier_status().unwrap().reads_over_budget >= 1);
    // Asked again from the reader threads: the same answer.
    let s = store.clone();
    let again = store
        .on_tier_readers(move || s.get_message(TOPIC, 0, offset, 32, 0, None))
        .await
        .expect("run by a reader");
    assert_eq!(
        (again.status, again.next_begin_offset),
        (GetMessageStatus::OffsetFoundNull, offset)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_of_the_same_cold_block_read_it_from_the_tier_once() {
    let dir = tempfile::tempdir().unwrap();
    let keys = fs_keys(&dir.path().join("tier"));
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) >= 4);
    // Eight readers at once, each of every queue's first messages: one segment.
    let start = std::sync::Arc::new(std::sync::Barrier::new(8));
    let readers: Vec<_> = (0..8)
        .map(|n| {
            let (s, start) = (store.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                s.get_message(TOPIC, n % 3, 0, 1, 0, None)
            })
        })
        .collect();
    for r in readers {
        assert_eq!(r.join().unwrap().status, GetMessageStatus::Found);
    }
    let status = store.tier_status().unwrap();
    assert_eq!(
        status.object_reads, 2,
        "the segment's queue index and its data, once each: {status:?}"
    );
}

/// A pull that needs several blocks of a segment waits for all of them within one
/// `tieredStoreReadTimeout`, not one each: what it read by then is answered, and the
/// next pull goes on from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_of_several_blocks_waits_for_them_within_one_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut keys = fs_keys(&dir.path().join("tier"));
    keys.push(("mappedFileSizeCommitLog", (64 * 1024).to_string()));
    keys.push(("maxTransferCountOnMessageInDisk", "32".to_owned()));
    keys.push(("tieredStoreReadBlockSize", "4096".to_owned()));
    // A block a second: each block waits for the pace about a second, far less than
    // the read timeout; the nine blocks of 32 messages of 1 KiB, far more.
    keys.push(("tieredStoreReadBandwidth", "4096".to_owned()));
    keys.push(("tieredStoreReadTimeout", "3000".to_owned()));
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    for i in 0..130 {
        let r = store
            .put_message(common::message(
                TOPIC,
                0,
                vec![b'x'; 1000],
                common::props(None, None, Some(&format!("UNIQ{i:08}"))),
            ))
            .await;
        assert!(r.is_ok(), "put {i}: {r:?}");
    }
    settle(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) >= 1);
    assert!(store.reads_from_tier(TOPIC, 0, 0));

    let r = store.get_message(TOPIC, 0, 0, 32, 0, None);
    assert_eq!(r.status, GetMessageStatus::Found);
    let read = r.messages.len();
    assert!(
        read > 0 && read < 32,
        "{read} of 32 messages within the deadline"
    );
    assert_eq!(
        r.next_begin_offset, read as i64,
        "the next pull goes on from there"
    );
    assert!(store.tier_status().unwrap().reads_over_budget >= 1);
}
