//! Index lookups: keys, unique keys, time windows, max counts, many index files,
//! transaction types, and lookup by offset message id.

mod common;

use common::{message, props, settle, small_config};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::sysflag::{
    TRANSACTION_COMMIT_TYPE, TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE,
};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::{MessageStore, StoreConfig};

fn config(dir: &std::path::Path) -> StoreConfig {
    StoreConfig {
        max_index_num: 50, // many index files
        ..small_config(dir, 64 * 1024)
    }
}

#[tokio::test]
async fn lookups_by_key_unique_key_and_offset_id() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path())).unwrap();
    let mut ids = Vec::new();
    for i in 0..200 {
        let keys = format!("order-{} shared-{}", i, i % 10);
        let r = store
            .put_message(message(
                "Orders",
                0,
                format!("m{i}"),
                props(None, Some(&keys), Some(&format!("UNIQ-{i}"))),
            ))
            .await;
        ids.push(r.append.unwrap().msg_id);
    }
    // Another topic with the same keys must not answer queries on "Orders".
    store
        .put_message(message(
            "Other",
            0,
            "other",
            props(None, Some("order-5"), None),
        ))
        .await;
    settle(&store);

    let q = store.query_message("Orders", "order-5", 32, 0, i64::MAX);
    let found = MessageExt::decode_all(&bytes::Bytes::from(q.messages.concat()));
    assert_eq!(found.len(), 1);
    assert_eq!(&found[0].body[..], b"m5");
    assert!(q.index_last_update_phyoffset > 0 && q.index_last_update_timestamp > 0);

    // Twenty messages share "shared-3"; the newest come first and max counts.
    let q = store.query_message("Orders", "shared-3", 5, 0, i64::MAX);
    let found = MessageExt::decode_all(&bytes::Bytes::from(q.messages.concat()));
    let bodies: Vec<String> = found
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
        .collect();
    assert_eq!(bodies, ["m193", "m183", "m173", "m163", "m153"]);
    let q = store.query_message("Orders", "shared-3", 64, 0, i64::MAX);
    assert_eq!(q.messages.len(), 20);

    let q = store.query_message("Orders", "UNIQ-150", 32, 0, i64::MAX);
    assert_eq!(q.messages.len(), 1);
    assert!(store
        .query_message("Orders", "nope", 32, 0, i64::MAX)
        .messages
        .is_empty());

    // A window that ends before everything was stored finds nothing.
    let first = store.look_message_by_offset(0).unwrap().store_timestamp;
    let q = store.query_message("Orders", "order-5", 32, 0, first - 10_000);
    assert!(q.messages.is_empty());
    let q = store.query_message("Orders", "order-5", 32, first - 10_000, first + 60_000);
    assert_eq!(q.messages.len(), 1);

    // Offset message id -> store host + commitlog offset -> the record.
    let (host, offset) = decode_offset_msg_id(&ids[42]).unwrap();
    assert_eq!(host.to_string(), common::STORE_HOST);
    assert_eq!(
        &store.look_message_by_offset(offset).unwrap().body[..],
        b"m42"
    );
    assert_eq!(
        &store.look_message_by_msg_id(&ids[42]).unwrap().body[..],
        b"m42"
    );
    assert!(store.look_message_by_msg_id("not an id").is_none());
    assert_eq!(
        store.select_one_message_by_offset(offset).unwrap().len(),
        store.look_message_by_offset(offset).unwrap().store_size as usize
    );

    // All of that still works after a restart.
    store.shutdown();
    drop(store);
    let store = MessageStore::open(config(dir.path())).unwrap();
    assert_eq!(
        store
            .query_message("Orders", "shared-3", 64, 0, i64::MAX)
            .messages
            .len(),
        20
    );
    let index_files: usize = store.runtime_info()["indexFileCount"].parse().unwrap();
    assert!(index_files > 5);
}

#[tokio::test]
async fn transaction_types_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path())).unwrap();
    let with_flag = |sys_flag: i32, key: &str| {
        let mut m = message("Tx", 0, key.to_owned(), props(None, Some(key), None));
        m.sys_flag = sys_flag;
        m
    };
    let prepared = store
        .put_message(with_flag(TRANSACTION_PREPARED_TYPE, "p"))
        .await
        .append
        .unwrap();
    let rollback = store
        .put_message(with_flag(TRANSACTION_ROLLBACK_TYPE, "r"))
        .await
        .append
        .unwrap();
    let commit = store
        .put_message(with_flag(TRANSACTION_COMMIT_TYPE, "c"))
        .await
        .append
        .unwrap();
    assert_eq!(prepared.queue_offset, 0);
    assert_eq!(rollback.queue_offset, 0);
    assert_eq!(
        commit.queue_offset, 0,
        "prepared and rollback records do not advance the queue"
    );
    settle(&store);
    assert_eq!(store.max_offset_in_queue("Tx", 0), 1);
    assert_eq!(
        store
            .query_message("Tx", "p", 8, 0, i64::MAX)
            .messages
            .len(),
        1,
        "prepared is indexed"
    );
    assert!(
        store
            .query_message("Tx", "r", 8, 0, i64::MAX)
            .messages
            .is_empty(),
        "rollback is not"
    );
    assert_eq!(
        store
            .query_message("Tx", "c", 8, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    assert!(store
        .look_message_by_offset(rollback.wrote_offset)
        .is_some());
}

/// An index file named ahead of the clock (the clock was set back, or a damaged record
/// carried a far-future store time) does not stall the next roll: the new file is named
/// just after it. (Found by the `recovery` fuzz target: the roll counted milliseconds up
/// to the newest name, one `stat` each.)
#[tokio::test]
async fn an_index_file_named_in_the_future_does_not_stall_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_index_num: 4,
        ..small_config(dir.path(), 64 * 1024)
    };
    let store = MessageStore::open(config.clone()).unwrap();
    let put = |i: usize| {
        message(
            "T",
            0,
            format!("m{i}"),
            props(None, Some(&format!("k{i}")), None),
        )
    };
    store.put_message(put(0)).await;
    settle(&store);
    store.shutdown();
    drop(store);
    let index_dir = dir.path().join("index");
    let newest = std::fs::read_dir(&index_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    std::fs::rename(&newest, index_dir.join("29991231235959999")).unwrap();

    let store = MessageStore::open(config).unwrap();
    for i in 1..20 {
        store.put_message(put(i)).await;
    }
    if !store.wait_for_dispatch(store.max_phy_offset(), std::time::Duration::from_secs(10)) {
        // The dispatcher is stuck in the roll: shutting down would wait for it forever.
        std::mem::forget(store);
        panic!("the index roll stalled");
    }
    let mut names: Vec<String> = std::fs::read_dir(&index_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert!(names.len() > 2, "{names:?}");
    assert_eq!(names[0], "29991231235959999");
    assert!(names[1..]
        .iter()
        .all(|n| n.len() == 17 && n.as_str() > "29991231235959999"));
    let found = store.query_message("T", "k15", 4, 0, i64::MAX);
    assert_eq!(found.messages.len(), 1);
    store.shutdown();
}

/// Whether this process may lock a page of memory (`RLIMIT_MEMLOCK`, or
/// `CAP_IPC_LOCK`), as the store does for the newest index file's slot table.
#[cfg(target_os = "linux")]
fn can_lock_a_page() -> std::io::Result<()> {
    let page = vec![0u8; 8192];
    let start = page.as_ptr().wrapping_add(page.as_ptr().align_offset(4096));
    // SAFETY: one page inside `page`, unlocked again before `page` is freed.
    unsafe {
        if libc::mlock(start.cast(), 4096) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::munlock(start.cast(), 4096);
    }
    Ok(())
}

/// Per index file mapped by this process from `dir`, in name order: for each of its
/// mappings, whether its pages are kept in memory.
#[cfg(target_os = "linux")]
fn locked_by_file(dir: &std::path::Path) -> Vec<(String, Vec<bool>)> {
    common::vm_flag_by_file(dir, "lo")
}

/// The slot table of the index file taking new entries stays in memory, and only
/// that one: keys land on it at random, and a slot page the kernel had evicted made
/// the dispatching thread wait for a disk read. A full file's table is released, and
/// a restart keeps the newest file's table again.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn only_the_newest_index_files_slot_table_is_kept_in_memory() {
    if let Err(e) = can_lock_a_page() {
        eprintln!("skipped: this process may not lock memory ({e}); the store then warns and runs without");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let index_dir = dir.path().join("index");
    // 1,000 slots: the table ends in the first page, the entries in the second. Three
    // entries a file: a roll every record (a key and a unique key).
    let config = StoreConfig {
        max_hash_slot_num: 1000,
        max_index_num: 4,
        ..small_config(dir.path(), 64 * 1024)
    };
    let expected = |files: &[(String, Vec<bool>)]| {
        let last = files.len() - 1;
        files
            .iter()
            .enumerate()
            .all(|(k, (_, locked))| match k == last {
                true => *locked == [true, false],
                false => locked.iter().all(|l| !l),
            })
    };
    let store = MessageStore::open(config.clone()).unwrap();
    for i in 0..4 {
        let keys = format!("k{i}");
        let uniq = format!("UNIQ-{i}");
        store
            .put_message(message("T", 0, "m", props(None, Some(&keys), Some(&uniq))))
            .await;
    }
    settle(&store);
    let files = locked_by_file(&index_dir);
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(expected(&files), "{files:?}");
    store.shutdown();
    drop(store);

    let store = MessageStore::open(config).unwrap();
    let files = locked_by_file(&index_dir);
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(expected(&files), "{files:?}");
    store.shutdown();
}
