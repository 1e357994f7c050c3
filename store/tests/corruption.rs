//! Damage recovery does not look at (files before the last three after a clean exit, or
//! before the checkpoint after a crash): a pull never serves a record that does not
//! parse or whose body CRC does not match; it skips that one record and serves the rest.
//! (Found by the `recovery` fuzz target: a truncated older commitlog file made a pull
//! serve a record whose tail was zeros.)

mod common;

use std::collections::HashSet;

use common::{message, props, pull_all, settle, small_config};
use vostok_remoting::protocol::message::RecordView;
use vostok_store::MessageStore;

const FILE: usize = 4096;

#[tokio::test]
async fn a_pull_skips_damaged_records_in_files_recovery_did_not_walk() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config.clone()).unwrap();
    for i in 0..150 {
        let body = format!("payload-{i:03}-{}", "z".repeat(i % 40));
        let r = store
            .put_message(message("A", 0, body, props(Some("t"), None, None)))
            .await;
        assert!(r.append.is_some(), "put {i}: {:?}", r.status);
    }
    settle(&store);
    // Copies: pulled records are views of the mapped files damaged below.
    let before: Vec<Vec<u8>> = pull_all(&store, "A", 0)
        .iter()
        .map(|b| b.to_vec())
        .collect();
    store.shutdown();
    drop(store);

    let log = dir.path().join("commitlog");
    let mut files: Vec<_> = std::fs::read_dir(&log)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() > 3,
        "a clean start walks the last three files only"
    );
    // Records of the first file: (offset, bytes).
    let first: Vec<(i64, &[u8])> = before
        .iter()
        .map(|b| {
            (
                RecordView::parse_message(b, true)
                    .unwrap()
                    .physical_offset(),
                &b[..],
            )
        })
        .filter(|(phy, b)| (*phy as usize) + b.len() <= FILE)
        .collect();
    assert!(first.len() > 6);
    let mut bytes = std::fs::read(&files[0]).unwrap();
    // A bit flip in the body of the third record...
    let (flipped_at, flipped) = first[2];
    let body = RecordView::parse_message(flipped, true)
        .unwrap()
        .body()
        .to_vec();
    let pos = flipped_at as usize + flipped.windows(body.len()).position(|w| w == body).unwrap();
    bytes[pos + 3] ^= 0x10;
    // ...and the file cut 20 bytes into its sixth record (the rest reads as zeros).
    let (cut_at, _) = first[5];
    bytes.truncate(cut_at as usize + 20);
    std::fs::write(&files[0], &bytes).unwrap();

    let store = MessageStore::open(config).unwrap();
    let after = pull_all(&store, "A", 0);
    for raw in &after {
        RecordView::parse_message(raw, true).expect("a served record parses, CRC included");
    }
    let served: HashSet<i64> = after
        .iter()
        .map(|b| {
            RecordView::parse_message(b, true)
                .unwrap()
                .physical_offset()
        })
        .collect();
    let damaged: HashSet<i64> = std::iter::once(flipped_at)
        .chain(first[5..].iter().map(|(phy, _)| *phy))
        .collect();
    for b in &before {
        let phy = RecordView::parse_message(b, true)
            .unwrap()
            .physical_offset();
        assert_eq!(
            served.contains(&phy),
            !damaged.contains(&phy),
            "record at {phy}: served {}",
            served.contains(&phy)
        );
    }
    store.shutdown();
}
