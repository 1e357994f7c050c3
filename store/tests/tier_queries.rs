//! Tiered storage beyond pulls: queries by key, by message offset and by time find
//! messages only the tier still has; deleting a topic deletes it from the tier.

mod common;

use std::collections::BTreeMap;

use common::settle;
use common::tier::*;
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::{GetMessageStatus, MessageStore};

/// Every message of the topic, decoded, per queue.
fn decoded(store: &MessageStore) -> BTreeMap<i32, Vec<MessageExt>> {
    read_from_zero(store)
        .into_iter()
        .enumerate()
        .map(|(q, raws)| {
            let msgs = raws
                .iter()
                .map(|r| MessageExt::decode(r, false).unwrap())
                .collect();
            (q as i32, msgs)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_by_key_offset_and_time_reach_messages_only_the_tier_has() {
    let dir = tempfile::tempdir().unwrap();
    let keys = fs_keys(&dir.path().join("tier"));
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let before = decoded(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) > 0);
    let local_min = store.min_phy_offset();

    // Message 7 (queue 1) is in the tier only.
    let m7 = before[&1]
        .iter()
        .find(|m| m.property("KEYS") == Some("key7"))
        .unwrap()
        .clone();
    assert!(m7.commit_log_offset < local_min);
    let found = store.query_message(TOPIC, "key7", 32, 0, i64::MAX);
    assert_eq!(found.messages.len(), 1, "by key");
    let got = MessageExt::decode(&found.messages[0], false).unwrap();
    assert_eq!(got.body, m7.body);
    assert_eq!(got.commit_log_offset, m7.commit_log_offset);
    let uniq = m7.property("UNIQ_KEY").unwrap().to_owned();
    assert_eq!(
        store
            .query_message(TOPIC, &uniq, 32, 0, i64::MAX)
            .messages
            .len(),
        1,
        "by unique key"
    );
    let outside = store.query_message(TOPIC, "key7", 32, 0, m7.store_timestamp - 1);
    assert!(outside.messages.is_empty(), "outside the time span");
    assert!(store
        .query_message("OtherTopic", "key7", 32, 0, i64::MAX)
        .messages
        .is_empty());

    let by_offset = store.look_message_by_offset(m7.commit_log_offset).unwrap();
    assert_eq!(by_offset.body, m7.body, "by commitlog offset (message id)");

    // By time: the first message of the queue stored at or after it.
    for (q, msgs) in &before {
        for m in msgs.iter().filter(|m| m.commit_log_offset < local_min) {
            let want = msgs
                .iter()
                .find(|x| x.store_timestamp >= m.store_timestamp)
                .unwrap()
                .queue_offset;
            assert_eq!(
                store.offset_in_queue_by_time(TOPIC, *q, m.store_timestamp),
                want,
                "queue {q} at {}",
                m.store_timestamp
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_topic_deletes_it_from_the_tier() {
    let dir = tempfile::tempdir().unwrap();
    let tier_dir = dir.path().join("tier");
    let keys = fs_keys(&tier_dir);
    let root = dir.path().join("store");
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    fill(&store, 0, 60).await;
    settle(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) > 0);
    let segments = store.tier_status().unwrap().segments as u64;
    assert!(segments > 0);

    store.delete_topics(&[TOPIC.to_owned()]).unwrap();
    let r = store.get_message(TOPIC, 0, 0, 32, 0, None);
    assert!(r.messages.is_empty(), "{:?}", r.status);
    assert_ne!(r.status, GetMessageStatus::Found);
    // Segments that held only the deleted topic go from the tier at once.
    assert!(
        store.wait_tier(WAIT, |s| s.segments_expired == segments),
        "{:?}",
        store.tier_status()
    );
    let left = std::fs::read_dir(tier_dir.join("commitlog")).map_or(0, |d| d.count());
    assert_eq!(left, 0);

    // Created again, the topic starts from nothing, before and after a restart.
    fill(&store, 1000, 6).await;
    settle(&store);
    let again = read_from_zero(&store);
    assert_eq!(again.iter().map(Vec::len).sum::<usize>(), 6);
    store.shutdown();
    drop(store);
    let store = MessageStore::open(tier_config(&root, &as_refs(&keys))).unwrap();
    assert_eq!(read_from_zero(&store), again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_queue_entries_and_store_times_reach_the_tier() {
    let dir = tempfile::tempdir().unwrap();
    let keys = fs_keys(&dir.path().join("tier"));
    let store =
        MessageStore::open(tier_config(&dir.path().join("store"), &as_refs(&keys))).unwrap();
    fill(&store, 0, 120).await;
    settle(&store);
    let before = decoded(&store);
    wait_uploaded(&store);
    assert!(expire_local(&store) > 0);
    for (q, msgs) in &before {
        assert_eq!(
            store.message_store_timestamp(TOPIC, *q, 0),
            Some(msgs[0].store_timestamp),
            "queue {q}"
        );
        assert_eq!(
            store.earliest_message_time(TOPIC, *q),
            Some(msgs[0].store_timestamp)
        );
        // Entries from 0 cross from the tier into the local queue without a gap.
        let all = store.queue_entries(TOPIC, *q, 0, 1000).unwrap();
        assert_eq!(all.min_offset, 0);
        let got: Vec<(i64, i64)> = all
            .entries
            .iter()
            .map(|e| (e.queue_offset, e.phy_offset))
            .collect();
        let want: Vec<(i64, i64)> = msgs
            .iter()
            .map(|m| (m.queue_offset, m.commit_log_offset))
            .collect();
        assert_eq!(got, want, "queue {q}");
        let some = store.queue_entries(TOPIC, *q, 3, 5).unwrap();
        assert_eq!(
            some.entries
                .iter()
                .map(|e| e.queue_offset)
                .collect::<Vec<_>>(),
            [3, 4, 5, 6, 7]
        );
    }
}
