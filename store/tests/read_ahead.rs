//! The kernel's read-ahead on the store's mappings (Linux): off (`MADV_RANDOM`) for
//! the unwritten part of the file being written, so that pre-faulting or writing it
//! creates pages one at a time, and back on for every file the writer has left, so
//! that consumers reading old messages from disk get read-ahead; off throughout for
//! index files, which are read at random. Observed in `/proc/self/smaps` ("rr" among
//! a mapping's VmFlags).
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{message, props, small_config};
use vostok_store::MessageStore;

const FILE: usize = 64 * 1024;
const WAIT: Duration = Duration::from_secs(10);

/// Per file mapped by this process from `dir`: its name and, for each of its
/// mappings, whether random read is advised.
fn advice_by_file(dir: &Path) -> Vec<(String, Vec<bool>)> {
    common::vm_flag_by_file(dir, "rr")
}

/// Files the writer has left: read-ahead throughout. The file being written: off
/// from where it was written when the pre-fault thread noticed the writer in it (on
/// before that: some pages or none). The next file, made ready ahead: off throughout.
fn as_expected(files: &[(String, Vec<bool>)], last: &str) -> bool {
    files
        .iter()
        .all(|(name, advice)| match name.as_str().cmp(last) {
            std::cmp::Ordering::Less => *advice == [false],
            std::cmp::Ordering::Equal => *advice == [true] || *advice == [false, true],
            std::cmp::Ordering::Greater => *advice == [true],
        })
}

#[tokio::test]
async fn read_ahead_is_off_only_past_the_write_position_of_the_last_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), FILE)).unwrap();
    let commitlog = dir.path().join("commitlog");
    // Three and a half files.
    for _ in 0..(3 * FILE + FILE / 2) / 1024 {
        let r = store
            .put_message(message("T", 0, vec![b'x'; 900], String::new()))
            .await;
        assert!(r.append.is_some(), "{r:?}");
    }
    let last = format!("{:020}", store.max_phy_offset() / FILE as i64 * FILE as i64);
    // The pre-fault thread notices the file change within its 200 ms idle period.
    let deadline = Instant::now() + WAIT;
    let settled = loop {
        let files = advice_by_file(&commitlog);
        let ok = files.len() >= 4 && as_expected(&files, &last);
        if ok || Instant::now() > deadline {
            break files;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        settled.len() >= 4 && as_expected(&settled, &last),
        "last file {last}: {settled:?}"
    );
    store.shutdown();
}

/// A consume queue writes its entries on the thread that dispatches them: a fault
/// with read-ahead there zero-filled megabytes around the page (20 ms at a time, in
/// the middle of a request). Full files get read-ahead back; the file being written
/// has none; index files never have it.
#[tokio::test]
async fn consume_queues_write_without_read_ahead_and_index_files_never_read_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(dir.path(), 1 << 20);
    // Five pages a file; two and a half files of entries.
    config.mapped_file_size_consume_queue = 20 * 1024;
    let puts = 2 * 1024 + 512;
    let store = MessageStore::open(config).unwrap();
    for k in 0..puts {
        let keys = format!("key-{k}");
        let r = store
            .put_message(message(
                "T",
                0,
                vec![b'x'; 100],
                props(None, Some(&keys), None),
            ))
            .await;
        assert!(r.append.is_some(), "{r:?}");
    }
    let deadline = Instant::now() + WAIT;
    while store.max_offset_in_queue("T", 0) < puts && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(store.max_offset_in_queue("T", 0), puts);

    let queue = advice_by_file(&dir.path().join("consumequeue").join("T").join("0"));
    let expected: Vec<(String, Vec<bool>)> = (0..3)
        .map(|k| (format!("{:020}", k * 20 * 1024), vec![k == 2]))
        .collect();
    assert_eq!(queue, expected);

    let index = advice_by_file(&dir.path().join("index"));
    // 200 entries a file (`small_config`), one per key. The newest file's mapping is
    // split where its slot table, kept in memory, ends: random read on both parts.
    assert!(index.len() >= 10, "{index:?}");
    assert!(
        index
            .iter()
            .all(|(_, advice)| !advice.is_empty() && advice.iter().all(|rr| *rr)),
        "{index:?}"
    );
    store.shutdown();
}
