//! Recovery: consume queues and index rebuilt from the commitlog; a corrupted or
//! truncated tail cut by hand; consume-queue entries past the commitlog end dropped;
//! the progress it logs.

mod common;

use std::cell::RefCell;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Once};
use std::time::Duration;

use common::{message, props, pull_all, settle, shutdown_as_crashed, small_config};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::{GetMessageStatus, MessageStore, StoreConfig};

const FILE: usize = 8192;

async fn fill(store: &MessageStore, n: usize) -> Vec<i64> {
    let mut offsets = Vec::new();
    for i in 0..n {
        let topic = ["A", "B", "%RETRY%g"][i % 3];
        let r = store
            .put_message(message(
                topic,
                (i % 2) as i32,
                format!("payload-{i}-{}", "z".repeat(i % 50)),
                props(
                    Some("tag"),
                    Some(&format!("key-{i}")),
                    Some(&format!("U{i}")),
                ),
            ))
            .await;
        offsets.push(r.append.unwrap().wrote_offset);
    }
    offsets
}

fn snapshot(store: &MessageStore) -> Vec<(String, i32, Vec<bytes::Bytes>)> {
    let mut out = Vec::new();
    for topic in ["A", "B", "%RETRY%g"] {
        for q in 0..2 {
            out.push((topic.to_owned(), q, pull_all(store, topic, q)));
        }
    }
    out
}

fn remove(path: &Path) {
    if path.is_dir() {
        std::fs::remove_dir_all(path).unwrap();
    } else if path.exists() {
        std::fs::remove_file(path).unwrap();
    }
}

async fn rebuild(crash: bool) {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config.clone()).unwrap();
    fill(&store, 300).await;
    settle(&store);
    let before = snapshot(&store);
    let next: Vec<i64> = ["A", "B"]
        .iter()
        .map(|t| store.next_queue_offset(t, 1))
        .collect();
    if crash {
        shutdown_as_crashed(store, dir.path());
        remove(&dir.path().join("checkpoint"));
    } else {
        store.shutdown();
        drop(store);
    }
    remove(&dir.path().join("consumequeue"));
    remove(&dir.path().join("index"));

    let store = MessageStore::open(config).unwrap();
    settle(&store);
    assert_eq!(snapshot(&store), before, "rebuilt queues are identical");
    let after: Vec<i64> = ["A", "B"]
        .iter()
        .map(|t| store.next_queue_offset(t, 1))
        .collect();
    assert_eq!(after, next);
    let q = store.query_message("B", "key-7", 8, 0, i64::MAX);
    assert_eq!(q.messages.len(), 1);
    let q = store.query_message("A", "U9", 8, 0, i64::MAX);
    assert_eq!(q.messages.len(), 1);
}

#[tokio::test]
async fn consume_queues_and_index_are_rebuilt_after_a_clean_exit() {
    rebuild(false).await;
}

#[tokio::test]
async fn consume_queues_and_index_are_rebuilt_after_a_crash() {
    rebuild(true).await;
}

fn commit_log_file(config: &StoreConfig, base: i64) -> std::path::PathBuf {
    config.commit_log_dir().join(format!("{base:020}"))
}

fn overwrite(path: &Path, at: u64, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
}

/// Corrupts the newest record in the ways a crash can leave it, and checks that
/// recovery cuts exactly that record and that nothing stale comes back later.
#[tokio::test]
async fn a_torn_or_corrupt_tail_is_cut() {
    enum Damage {
        FlipBodyByte,
        ZeroTail,
        GarbageAfterEnd,
        HalfRecordAfterEnd,
        TruncateFile,
    }
    for damage in [
        Damage::FlipBodyByte,
        Damage::ZeroTail,
        Damage::GarbageAfterEnd,
        Damage::HalfRecordAfterEnd,
        Damage::TruncateFile,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = small_config(dir.path(), FILE);
        let store = MessageStore::open(config.clone()).unwrap();
        let offsets = fill(&store, 40).await;
        settle(&store);
        let end = store.max_phy_offset();
        let last = *offsets.last().unwrap();
        let last_msg = store.look_message_by_offset(last).unwrap();
        let queue = (last_msg.topic.clone(), last_msg.queue_id);
        let queue_max = store.max_offset_in_queue(&queue.0, queue.1);
        let base = last - last % FILE as i64;
        let path = commit_log_file(&config, base);
        let in_file = (last - base) as u64;
        let size = last_msg.store_size as u64;
        shutdown_as_crashed(store, dir.path());

        let cut_last = match damage {
            Damage::FlipBodyByte => {
                overwrite(&path, in_file + 90, b"\xff\xfe");
                true
            }
            Damage::ZeroTail => {
                overwrite(&path, in_file + size - 20, &[0u8; 20]);
                true
            }
            Damage::GarbageAfterEnd => {
                overwrite(
                    &path,
                    (end - base) as u64,
                    b"\x00\x00\x01\x00\xda\xa3\x20\xa7garbage",
                );
                false
            }
            Damage::TruncateFile => {
                // The file itself ends inside the last record.
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_len(in_file + size - 30).unwrap();
                true
            }
            Damage::HalfRecordAfterEnd => {
                let raw = std::fs::read(&path).unwrap();
                let record = &raw[in_file as usize..(in_file + size) as usize];
                overwrite(&path, (end - base) as u64, &record[..record.len() / 2]);
                false
            }
        };
        let store = MessageStore::open(config.clone()).unwrap();
        settle(&store);
        if cut_last {
            assert_eq!(store.max_phy_offset(), last);
            assert!(store.look_message_by_offset(last).is_none());
            assert_eq!(store.max_offset_in_queue(&queue.0, queue.1), queue_max - 1);
            let q = store.query_message(&queue.0, "key-39", 8, 0, i64::MAX);
            assert!(q.messages.is_empty(), "the cut record is not found by key");
        } else {
            assert_eq!(store.max_phy_offset(), end);
            assert_eq!(store.max_offset_in_queue(&queue.0, queue.1), queue_max);
        }
        // Everything before is intact.
        for &o in &offsets[..offsets.len() - 1] {
            assert!(store.look_message_by_offset(o).is_some());
        }
        // The cut area is zero on disk now, so a later crash cannot resurrect it, and
        // a short file is back to full size.
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(raw.len(), FILE);
        let from = (store.max_phy_offset() - base) as usize;
        assert!(raw[from..].iter().all(|b| *b == 0), "tail zeroed");
        // Appending continues at the cut, with the freed queue offset.
        let next = store.max_offset_in_queue(&queue.0, queue.1);
        let cut_at = store.max_phy_offset();
        let r = store
            .put_message(message(&queue.0, queue.1, "again", props(None, None, None)))
            .await;
        let r = r.append.unwrap();
        assert_eq!(r.wrote_offset, cut_at);
        assert_eq!(r.queue_offset, next);
        settle(&store);
        let all = pull_all(&store, &queue.0, queue.1);
        let last = MessageExt::decode(all.last().unwrap(), true).unwrap();
        assert_eq!(&last.body[..], b"again");
    }
}

/// The consume queue is ahead of a commitlog whose tail was lost: its entries past
/// the end are dropped and pulls never see them.
#[tokio::test]
async fn consume_queue_entries_past_the_end_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config.clone()).unwrap();
    let offsets = fill(&store, 60).await;
    settle(&store);
    let cut = offsets[50];
    let max_a0 = store.max_offset_in_queue("A", 0);
    shutdown_as_crashed(store, dir.path());
    // Lose everything from record 50 on (all files after it too).
    let base = cut - cut % FILE as i64;
    let path = commit_log_file(&config, base);
    let mut raw = std::fs::read(&path).unwrap();
    for b in &mut raw[(cut - base) as usize..] {
        *b = 0;
    }
    std::fs::write(&path, raw).unwrap();
    let mut next = base + FILE as i64;
    while commit_log_file(&config, next).exists() {
        std::fs::remove_file(commit_log_file(&config, next)).unwrap();
        next += FILE as i64;
    }
    let store = MessageStore::open(config).unwrap();
    settle(&store);
    assert_eq!(store.max_phy_offset(), cut);
    // Records 0..50 round-robin over 3 topics and 2 queues: A/0 holds i = 0, 6, ..., 48.
    let expected_a0 = (0..50).filter(|i| i % 6 == 0).count() as i64;
    assert!(expected_a0 < max_a0);
    assert_eq!(store.max_offset_in_queue("A", 0), expected_a0);
    let all = pull_all(&store, "A", 0);
    assert_eq!(all.len() as i64, expected_a0);
    let r = store.get_message("A", 0, expected_a0, 32, 0, None);
    assert_eq!(r.status, GetMessageStatus::OffsetOverflowOne);
}

/// A consume-queue entry torn by a crash (valid-looking, wrong tag code) is rewritten
/// by the re-dispatch.
#[tokio::test]
async fn a_torn_consume_queue_entry_is_repaired() {
    struct Tag(i64);
    impl vostok_store::MessageFilter for Tag {
        fn is_matched_by_consume_queue(&self, tags_code: i64) -> bool {
            tags_code == self.0
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config.clone()).unwrap();
    fill(&store, 30).await;
    settle(&store);
    shutdown_as_crashed(store, dir.path());
    remove(&dir.path().join("checkpoint"));
    // Entry 2 of A/0: zero the low half of its tag code.
    let cq = dir
        .path()
        .join("consumequeue/A/0")
        .join(format!("{:020}", 0));
    overwrite(&cq, 2 * 20 + 16, &[0u8; 4]);
    let store = MessageStore::open(config).unwrap();
    let tag = Tag(vostok_remoting::protocol::filter::java_hash("tag") as i64);
    let r = store.get_message("A", 0, 2, 1, 0, Some(&tag));
    assert_eq!(r.status, GetMessageStatus::Found);
    assert_eq!(r.next_begin_offset, 3);
}

thread_local! {
    /// Where this thread's log lines go while a test captures them.
    static CAPTURED: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Writes a log line into the capture of the thread that logs it, if any. Behind one
/// subscriber installed for the whole test binary: a subscriber set for one thread
/// only misses lines whose call site another test's thread registered meanwhile.
struct ThisThread;

impl Write for ThisThread {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CAPTURED.with_borrow_mut(|c| {
            if let Some(c) = c {
                c.extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Opens the store at `config` (recovery runs on this thread) and returns what it
/// logged meanwhile, line by line.
fn open_logged(config: StoreConfig) -> (Arc<MessageStore>, Vec<String>) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(|| ThisThread)
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    });
    CAPTURED.set(Some(Vec::new()));
    let store = MessageStore::open(config).expect("the store opens");
    let text = CAPTURED.take().unwrap_or_default();
    let text = String::from_utf8_lossy(&text).into_owned();
    (store, text.lines().map(str::to_owned).collect())
}

/// The number after `field=` in `line`.
fn field(line: &str, name: &str) -> Option<u64> {
    let rest = &line[line.find(&format!(" {name}="))? + name.len() + 2..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The progress lines of `phase`, each as (checked bytes, files checked).
fn progress(lines: &[String], phase: &str) -> Vec<(u64, u64)> {
    lines
        .iter()
        .filter(|l| {
            l.contains("store recovery in progress") && l.contains(&format!("phase=\"{phase}\""))
        })
        .map(|l| {
            assert!(field(l, "elapsed_ms").is_some(), "{l}");
            assert!(
                field(l, "total_bytes").is_some() && field(l, "files").is_some(),
                "{l}"
            );
            (
                field(l, "checked_bytes").expect("checked_bytes"),
                field(l, "files_checked").expect("files_checked"),
            )
        })
        .collect()
}

fn assert_moves(lines: &[String], phase: &str) {
    let seen = progress(lines, phase);
    assert!(seen.len() >= 3, "{phase}: {seen:?} in {lines:#?}");
    assert!(
        seen.windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1),
        "{phase} goes forward: {seen:?}"
    );
    let (bytes, files) = *seen.last().expect("a line");
    assert!(bytes > 0 && files > 0, "{phase}: {seen:?}");
}

/// With a zero `recoveryProgressInterval` every look at the clock logs a line, so the
/// lines show without waiting: the walk of a crashed store's commitlog, the dispatch
/// that rebuilds lost consume queues after a clean exit, and the time each took.
#[tokio::test]
async fn a_recovery_logs_its_progress_and_how_long_it_took() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        recovery_progress_interval: Duration::ZERO,
        ..small_config(dir.path(), FILE)
    };
    let store = MessageStore::open(config.clone()).unwrap();
    fill(&store, 1200).await;
    settle(&store);
    shutdown_as_crashed(store, dir.path());
    remove(&dir.path().join("checkpoint"));

    let (store, lines) = open_logged(config.clone());
    let started = lines
        .iter()
        .find(|l| l.contains("store recovery started"))
        .expect("a first line");
    assert!(started.contains("clean_exit=false"), "{started}");
    assert!(field(started, "commitlog_files").unwrap() > 10, "{started}");
    assert_moves(&lines, "commitlog");
    let done = lines
        .iter()
        .find(|l| l.contains("store recovered"))
        .unwrap_or_else(|| panic!("a last line in {lines:#?}"));
    assert!(field(done, "elapsed_ms").is_some(), "{done}");
    assert_eq!(field(done, "records"), Some(1200), "{done}");

    store.shutdown();
    drop(store);
    remove(&dir.path().join("consumequeue"));
    remove(&dir.path().join("index"));
    let (store, lines) = open_logged(config);
    assert_moves(&lines, "dispatch");
    assert!(lines.iter().any(|l| l.contains("store recovered")));
    assert_eq!(pull_all(&store, "A", 0).len(), 200, "rebuilt");
}

/// The periodic flush leaves the newest index file's slot table to the kernel's
/// writeback, so a power cut can lose it; after a crash it is rebuilt from the entries
/// the file's header counts. Here it is lost outright: zeroed on disk.
#[tokio::test]
async fn a_lost_slot_table_of_the_newest_index_file_is_rebuilt_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config.clone()).unwrap();
    // Two entries a message (key and unique key), 200 a file: the newest holds 100.
    fill(&store, 150).await;
    settle(&store);
    shutdown_as_crashed(store, dir.path());

    let mut files: Vec<_> = std::fs::read_dir(dir.path().join("index"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let newest = files.last().unwrap();
    let slots = vec![0u8; config.max_hash_slot_num as usize * 4];
    overwrite(newest, 40, &slots);

    let store = MessageStore::open(config).unwrap();
    for i in 100..150 {
        let topic = ["A", "B", "%RETRY%g"][i % 3];
        for key in [format!("key-{i}"), format!("U{i}")] {
            let q = store.query_message(topic, &key, 8, 0, i64::MAX);
            assert_eq!(q.messages.len(), 1, "{topic} {key}");
        }
    }
    store.shutdown();
}
