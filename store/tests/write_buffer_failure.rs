//! `transientStorePoolEnable` when writing the buffer to the commitlog fails: puts are
//! refused instead of left waiting for room, the store still shuts down, and the
//! commit thread's retries keep what was acknowledged.
//!
//! The failure is real: the process's file size limit (`RLIMIT_FSIZE`) is lowered
//! under the next commit's file position, so its `pwrite` gets EFBIG. The limit is
//! per process, hence a test binary of its own with one test in it.

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use common::{message, pull_all, small_config};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::{MessageStore, PutMessageStatus, StoreConfig};

const FILE: usize = 1 << 20;
/// Commits of bytes at or past this file position fail while the limit is on.
const LIMIT: u64 = 64 << 10;
const BODY: usize = 1000;

fn config(root: &std::path::Path) -> StoreConfig {
    StoreConfig {
        transient_store_pool_enable: true,
        ..small_config(root, FILE)
    }
}

fn set_file_size_limit(soft: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a struct we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit), 0);
        limit.rlim_cur = soft.min(limit.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
}

fn lift_file_size_limit() {
    set_file_size_limit(libc::RLIM_INFINITY);
}

fn body(k: usize) -> Vec<u8> {
    let mut b = format!("m{k:06}-").into_bytes();
    b.resize(BODY, b'a' + (k % 26) as u8);
    b
}

fn bodies_of(store: &MessageStore) -> Vec<Vec<u8>> {
    pull_all(store, "T", 0)
        .iter()
        .map(|m| MessageExt::decode(m, true).unwrap().body.to_vec())
        .collect()
}

/// Runs `f` on a thread of its own and waits at most a minute for it: a writer left
/// waiting for room, or a commit thread that never stops, blocks its thread for ever.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return within a minute"))
}

fn put(store: &MessageStore, k: usize) -> (PutMessageStatus, i64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let r = rt.block_on(store.put_message(message("T", 0, body(k), String::new())));
    let end = r
        .append
        .map_or(0, |a| a.wrote_offset + a.wrote_bytes as i64);
    (r.status, end)
}

/// Puts messages from `from` until one is refused, with the file size limit under the
/// next commit; the acknowledged ones' numbers, the end of the last, and the refusal.
fn put_until_refused(
    store: &Arc<MessageStore>,
    from: usize,
) -> (Vec<usize>, i64, PutMessageStatus) {
    set_file_size_limit(LIMIT);
    let store = Arc::clone(store);
    bounded("a put with the commitlog failing", move || {
        let mut acked = Vec::new();
        let mut end = 0;
        // A whole file's worth: without the refusal, the writer reaches the file's
        // end and waits there for a commit that never succeeds.
        for k in from..from + 2 * FILE / BODY {
            match put(&store, k) {
                (PutMessageStatus::PutOk, e) => {
                    acked.push(k);
                    end = e;
                }
                (status, _) => return (acked, end, status),
            }
        }
        panic!("every put was accepted while the commitlog could not be written");
    })
}

#[test]
fn a_failing_commit_refuses_puts_and_its_retries_keep_what_was_acknowledged() {
    // SAFETY: ignoring a signal; EFBIG is then the write's only effect.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let dir = tempfile::tempdir().unwrap();

    // 1. The failure lasts, then ends: the retries write what was acknowledged, puts
    // stay refused until restart, and nothing is lost.
    let store = MessageStore::open(config(dir.path())).unwrap();
    let before: Vec<usize> = (0..20).collect();
    for &k in &before {
        assert_eq!(put(&store, k).0, PutMessageStatus::PutOk);
    }
    assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(10)));
    assert!(store.max_phy_offset() < LIMIT as i64);

    let (acked, end, refusal) = put_until_refused(&store, 20);
    lift_file_size_limit();
    assert_eq!(refusal, PutMessageStatus::ServiceNotAvailable);
    assert!(
        end > LIMIT as i64,
        "some acknowledged puts lie past the limit"
    );
    assert!(
        store.wait_for_dispatch(end, Duration::from_secs(10)),
        "the commit thread's retry wrote the acknowledged puts"
    );
    assert_eq!(put(&store, 9999).0, PutMessageStatus::ServiceNotAvailable);
    let info = store.runtime_info();
    assert_eq!(info.get("writeError").map(String::as_str), Some("true"));
    let want: Vec<Vec<u8>> = before.iter().chain(&acked).map(|&k| body(k)).collect();
    assert_eq!(bodies_of(&store), want);
    bounded("shutdown", move || store.shutdown());

    let store = MessageStore::open(config(dir.path())).unwrap();
    assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(10)));
    assert_eq!(bodies_of(&store), want);
    assert_eq!(
        put(&store, 10_000).0,
        PutMessageStatus::PutOk,
        "accepted after a restart"
    );

    // 2. The failure outlasts the store: shutdown still returns; what was written
    // before the failure is there after a restart.
    let written = store.max_phy_offset();
    assert!(store.wait_for_dispatch(written, Duration::from_secs(10)));
    let kept = bodies_of(&store);
    let (_, _, refusal) = put_until_refused(&store, 20_000);
    assert_eq!(refusal, PutMessageStatus::ServiceNotAvailable);
    let stopping = Arc::clone(&store);
    bounded("shutdown with the commitlog failing", move || {
        stopping.shutdown()
    });
    lift_file_size_limit();
    drop(store);

    let store = MessageStore::open(config(dir.path())).unwrap();
    assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(10)));
    let after = bodies_of(&store);
    assert_eq!(after[..kept.len()], kept[..]);
    assert_eq!(put(&store, 30_000).0, PutMessageStatus::PutOk);
}
