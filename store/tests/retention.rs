//! Retention: expired commitlog files go at the delete hour or when the disk is
//! full enough; forced deletion stops at what consumers have not consumed unless
//! `cleanFileForciblyEnable`; consume queues and index follow; puts stop when the
//! disk is full.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{message, props, settle, small_config};
use vostok_store::{
    ConsumedOffsets, GetMessageStatus, MessageStore, PutMessageStatus, StoreConfig,
};

const FILE: usize = 4096;

fn config(dir: &std::path::Path, delete_when: &str) -> StoreConfig {
    StoreConfig {
        delete_when: delete_when.to_owned(),
        max_index_num: 40,
        mapped_file_size_consume_queue: 20 * 10,
        ..small_config(dir, FILE)
    }
}

fn every_hour() -> String {
    (0..24)
        .map(|h| format!("{h:02}"))
        .collect::<Vec<_>>()
        .join(";")
}

async fn fill(store: &MessageStore, n: usize) {
    for i in 0..n {
        let r = store
            .put_message(message(
                "Ret",
                (i % 2) as i32,
                vec![b'r'; 300],
                props(None, Some(&format!("k{i}")), None),
            ))
            .await;
        assert!(r.is_ok());
    }
}

#[tokio::test]
async fn expired_files_go_at_the_delete_hour_and_queues_follow() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), &every_hour())).unwrap();
    fill(&store, 100).await;
    settle(&store);
    let files_before = store.runtime_info()["commitLogFileCount"]
        .parse::<usize>()
        .unwrap();
    assert!(files_before >= 8);

    // Not expired yet: nothing goes.
    let r = store.run_retention(SystemTime::now(), 0.10).unwrap();
    assert_eq!(r.commit_log_files_deleted, 0);
    assert_eq!(store.min_phy_offset(), 0);

    // 73 hours later, at a delete hour: all but the newest file go.
    let later = SystemTime::now() + Duration::from_secs(73 * 3600);
    let r = store.run_retention(later, 0.10).unwrap();
    assert_eq!(r.commit_log_files_deleted, files_before - 1);
    let min = store.min_phy_offset();
    assert_eq!(min, ((files_before - 1) * FILE) as i64);
    assert!(r.consume_queue_files_deleted > 0);
    assert!(r.index_files_deleted > 0);
    // Queues start at the first message still stored.
    for q in 0..2 {
        let min_q = store.min_offset_in_queue("Ret", q);
        assert!(min_q > 0);
        let r = store.get_message("Ret", q, 0, 32, 0, None);
        assert_eq!(
            (r.status, r.next_begin_offset),
            (GetMessageStatus::OffsetTooSmall, min_q)
        );
        let r = store.get_message("Ret", q, min_q, 32, 0, None);
        assert_eq!(r.status, GetMessageStatus::Found);
        let first =
            vostok_remoting::protocol::message::MessageExt::decode(&r.messages[0], true).unwrap();
        assert!(first.commit_log_offset >= min);
    }
    assert!(store.look_message_by_offset(0).is_none());
    // Still consistent after a restart.
    store.shutdown();
    drop(store);
    let store = MessageStore::open(config(dir.path(), &every_hour())).unwrap();
    assert_eq!(store.min_phy_offset(), min);
    assert!(store.min_offset_in_queue("Ret", 0) > 0);
}

/// Every group has consumed everything below `next` on every queue.
struct ConsumedUpTo(i64);

impl ConsumedOffsets for ConsumedUpTo {
    fn min_committed_offsets(&self, _topic: &str) -> HashMap<i32, i64> {
        (0..2).map(|q| (q, self.0)).collect()
    }
}

#[tokio::test]
async fn disk_pressure_deletes_early_and_refuses_puts_when_full() {
    let dir = tempfile::tempdir().unwrap();
    // Files are not expired, so the delete hour does not matter here.
    let store = MessageStore::open(config(dir.path(), "04")).unwrap();
    fill(&store, 60).await;
    settle(&store);
    let now = SystemTime::now();

    // Above diskMaxUsedSpaceRatio only expired files may go: none are.
    let r = store.run_retention(now, 0.80).unwrap();
    assert_eq!(r.commit_log_files_deleted, 0);
    // Above diskSpaceCleanForciblyRatio the oldest go even unexpired, but only as far
    // as consumers have consumed them: without consumer offsets, nothing counts as
    // consumed, and the refused loss is reported.
    let r = store.run_retention(now, 0.86).unwrap();
    assert_eq!(r.commit_log_files_deleted, 0);
    assert_eq!(store.min_phy_offset(), 0);
    assert!(r.unconsumed_refused > 0, "{r:?}");
    assert_eq!(
        store.runtime_info()["forcedDeleteUnconsumedRefused"],
        r.unconsumed_refused.to_string()
    );
    // Consumed up to queue offset 10 on both queues: the files holding only those go.
    store.set_consumed_offsets(Arc::new(ConsumedUpTo(10)));
    let r = store.run_retention(now, 0.86).unwrap();
    assert!(r.commit_log_files_deleted > 0 && r.commit_log_files_deleted <= 10);
    assert_eq!(r.unconsumed_dropped, 0);
    assert!(r.unconsumed_refused > 0);
    assert!(store.min_phy_offset() > 0);
    for q in 0..2 {
        assert!(store.min_offset_in_queue("Ret", q) <= 10);
    }
    assert!(!r.disk_full);

    // Above diskSpaceWarningLevelRatio puts are refused, cleanly.
    let r = store.run_retention(now, 0.95).unwrap();
    assert!(r.disk_full);
    let before = store.max_phy_offset();
    let put = store
        .put_message(message("Ret", 0, "x", String::new()))
        .await;
    assert_eq!(put.status, PutMessageStatus::DiskFull);
    assert_eq!(store.max_phy_offset(), before);
    assert_eq!(store.runtime_info()["diskFull"], "true");
    let r = store.run_retention(now, 0.50).unwrap();
    assert!(!r.disk_full);
    assert!(store
        .put_message(message("Ret", 0, "x", String::new()))
        .await
        .is_ok());
}

/// Consumed everything on queue 0; a group is still at the start of queue 1.
struct OneQueueBehind;

impl ConsumedOffsets for OneQueueBehind {
    fn min_committed_offsets(&self, _topic: &str) -> HashMap<i32, i64> {
        HashMap::from([(0, i64::MAX)])
    }
}

#[tokio::test]
async fn a_queue_some_group_has_not_committed_on_holds_a_forced_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), "04")).unwrap();
    fill(&store, 60).await;
    settle(&store);
    store.set_consumed_offsets(Arc::new(OneQueueBehind));
    let r = store.run_retention(SystemTime::now(), 0.86).unwrap();
    assert_eq!(r.commit_log_files_deleted, 0, "{r:?}");
    assert_eq!(store.min_phy_offset(), 0);
    assert!(r.unconsumed_refused > 0, "{r:?}");
    assert_eq!(store.min_offset_in_queue("Ret", 1), 0);
}

#[tokio::test]
async fn clean_file_forcibly_enable_drops_unconsumed_messages_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        clean_file_forcibly_enable: true,
        ..config(dir.path(), "04")
    };
    let store = MessageStore::open(config).unwrap();
    fill(&store, 60).await;
    settle(&store);
    let r = store.run_retention(SystemTime::now(), 0.86).unwrap();
    assert!(r.commit_log_files_deleted > 0);
    assert_eq!(r.unconsumed_refused, 0);
    // Every message below the new start was unconsumed (no consumer offsets).
    let dropped: i64 = (0..2).map(|q| store.min_offset_in_queue("Ret", q)).sum();
    assert_eq!(r.unconsumed_dropped, dropped as u64);
    assert_eq!(
        store.runtime_info()["forcedDeleteUnconsumedDropped"],
        dropped.to_string()
    );
}

#[tokio::test]
async fn manual_delete_ignores_the_hour() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), "04")).unwrap();
    fill(&store, 40).await;
    settle(&store);
    let later = SystemTime::now() + Duration::from_secs(80 * 3600);
    store.delete_expired_files_now();
    let r = store.run_retention(later, 0.10).unwrap();
    assert!(r.commit_log_files_deleted > 0);
}
