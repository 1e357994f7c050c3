//! A deleted topic stays deleted: neither a crash recovery that rebuilds the queues
//! from the commitlog nor a topic re-created with the same name brings its messages
//! back.

mod common;

use common::{message, props, pull_all, settle, shutdown_as_crashed, small_config};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::MessageStore;

const FILE: usize = 64 * 1024;

fn bodies(store: &MessageStore, topic: &str, queue: i32) -> Vec<String> {
    pull_all(store, topic, queue)
        .iter()
        .map(|r| String::from_utf8_lossy(&MessageExt::decode(r, true).unwrap().body).into_owned())
        .collect()
}

#[tokio::test]
async fn a_deleted_topic_stays_deleted_across_a_rebuild_and_a_re_creation() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config.clone()).unwrap();
    for i in 0..10 {
        let p = props(None, Some(&format!("old-{i}")), None);
        assert!(store
            .put_message(message("Gone", 0, format!("old-{i}"), p))
            .await
            .is_ok());
        assert!(store
            .put_message(message("Kept", 0, format!("kept-{i}"), String::new()))
            .await
            .is_ok());
    }
    settle(&store);
    store.delete_topics(&["Gone".to_owned()]).unwrap();
    assert!(pull_all(&store, "Gone", 0).is_empty());

    // Re-created: it starts empty, at queue offset 0.
    for i in 0..3 {
        let p = props(None, Some(&format!("new-{i}")), None);
        let r = store
            .put_message(message("Gone", 0, format!("new-{i}"), p))
            .await;
        assert_eq!(r.append.unwrap().queue_offset, i);
    }
    settle(&store);
    assert_eq!(bodies(&store, "Gone", 0), ["new-0", "new-1", "new-2"]);

    // A crash with the queues and index gone and no checkpoint: everything is rebuilt
    // from the commitlog, which still holds the old records.
    shutdown_as_crashed(store, dir.path());
    for sub in ["consumequeue", "index", "checkpoint"] {
        let path = dir.path().join(sub);
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
    let store = MessageStore::open(config).unwrap();
    settle(&store);
    assert_eq!(bodies(&store, "Gone", 0), ["new-0", "new-1", "new-2"]);
    assert_eq!(store.next_queue_offset("Gone", 0), 3);
    assert_eq!(
        bodies(&store, "Kept", 0).len(),
        10,
        "other topics untouched"
    );
    let old = store.query_message("Gone", "old-3", 8, 0, i64::MAX);
    assert!(
        old.messages.is_empty(),
        "the index forgot the deleted messages"
    );
    let new = store.query_message("Gone", "new-1", 8, 0, i64::MAX);
    assert_eq!(new.messages.len(), 1);
}
