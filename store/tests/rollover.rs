//! Commitlog file roll-over at every boundary: a record that ends exactly where a
//! blank still fits, one byte more or less, a record that fills a file, one that can
//! never fit, and batches.

mod common;

use common::{message, pull_all, settle, shutdown_as_crashed, small_config};
use vostok_remoting::protocol::message::record::{BLANK_MAGIC, MAGIC_V1};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::{MessageStore, PutMessageStatus};

const FILE: usize = 4096;
/// Record length of a message to topic "T" with no properties: 91 + 1 + body.
fn body_for(record_len: usize) -> Vec<u8> {
    vec![b'b'; record_len - 92]
}

#[tokio::test]
async fn every_boundary_of_a_file() {
    const SECOND: usize = 192;
    // d >= 0: the second record fits with d bytes to spare beyond its blank room.
    for d in -9i64..=9 {
        let first = (FILE - (SECOND + 8)) as i64 - d;
        let dir = tempfile::tempdir().unwrap();
        let config = small_config(dir.path(), FILE);
        let store = MessageStore::open(config.clone()).unwrap();
        let a = store
            .put_message(message("T", 0, body_for(first as usize), String::new()))
            .await;
        assert_eq!(a.append.as_ref().unwrap().wrote_offset, 0, "d={d}");
        let b = store
            .put_message(message("T", 0, body_for(SECOND), String::new()))
            .await;
        let b = b.append.unwrap();
        let expected = if d >= 0 { first } else { FILE as i64 };
        assert_eq!(b.wrote_offset, expected, "d={d}");
        assert_eq!(b.wrote_bytes, SECOND);
        store.flush().unwrap();
        if d < 0 {
            // The first file ends with a blank saying how much was left.
            let blank = store.read_raw(first, 8).unwrap();
            assert_eq!(&blank[..4], &((FILE as i64 - first) as i32).to_be_bytes());
            assert_eq!(&blank[4..], &BLANK_MAGIC.to_be_bytes());
        }
        let end = store.max_phy_offset();
        assert_eq!(end, expected + SECOND as i64);
        settle(&store);
        assert_eq!(pull_all(&store, "T", 0).len(), 2, "d={d}");

        // Clean reopen, then crash-path reopen: same end, and the next record lands
        // right after.
        store.shutdown();
        drop(store);
        let store = MessageStore::open(config.clone()).unwrap();
        assert_eq!(store.max_phy_offset(), end, "d={d} after clean reopen");
        shutdown_as_crashed(store, dir.path());
        let store = MessageStore::open(config).unwrap();
        assert_eq!(store.max_phy_offset(), end, "d={d} after crash reopen");
        assert_eq!(store.max_offset_in_queue("T", 0), 2);
        let c = store
            .put_message(message("T", 0, body_for(100), String::new()))
            .await;
        let c = c.append.unwrap();
        assert_eq!(c.queue_offset, 2);
        let remaining = FILE as i64 - end % FILE as i64;
        let expected_c = if 100 + 8 <= remaining {
            end
        } else {
            end + remaining
        };
        assert_eq!(c.wrote_offset, expected_c, "d={d}");
        settle(&store);
        let all = pull_all(&store, "T", 0);
        assert_eq!(all.len(), 3);
        for (n, raw) in all.iter().enumerate() {
            let m = MessageExt::decode(raw, true).unwrap();
            assert_eq!(m.queue_offset, n as i64);
        }
    }
}

#[tokio::test]
async fn a_record_that_fills_a_file_and_one_that_never_fits() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config).unwrap();
    // Exactly FILE - 8: fits, leaving just the blank.
    let a = store
        .put_message(message("T", 0, body_for(FILE - 8), String::new()))
        .await;
    assert_eq!(a.status, PutMessageStatus::PutOk);
    assert_eq!(a.append.unwrap().wrote_offset, 0);
    // FILE - 7 can never fit in a file.
    let b = store
        .put_message(message("T", 0, body_for(FILE - 7), String::new()))
        .await;
    assert_eq!(b.status, PutMessageStatus::MessageIllegal);
    assert!(b.append.is_none());
    let c = store
        .put_message(message("T", 0, body_for(200), String::new()))
        .await;
    assert_eq!(c.append.unwrap().wrote_offset, FILE as i64);
    store.flush().unwrap();
    let blank = store.read_raw(FILE as i64 - 8, 8).unwrap();
    assert_eq!(
        &blank[..],
        &[&8i32.to_be_bytes()[..], &BLANK_MAGIC.to_be_bytes()[..]].concat()[..]
    );
    let head = store.read_raw(FILE as i64, 8).unwrap();
    assert_eq!(&head[4..8], &MAGIC_V1.to_be_bytes());
    settle(&store);
    assert_eq!(pull_all(&store, "T", 0).len(), 2);
}

#[tokio::test]
async fn a_batch_moves_to_the_next_file_as_one_unit() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config).unwrap();
    let a = store
        .put_message(message("T", 1, body_for(3000), String::new()))
        .await;
    assert!(a.is_ok());
    // Three records of 400 bytes: 1200 + 8 > 4096 - 3000, so all go to the next file.
    let batch: Vec<_> = (0..3)
        .map(|_| message("T", 1, body_for(400), String::new()))
        .collect();
    let b = store.put_messages(batch).await;
    let b = b.append.unwrap();
    assert_eq!(b.wrote_offset, FILE as i64);
    assert_eq!(b.wrote_bytes, 1200);
    assert_eq!(b.queue_offset, 1);
    assert_eq!(b.msg_num, 3);
    assert_eq!(b.msg_id.split(',').count(), 3);
    settle(&store);
    let all = pull_all(&store, "T", 1);
    let offsets: Vec<i64> = all
        .iter()
        .map(|r| MessageExt::decode(r, true).unwrap().commit_log_offset)
        .collect();
    assert_eq!(offsets, vec![0, 4096, 4496, 4896]);
    // A batch that can never fit in one file is refused whole.
    let huge: Vec<_> = (0..11)
        .map(|_| message("T", 1, body_for(400), String::new()))
        .collect();
    assert_eq!(
        store.put_messages(huge).await.status,
        PutMessageStatus::MessageIllegal
    );
    assert_eq!(store.next_queue_offset("T", 1), 4);
}
