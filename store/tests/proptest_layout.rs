//! Property test: whatever the message sizes, records never straddle files, every
//! full file ends with a correct blank, queue offsets are dense, and a crash-path
//! reopen finds exactly the same records.

mod common;

use common::{message, pull_all, settle, shutdown_as_crashed, small_config};
use proptest::prelude::*;
use vostok_remoting::protocol::message::record::{RecordKind, RecordView};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::MessageStore;

const FILE: usize = 4096;

fn check(bodies: Vec<usize>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path(), FILE);
    let store = MessageStore::open(config.clone()).unwrap();
    let mut offsets = Vec::new();
    for (n, len) in bodies.iter().enumerate() {
        let r = rt.block_on(store.put_message(message(
            "P",
            (n % 2) as i32,
            vec![b'x'; *len],
            String::new(),
        )));
        let a = r.append.unwrap();
        let in_file = (a.wrote_offset % FILE as i64) as usize;
        assert!(
            in_file + a.wrote_bytes + 8 <= FILE,
            "record {n} leaves room for a blank"
        );
        offsets.push(a.wrote_offset);
    }
    store.flush().unwrap();
    // Walk the whole commitlog raw: records back to back, blanks exactly at file ends.
    let mut at = 0;
    let mut seen = Vec::new();
    while at < store.max_phy_offset() {
        let chunk = store.read_raw(at, FILE).unwrap();
        let mut pos = 0;
        while pos < chunk.len() {
            match RecordView::parse(&chunk[pos..], true).unwrap() {
                RecordKind::Message(v) => {
                    seen.push(at + pos as i64);
                    pos += v.total_size();
                }
                RecordKind::Blank => {
                    let remaining = i32::from_be_bytes(chunk[pos..pos + 4].try_into().unwrap());
                    assert_eq!(
                        remaining as i64,
                        FILE as i64 - (at + pos as i64) % FILE as i64
                    );
                    pos = chunk.len();
                }
            }
        }
        at += chunk.len() as i64;
    }
    assert_eq!(seen, offsets);
    settle(&store);
    let before: Vec<_> = (0..2).map(|q| pull_all(&store, "P", q)).collect();
    for (q, records) in before.iter().enumerate() {
        for (i, raw) in records.iter().enumerate() {
            let m = MessageExt::decode(raw, true).unwrap();
            assert_eq!((m.queue_id, m.queue_offset), (q as i32, i as i64));
        }
    }
    shutdown_as_crashed(store, dir.path());
    let store = MessageStore::open(config).unwrap();
    settle(&store);
    let after: Vec<_> = (0..2).map(|q| pull_all(&store, "P", q)).collect();
    assert_eq!(before, after);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn records_never_straddle_files(bodies in proptest::collection::vec(0usize..1500, 1..60)) {
        check(bodies);
    }
}
