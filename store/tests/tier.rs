//! Tiered storage: sealed commitlog files reach the tier (a directory, or a real
//! S3-compatible server), local retention then deletes them, and every message is
//! still read back byte-identical from offset 0; a file not yet in the tier is never
//! deleted; a store killed during uploads resumes them without duplicates.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use common::{message, props, settle, small_config};
use vostok_store::{GetMessageStatus, MessageStore, StoreConfig};

const FILE: usize = 4096;
const TOPIC: &str = "TierTopic";
const WAIT: Duration = Duration::from_secs(30);

fn every_hour() -> String {
    (0..24)
        .map(|h| format!("{h:02}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn tier_config(root: &Path, keys: &[(&str, &str)]) -> StoreConfig {
    let mut c = StoreConfig {
        delete_when: every_hour(),
        // Uploads wait for the flush; flushed at once, the tests wait less.
        flush_commit_log_thorough_interval: Duration::from_millis(50),
        ..small_config(root, FILE)
    };
    c.apply_property(
        "messageStorePlugIn",
        "org.apache.rocketmq.tieredstore.TieredMessageStore",
    )
    .unwrap();
    for (k, v) in keys {
        assert!(c.apply_property(k, v).unwrap(), "{k}");
    }
    c
}

fn fs_keys(tier_dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        (
            "tieredBackendServiceProvider",
            "org.apache.rocketmq.tieredstore.provider.PosixFileSegment".to_owned(),
        ),
        ("tieredStoreFilePath", tier_dir.display().to_string()),
    ]
}

fn as_refs<'a>(keys: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    keys.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

async fn fill(store: &MessageStore, from: usize, n: usize) {
    for i in from..from + n {
        let body = format!("message {i} ").repeat(1 + i % 17);
        let r = store
            .put_message(message(
                TOPIC,
                (i % 3) as i32,
                body.into_bytes(),
                props(
                    Some(&format!("tag{}", i % 4)),
                    Some(&format!("key{i}")),
                    None,
                ),
            ))
            .await;
        assert!(r.is_ok(), "put {i}: {r:?}");
    }
}

fn file_count(store: &MessageStore) -> usize {
    store.runtime_info()["commitLogFileCount"].parse().unwrap()
}

/// Every queue read from offset 0 with pulls of 32.
fn read_from_zero(store: &MessageStore) -> Vec<Vec<Bytes>> {
    (0..3)
        .map(|q| {
            let mut out = Vec::new();
            let mut offset = 0;
            loop {
                let r = store.get_message(TOPIC, q, offset, 32, 0, None);
                if r.messages.is_empty() {
                    assert!(
                        matches!(
                            r.status,
                            GetMessageStatus::OffsetOverflowOne
                                | GetMessageStatus::NoMessageInQueue
                        ),
                        "queue {q} stopped at {offset}: {:?}",
                        r.status
                    );
                    return out;
                }
                out.extend(r.messages);
                offset = r.next_begin_offset;
            }
        })
        .collect()
}

/// Waits until every sealed local file is in the tier.
fn wait_uploaded(store: &MessageStore) {
    let sealed = file_count(store) - 1;
    assert!(
        store.wait_tier(WAIT, |s| s.segments >= sealed),
        "tier did not catch up: {:?}, {sealed} sealed files",
        store.tier_status()
    );
}

/// Deletes every local file retention may delete (all but the writer's, if uploaded).
fn expire_local(store: &MessageStore) -> usize {
    let later = SystemTime::now() + Duration::from_secs(400 * 24 * 3600);
    let mut deleted = 0;
    loop {
        // A pass deletes at most 10 files.
        match store
            .run_retention(later, 0.0)
            .unwrap()
            .commit_log_files_deleted
        {
            0 => return deleted,
            n => deleted += n,
        }
    }
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
    let after = read_from_zero(&store);
    assert_eq!(after, before, "read back from the tier");
    // A tag filter works on tier data too.
    let status = store.tier_status().unwrap();
    assert!(
        status.reads > 0 && status.segments == files - 1,
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
    let store = MessageStore::open(tier_config(dir.path(), &keys)).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let files = file_count(&store);
    assert!(
        store.wait_tier(WAIT, |s| s.upload_failures > 0),
        "no upload attempt"
    );
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
    let moto = Moto { child, port };
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
    let Some(moto) = start_moto() else {
        eprintln!(
            "SKIPPED: no S3 test server; set VOSTOK_MOTO to a Python with moto[server] \
             installed (.ci/run does)"
        );
        return;
    };
    create_bucket(moto.port, "vostok-tier");
    let endpoint = format!("http://127.0.0.1:{}", moto.port);
    let keys = [
        ("tieredBackendServiceProvider", "s3"),
        ("objectStoreEndpoint", endpoint.as_str()),
        ("objectStoreBucket", "vostok-tier"),
        ("objectStoreRegion", "us-east-1"),
        ("objectStoreAccessKey", "testing"),
        ("objectStoreSecretKey", "testing"),
        ("tieredStorePathPrefix", "cluster/broker-a"),
    ];
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
