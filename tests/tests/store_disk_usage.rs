//! A standalone broker takes disk as its messages need it: with the default 1 GiB
//! commitlog files, a broker holding a thousand 1 KiB messages uses a small part of
//! one file's blocks, not the whole file and the next one created ahead.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use vostok_remoting::protocol::response_code;
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions};

const MIB: u64 = 1 << 20;

/// Bytes of disk allocated to the files under `dir` (`st_blocks`, as `du` counts).
fn allocated(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.expect("directory entry");
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            allocated(&entry.path())
        } else {
            meta.blocks() * 512
        };
    }
    total
}

#[tokio::test]
async fn a_thousand_messages_take_megabytes_not_gigabytes() {
    let broker = Broker::start(BrokerOptions::default().set("mappedFileSizeCommitLog", 1u64 << 30));
    let client = TestClient::default();
    let topic = "DiskUsage";
    assert_eq!(
        client.create_topic(&broker.addr, topic, 4).await.code,
        response_code::SUCCESS
    );
    let body = vec![b'x'; 1024];
    for i in 0..1000 {
        client
            .send(&broker.addr, topic, i % 4, body.clone(), String::new())
            .await;
    }
    client.wait_dispatched(&broker.addr).await;

    let commitlog = allocated(&broker.store_dir.join("commitlog"));
    let store = allocated(&broker.store_dir);
    eprintln!(
        "1,000 x 1 KiB: commitlog {} MiB, store {} MiB allocated",
        commitlog / MIB,
        store / MIB
    );
    assert!(
        commitlog >= MIB,
        "the messages are on disk: {commitlog} bytes"
    );
    assert!(
        store <= 200 * MIB,
        "the store takes {} MiB (commitlog {} MiB)",
        store / MIB,
        commitlog / MIB
    );
}
