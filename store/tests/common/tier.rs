//! Helpers of the tiered-storage tests: a store with a tier, filled, uploaded, its
//! local files deleted, read back from offset 0.

use std::path::Path;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use vostok_store::{GetMessageStatus, MessageStore, StoreConfig};

use super::{message, props, small_config};

pub const FILE: usize = 4096;
pub const TOPIC: &str = "TierTopic";
pub const WAIT: Duration = Duration::from_secs(30);

pub fn every_hour() -> String {
    (0..24)
        .map(|h| format!("{h:02}"))
        .collect::<Vec<_>>()
        .join(";")
}

pub fn tier_config(root: &Path, keys: &[(&str, &str)]) -> StoreConfig {
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

pub fn fs_keys(tier_dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        (
            "tieredBackendServiceProvider",
            "org.apache.rocketmq.tieredstore.provider.PosixFileSegment".to_owned(),
        ),
        ("tieredStoreFilePath", tier_dir.display().to_string()),
    ]
}

pub fn as_refs<'a>(keys: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    keys.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

pub async fn fill(store: &MessageStore, from: usize, n: usize) {
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
                    Some(&format!("UNIQ{i:08}")),
                ),
            ))
            .await;
        assert!(r.is_ok(), "put {i}: {r:?}");
    }
}

pub fn file_count(store: &MessageStore) -> usize {
    store.runtime_info()["commitLogFileCount"].parse().unwrap()
}

/// Every queue read from offset 0 with pulls of 32.
pub fn read_from_zero(store: &MessageStore) -> Vec<Vec<Bytes>> {
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
pub fn wait_uploaded(store: &MessageStore) {
    let sealed = file_count(store) - 1;
    assert!(
        store.wait_tier(WAIT, |s| s.segments >= sealed),
        "tier did not catch up: {:?}, {sealed} sealed files",
        store.tier_status()
    );
}

/// Deletes every local file retention may delete (all but the writer's, if uploaded).
pub fn expire_local(store: &MessageStore) -> usize {
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
