//! The thread that maps commitlog pages in ahead of the writer is woken when it has
//! something to do: once the writer has used up half of its lead, reached the middle
//! of its file (the next file is then asked for) or entered the next file; not on
//! every append once the file being written is mapped in to its end.

mod common;

use common::{message, small_config};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::MessageStore;

/// Smaller than the pre-fault lead, so that each file is mapped in to its end as soon
/// as the writer enters it: every append from there on used to wake the thread.
const FILE: usize = 256 * 1024;

#[tokio::test]
async fn the_prefault_thread_is_woken_a_few_times_per_file_not_per_append() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), FILE)).unwrap();
    // Four files of ~1 KiB records, at a steady pace (as a broker at a modest rate):
    // the thread goes idle between appends.
    let puts = 4 * FILE / 1024;
    for _ in 0..puts {
        std::thread::sleep(std::time::Duration::from_micros(100));
        let r = store
            .put_message(message("T", 0, vec![b'x'; 900], String::new()))
            .await;
        assert!(r.append.is_some(), "{r:?}");
    }
    let files = store.max_phy_offset() / FILE as i64 + 1;
    let wakeups = store.prefault_wakeups();
    // Per file: the middle and the entry into the next one; then the first appends
    // before the thread first goes idle and its idle period's end (12 or 13 here in
    // all). Every append woke it before (over 1,000).
    assert!(
        wakeups <= puts as u64 / 10,
        "{wakeups} wake-ups for {puts} appends over {files} files"
    );
    store.shutdown();
}

/// The thread writes zeros over pages ahead of the writer before it maps them in. With
/// files far smaller than its lead, it works at the start of each file just as the
/// writer enters it, and several writers append as fast as they can: every record
/// must still read back as it was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_record_is_overwritten_by_the_zeros_written_ahead_of_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(MessageStore::open(small_config(dir.path(), 1 << 20)).unwrap());
    const WRITERS: i32 = 4;
    const PUTS: usize = 3_000;
    let body = |writer: i32, i: usize| -> Vec<u8> {
        let len = 200 + (i * 37 + writer as usize * 101) % 1_500;
        (0..len)
            .map(|k| (k + i + writer as usize) as u8 | 1)
            .collect()
    };
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..PUTS {
                    let r = store
                        .put_message(message("T", w, body(w, i), String::new()))
                        .await;
                    assert!(r.append.is_some(), "{r:?}");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    common::settle(&store);
    assert!(
        store.max_phy_offset() > 8 << 20,
        "spans several files: {}",
        store.max_phy_offset()
    );
    for w in 0..WRITERS {
        let records = common::pull_all(&store, "T", w);
        let msgs = MessageExt::decode_all(&records.concat().into());
        assert_eq!(msgs.len(), PUTS, "writer {w}");
        for (i, m) in msgs.iter().enumerate() {
            assert!(
                m.body[..] == body(w, i)[..],
                "writer {w}, message {i} changed"
            );
        }
    }
    store.shutdown();
}
