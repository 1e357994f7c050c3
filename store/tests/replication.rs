//! The replication seam: a replica fed with the master's raw bytes in arbitrary
//! chunks ends up with the same commitlog, consume queues and index.

mod common;

use common::{message, props, pull_all, settle, small_config};
use vostok_store::{MessageStore, PutMessageStatus, StoreError};

const FILE: usize = 4096;

#[tokio::test]
async fn a_replica_rebuilds_queues_and_index_from_raw_bytes() {
    let master_dir = tempfile::tempdir().unwrap();
    let replica_dir = tempfile::tempdir().unwrap();
    let master = MessageStore::open(small_config(master_dir.path(), FILE)).unwrap();
    let replica = MessageStore::open(small_config(replica_dir.path(), FILE)).unwrap();

    for i in 0..120 {
        let p = props(Some("t"), Some(&format!("key-{i}")), Some(&format!("U{i}")));
        if i % 10 == 9 {
            let batch = (0..3)
                .map(|_| message("B", 1, vec![b'b'; 100 + i], p.clone()))
                .collect();
            assert!(master.put_messages(batch).await.is_ok());
        } else {
            assert!(master
                .put_message(message("A", (i % 3) as i32, vec![b'a'; 50 + i * 3], p))
                .await
                .is_ok());
        }
    }
    master.flush().unwrap();
    // Chunks of 333 bytes: they split records and blanks anywhere.
    let mut chunks = 0;
    while let Some(raw) = master.read_raw(replica.raw_write_end(), 333) {
        replica.append_raw(replica.raw_write_end(), &raw).unwrap();
        chunks += 1;
        if replica.raw_write_end() != replica.max_phy_offset() {
            // Holding part of a record: local puts are refused.
            let r = replica
                .put_message(message("A", 0, "local", String::new()))
                .await;
            assert_eq!(r.status, PutMessageStatus::ServiceNotAvailable);
        }
    }
    assert!(chunks > 50);
    assert_eq!(replica.max_phy_offset(), master.max_phy_offset());
    settle(&master);
    settle(&replica);
    for (topic, q) in [("A", 0), ("A", 1), ("A", 2), ("B", 1)] {
        assert_eq!(
            pull_all(&replica, topic, q),
            pull_all(&master, topic, q),
            "{topic}/{q}"
        );
        assert_eq!(
            replica.next_queue_offset(topic, q),
            master.next_queue_offset(topic, q)
        );
    }
    assert_eq!(
        replica
            .query_message("A", "key-5", 8, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    assert_eq!(
        replica
            .query_message("B", "U19", 8, 0, i64::MAX)
            .messages
            .len(),
        3
    );

    // Wrong offsets and damaged bytes are refused without writing anything.
    let end = replica.raw_write_end();
    assert!(matches!(
        replica.append_raw(end + 1, b"x"),
        Err(StoreError::RawOffset { .. })
    ));
    assert!(matches!(
        replica.append_raw(end, &[0xAB; 200]),
        Err(StoreError::RawData { .. })
    ));
    assert_eq!(replica.raw_write_end(), end);

    // The replica can take over: its next local put continues the queue offsets.
    let r = replica
        .put_message(message("A", 0, "after takeover", String::new()))
        .await;
    assert_eq!(
        r.append.unwrap().queue_offset,
        master.next_queue_offset("A", 0)
    );
}

#[tokio::test]
async fn an_empty_replica_starts_at_a_file_boundary() {
    let master_dir = tempfile::tempdir().unwrap();
    let replica_dir = tempfile::tempdir().unwrap();
    let master = MessageStore::open(small_config(master_dir.path(), FILE)).unwrap();
    for i in 0..40 {
        assert!(master
            .put_message(message(
                "A",
                0,
                vec![b'x'; 300],
                props(None, Some(&format!("k{i}")), None)
            ))
            .await
            .is_ok());
    }
    master.flush().unwrap();
    let from = (master.max_phy_offset() / FILE as i64) * FILE as i64;
    assert!(from > 0);
    let replica = MessageStore::open(small_config(replica_dir.path(), FILE)).unwrap();
    assert!(matches!(
        replica.append_raw(from + 8, b"x"),
        Err(StoreError::RawOffset { .. })
    ));
    let mut at = from;
    while let Some(raw) = master.read_raw(at, 1000) {
        replica.append_raw(at, &raw).unwrap();
        at += raw.len() as i64;
    }
    assert_eq!(replica.min_phy_offset(), from);
    assert_eq!(replica.max_phy_offset(), master.max_phy_offset());
    settle(&master);
    settle(&replica);
    // The replica's queue starts with the first record it holds.
    let tail = pull_all(&replica, "A", 0);
    assert!(!tail.is_empty());
    assert_eq!(
        replica.max_offset_in_queue("A", 0),
        master.max_offset_in_queue("A", 0)
    );
    // Reopening keeps everything.
    let max = replica.max_phy_offset();
    replica.shutdown();
    drop(replica);
    let replica = MessageStore::open(small_config(replica_dir.path(), FILE)).unwrap();
    assert_eq!(
        (replica.min_phy_offset(), replica.max_phy_offset()),
        (from, max)
    );
}

/// Controller mode: a replica that holds more than its new master cuts the tail,
/// consume queues included, and continues at the cut as the next master's log does.
#[tokio::test]
async fn a_replica_truncates_to_the_new_masters_log_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), FILE)).unwrap();
    let mut ends = Vec::new();
    for i in 0..40 {
        let r = store
            .put_message(message("A", 0, vec![b'x'; 60 + i], String::new()))
            .await;
        assert!(r.is_ok());
        ends.push(store.max_phy_offset());
    }
    settle(&store);
    // Refused while it is a master.
    assert!(store.truncate_to(ends[19]).is_err());
    store.set_role(true, false);
    store.truncate_to(ends[19]).unwrap();
    assert_eq!(store.max_phy_offset(), ends[19]);
    assert_eq!(store.raw_write_end(), ends[19]);
    assert_eq!(store.next_queue_offset("A", 0), 20);
    assert_eq!(pull_all(&store, "A", 0).len(), 20);
    // Promoted again: appends continue right after the cut, queue offsets too.
    store.set_role(false, false);
    let r = store
        .put_message(message("A", 0, "after", String::new()))
        .await;
    assert!(r.is_ok());
    assert_eq!(r.append.as_ref().unwrap().wrote_offset, ends[19]);
    assert_eq!(r.append.unwrap().queue_offset, 20);
    settle(&store);
    let all = pull_all(&store, "A", 0);
    assert_eq!(all.len(), 21);
}
