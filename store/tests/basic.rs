//! Put, pull, lookups and a clean reopen.

mod common;

use std::sync::Arc;

use common::{message, props, settle, small_config};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::{GetMessageStatus, MessageFilter, MessageStore, PutMessageStatus};

struct Tag(i64);
impl MessageFilter for Tag {
    fn is_matched_by_consume_queue(&self, tags_code: i64) -> bool {
        tags_code == self.0
    }
}

#[tokio::test]
async fn put_pull_query_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), 64 * 1024);
    let store = MessageStore::open(config.clone()).unwrap();
    let mut offsets = Vec::new();
    for n in 0..100 {
        let tag = if n % 2 == 0 { "TagA" } else { "TagB" };
        let key = format!("key{n}");
        let uniq = format!("UNIQ{n:04}");
        let r = store
            .put_message(message(
                "TopicTest",
                n % 3,
                format!("body-{n}"),
                props(Some(tag), Some(&format!("{key} shared")), Some(&uniq)),
            ))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk);
        let a = r.append.unwrap();
        assert_eq!(a.queue_offset, (n / 3) as i64);
        offsets.push(a.wrote_offset);
    }
    settle(&store);
    assert_eq!(store.max_offset_in_queue("TopicTest", 0), 34);
    assert_eq!(store.max_offset_in_queue("TopicTest", 1), 33);
    assert_eq!(store.max_offset_in_queue("Nope", 1), 0);

    let r = store.get_message("TopicTest", 0, 0, 32, 0, None);
    assert_eq!(r.status, GetMessageStatus::Found);
    assert_eq!(r.messages.len(), 32);
    assert_eq!(r.next_begin_offset, 32);
    let msgs = MessageExt::decode_all(&r.concat());
    assert_eq!(msgs.len(), 32);
    assert_eq!(&msgs[1].body[..], b"body-3");
    assert_eq!(msgs[1].queue_offset, 1);

    // Tag filter at consume-queue level: queue 0 holds n = 0, 3, 6, ...: TagA for even n.
    let tag_a = vostok_remoting::protocol::filter::java_hash("TagA") as i64;
    let r = store.get_message("TopicTest", 0, 0, 32, 0, Some(&Tag(tag_a)));
    let msgs = MessageExt::decode_all(&r.concat());
    assert!(msgs.iter().all(|m| m.tags() == Some("TagA")));
    assert_eq!(msgs.len(), 17);

    // Status table.
    let r = store.get_message("TopicTest", 0, 34, 32, 0, None);
    assert_eq!(
        (r.status, r.next_begin_offset),
        (GetMessageStatus::OffsetOverflowOne, 34)
    );
    let r = store.get_message("TopicTest", 0, 99, 32, 0, None);
    assert_eq!(r.status, GetMessageStatus::OffsetOverflowBadly);
    let r = store.get_message("Nope", 0, 5, 32, 0, None);
    assert_eq!(
        (r.status, r.next_begin_offset),
        (GetMessageStatus::NoMatchedLogicQueue, 0)
    );

    // Lookups.
    let m = store.look_message_by_offset(offsets[7]).unwrap();
    assert_eq!(&m.body[..], b"body-7");
    assert!(store.look_message_by_offset(offsets[7] + 1).is_none());
    let q = store.query_message("TopicTest", "key42", 32, 0, i64::MAX);
    assert_eq!(q.messages.len(), 1);
    let q = store.query_message("TopicTest", "shared", 10, 0, i64::MAX);
    assert_eq!(q.messages.len(), 10);
    let q = store.query_message("TopicTest", "UNIQ0042", 32, 0, i64::MAX);
    assert_eq!(
        MessageExt::decode_all(&bytes::Bytes::from(q.messages[0].to_vec()))[0].body,
        "body-42"
    );
    let ts = store.message_store_timestamp("TopicTest", 0, 3).unwrap();
    let o = store.offset_in_queue_by_time("TopicTest", 0, ts);
    assert!(store.message_store_timestamp("TopicTest", 0, o).unwrap() == ts);
    assert!(store.earliest_message_time("TopicTest", 0).is_some());

    let max_phy = store.max_phy_offset();
    store.shutdown();
    drop(store);

    let store: Arc<MessageStore> = MessageStore::open(config).unwrap();
    assert_eq!(store.max_phy_offset(), max_phy);
    assert_eq!(store.max_offset_in_queue("TopicTest", 0), 34);
    let r = store
        .put_message(message("TopicTest", 0, "after", props(None, None, None)))
        .await;
    assert_eq!(r.append.unwrap().queue_offset, 34);
    let q = store.query_message("TopicTest", "key42", 32, 0, i64::MAX);
    assert_eq!(q.messages.len(), 1);
}

#[tokio::test]
async fn second_store_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), 64 * 1024);
    let _store = MessageStore::open(config.clone()).unwrap();
    let err = MessageStore::open(config).unwrap_err();
    assert!(
        matches!(err, vostok_store::StoreError::Locked { .. }),
        "{err}"
    );
}
