//! `transientStorePoolEnable`: appends go to a bounded write buffer and a commit
//! thread writes them to the commitlog; readers see only what it has written.

mod common;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{message, pull_all, settle, small_config};
use futures_util::FutureExt;
use vostok_remoting::protocol::message::record::BLANK_MAGIC;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::defer;
use vostok_store::{FlushDiskType, MessageStore, PutMessageStatus, StoreConfig};

fn pool_config(root: &std::path::Path, file: usize, buffer: usize) -> StoreConfig {
    StoreConfig {
        transient_store_pool_enable: true,
        transient_store_buffer_bytes: buffer,
        ..small_config(root, file)
    }
}

/// A body of `len` bytes that says which message it is.
fn body(k: usize, len: usize) -> Vec<u8> {
    let mut b = format!("m{k:06}-").into_bytes();
    b.resize(len, b'a' + (k % 26) as u8);
    b
}

/// Puts `n` messages of varying sizes to queue 0 of "T", then waits until they are
/// committed and dispatched; their bodies.
async fn put_many(store: &MessageStore, from: usize, n: usize) -> Vec<Vec<u8>> {
    let mut bodies = Vec::new();
    let mut end = 0;
    for k in from..from + n {
        let b = body(k, 200 + (k * 37) % 1500);
        let r = store
            .put_message(message("T", 0, b.clone(), String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk, "message {k}");
        let a = r.append.unwrap();
        end = a.wrote_offset + a.wrote_bytes as i64;
        bodies.push(b);
    }
    // The dispatcher reaches `end` only once the commit thread has written it.
    assert!(store.wait_for_dispatch(end, Duration::from_secs(10)));
    bodies
}

/// Compares without printing kilobytes of bodies.
fn assert_bodies(got: Vec<Vec<u8>>, want: &[Vec<u8>]) {
    assert_eq!(got.len(), want.len(), "message count");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g == w,
            "message {k} differs: {} bytes, want {}",
            g.len(),
            w.len()
        );
    }
}

fn bodies_of(store: &MessageStore) -> Vec<Vec<u8>> {
    pull_all(store, "T", 0)
        .iter()
        .map(|m| MessageExt::decode(m, true).unwrap().body.to_vec())
        .collect()
}

/// Runs `f` on a thread of its own with a runtime of its own: a put that waits for
/// room in the buffer blocks its thread.
fn on_thread<T: Send + 'static>(
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> mpsc::Receiver<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(rt.block_on(f));
    });
    rx
}

// The held commit lock is never waited for by a put.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn appends_are_visible_only_once_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(pool_config(dir.path(), 1 << 20, 0)).unwrap();
    let first = put_many(&store, 0, 3).await;
    settle(&store);
    let end = store.max_phy_offset();
    assert!(end > 0);

    let held = store.hold_commits().expect("the write buffer is on");
    let r = store
        .put_message(message("T", 0, b"pending".to_vec(), String::new()))
        .await;
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let a = r.append.unwrap();
    assert_eq!(a.wrote_offset, end);
    assert_eq!(a.queue_offset, 3);
    // Acknowledged, but no reader sees it: not the end, not a slave, not a pull. (A
    // lookup by offset would write the buffer out, which the held lock forbids: see
    // `a_lookup_by_offset_finds_an_acknowledged_record_still_in_the_buffer`.)
    assert_eq!(store.max_phy_offset(), end);
    assert!(store.read_raw(end, 4096).is_none());
    assert_eq!(bodies_of(&store).len(), 3);

    drop(held);
    let new_end = a.wrote_offset + a.wrote_bytes as i64;
    assert!(store.wait_for_dispatch(new_end, Duration::from_secs(10)));
    assert_eq!(store.max_phy_offset(), new_end);
    let m = store.look_message_by_offset(a.wrote_offset).unwrap();
    assert_eq!(&m.body[..], b"pending");
    let mut expected = first;
    expected.push(b"pending".to_vec());
    assert_bodies(bodies_of(&store), &expected);
}

/// An 8 KiB buffer and records of 200 to 1,700 bytes: records keep straddling the
/// buffer's end, and every one reads back whole, before and after a restart.
#[tokio::test]
async fn records_straddling_the_buffer_end() {
    let dir = tempfile::tempdir().unwrap();
    let config = pool_config(dir.path(), 1 << 20, 8192);
    let store = MessageStore::open(config.clone()).unwrap();
    let mut bodies = put_many(&store, 0, 300).await;
    settle(&store);
    assert_bodies(bodies_of(&store), &bodies);
    let (_, commits) = store.write_buffer_stats();
    assert!(commits > 0);
    let end = store.max_phy_offset();
    assert!(end > 10 * 8192, "the buffer wrapped many times: {end}");

    store.shutdown();
    drop(store);
    let store = MessageStore::open(config).unwrap();
    assert_eq!(store.max_phy_offset(), end);
    bodies.extend(put_many(&store, 300, 50).await);
    settle(&store);
    assert_bodies(bodies_of(&store), &bodies);
}

/// The commit thread publishes what it wrote while puts append: a put that reads the
/// written end and the readable end between the thread's two stores must not take the
/// store for a replica holding part of a record (it once answered
/// SERVICE_NOT_AVAILABLE, a few times in a hundred runs of the test above).
#[tokio::test]
async fn puts_racing_the_commit_thread_are_all_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(pool_config(dir.path(), 1 << 20, 4096)).unwrap();
    let mut end = 0;
    for k in 0..5_000 {
        let r = store
            .put_message(message("T", 0, body(k, 100), String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk, "message {k}");
        let a = r.append.unwrap();
        end = a.wrote_offset + a.wrote_bytes as i64;
    }
    assert!(store.wait_for_dispatch(end, Duration::from_secs(10)));
    assert_eq!(bodies_of(&store).len(), 5_000);
}

/// 4 KiB commitlog files: every file ends with its blank, the next record starts the
/// next file, and a restart finds the same end.
#[tokio::test]
async fn files_roll_with_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let file = 4096usize;
    let config = pool_config(dir.path(), file, 0);
    let store = MessageStore::open(config.clone()).unwrap();
    let mut bodies = put_many(&store, 0, 60).await;
    settle(&store);
    let end = store.max_phy_offset();
    assert!(end > 8 * file as i64, "many files: {end}");
    assert_bodies(bodies_of(&store), &bodies);

    // Each full file ends with a blank right after its last record.
    store.flush().unwrap();
    let files: Vec<_> = {
        let mut v: Vec<_> = std::fs::read_dir(config.commit_log_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    };
    let current = (end - 1) / file as i64 * file as i64;
    let closed: Vec<_> = files
        .iter()
        .filter(|p| {
            let base: i64 = p.file_name().unwrap().to_str().unwrap().parse().unwrap();
            base < current
        })
        .collect();
    assert_eq!(closed.len() as i64, current / file as i64);
    for path in closed {
        let data = std::fs::read(path).unwrap();
        let mut pos = 0usize;
        loop {
            let len = i32::from_be_bytes(data[pos..pos + 4].try_into().unwrap());
            let magic = i32::from_be_bytes(data[pos + 4..pos + 8].try_into().unwrap());
            if magic == BLANK_MAGIC {
                assert_eq!(len as usize, file - pos, "{}", path.display());
                break;
            }
            assert!(
                len > 0,
                "a record or the blank, not zeros: {}",
                path.display()
            );
            pos += len as usize;
            if file - pos < 8 {
                break; // no room for a blank: the file's zeros end it
            }
        }
    }

    store.shutdown();
    drop(store);
    let store = MessageStore::open(config).unwrap();
    assert_eq!(store.max_phy_offset(), end);
    bodies.extend(put_many(&store, 60, 20).await);
    settle(&store);
    assert_bodies(bodies_of(&store), &bodies);
}

/// A clean shutdown writes out whatever the buffer holds; the restart recovers all of
/// it and appends go on after it, queue offsets included.
// The held commit lock is never waited for by a put.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn restart_after_a_clean_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let config = pool_config(dir.path(), 64 << 10, 0);
    let store = MessageStore::open(config.clone()).unwrap();
    let mut bodies = put_many(&store, 0, 100).await;
    // Some of it still in the buffer at shutdown.
    let held = store.hold_commits().unwrap();
    let last = store
        .put_message(message("T", 0, b"last".to_vec(), String::new()))
        .await
        .append
        .unwrap();
    bodies.push(b"last".to_vec());
    drop(held);
    let end = last.wrote_offset + last.wrote_bytes as i64;
    store.shutdown();
    drop(store);

    let store = MessageStore::open(config).unwrap();
    assert_eq!(store.max_phy_offset(), end);
    settle(&store);
    assert_eq!(store.max_offset_in_queue("T", 0), 101);
    let next = store
        .put_message(message("T", 0, b"after".to_vec(), String::new()))
        .await
        .append
        .unwrap();
    assert_eq!(next.wrote_offset, end);
    assert_eq!(next.queue_offset, 101);
    bodies.push(b"after".to_vec());
    assert!(store.wait_for_dispatch(end + next.wrote_bytes as i64, Duration::from_secs(10)));
    assert_bodies(bodies_of(&store), &bodies);
}

/// A full buffer makes the writer wait for the commit thread; it never grows.
// The held commit lock is never waited for by a put.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn a_full_buffer_holds_the_writer_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(pool_config(dir.path(), 1 << 20, 8192)).unwrap();
    let end = store.max_phy_offset();
    let held = store.hold_commits().unwrap();
    // Fits: 4 records of about 2 KiB.
    let mut bodies = Vec::new();
    for k in 0..3 {
        let b = body(k, 1900);
        let r = store
            .put_message(message("T", 0, b.clone(), String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::PutOk);
        bodies.push(b);
    }
    assert_eq!(store.write_buffer_stats().0, 0);
    // Does not fit until the buffer is written out.
    let blocked = {
        let store = Arc::clone(&store);
        let b = body(3, 4000);
        bodies.push(b.clone());
        on_thread(async move { store.put_message(message("T", 0, b, String::new())).await })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.write_buffer_stats().0 == 0 {
        assert!(Instant::now() < deadline, "the writer never waited");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        blocked.try_recv().is_err(),
        "the put went through a full buffer"
    );
    assert_eq!(store.max_phy_offset(), end);

    drop(held);
    let r = blocked.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let a = r.append.unwrap();
    assert!(store.wait_for_dispatch(
        a.wrote_offset + a.wrote_bytes as i64,
        Duration::from_secs(10)
    ));
    assert_bodies(bodies_of(&store), &bodies);
}

fn refusal(config: StoreConfig) -> String {
    match MessageStore::open(config) {
        Ok(_) => panic!("the store opened"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn refused_on_a_slave() {
    let dir = tempfile::tempdir().unwrap();
    let mut slave = pool_config(dir.path(), 1 << 20, 0);
    slave.ha.replica = true;
    let e = refusal(slave);
    assert!(
        e.contains("transientStorePoolEnable") && e.contains("master"),
        "{e}"
    );
}

/// SYNC_FLUSH with the write buffer: a send is answered once its bytes are written
/// and flushed, whoever writes them (the unit's end, the commit thread or the group
/// commit itself, which writes what is still pending before it flushes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sync_flush_a_send_is_answered_once_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        flush_disk_type: FlushDiskType::SyncFlush,
        ..pool_config(dir.path(), 1 << 20, 8192)
    };
    let store = MessageStore::open(config).unwrap();
    // Sends outside any unit: only the commit thread or the group commit writes them.
    let mut senders = Vec::new();
    for t in 0..4 {
        let store = store.clone();
        senders.push(tokio::spawn(async move {
            for k in 0..200 {
                let r = store
                    .put_message(message("T", 0, body(t * 1000 + k, 300), String::new()))
                    .await;
                assert_eq!(r.status, PutMessageStatus::PutOk, "sender {t} message {k}");
                let a = r.append.unwrap();
                let end = a.wrote_offset + a.wrote_bytes as i64;
                assert!(
                    store.flushed_phy_offset() >= end,
                    "answered before its bytes were flushed: {} < {end}",
                    store.flushed_phy_offset()
                );
            }
        }));
    }
    for s in senders {
        s.await.unwrap();
    }
    // And inside a unit, as a connection's reader runs them: the first poll appends
    // and waits; the unit's end writes the bytes; the group commit flushes them.
    let store2 = store.clone();
    let flushed = on_thread(async move {
        let mut put =
            Box::pin(store2.put_message(message("T", 0, b"in a unit".to_vec(), String::new())));
        let first = defer::unit(|| (&mut put).now_or_never());
        assert!(first.is_none(), "a SYNC_FLUSH send waits for the disk");
        let a = put.await.append.unwrap();
        (
            store2.flushed_phy_offset(),
            a.wrote_offset + a.wrote_bytes as i64,
        )
    })
    .recv_timeout(Duration::from_secs(30))
    .unwrap();
    assert!(flushed.0 >= flushed.1);
    store.shutdown();
}

/// SYNC_FLUSH with the write buffer, while the commit thread is held mid-commit: the
/// group commit does not answer a send whose bytes are still in the buffer (it writes
/// them itself once it can, and only then flushes).
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn with_sync_flush_nothing_still_in_the_buffer_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        flush_disk_type: FlushDiskType::SyncFlush,
        ..pool_config(dir.path(), 1 << 20, 0)
    };
    let store = MessageStore::open(config).unwrap();
    let held = store.hold_commits().expect("the write buffer is on");
    let mut put = Box::pin(store.put_message(message("T", 0, b"held".to_vec(), String::new())));
    let early = tokio::time::timeout(Duration::from_millis(300), &mut put).await;
    assert!(
        early.is_err(),
        "answered while its bytes were still in the buffer: {:?}",
        early.map(|r| r.status)
    );
    drop(held);
    let r = tokio::time::timeout(Duration::from_secs(10), put)
        .await
        .unwrap();
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let a = r.append.unwrap();
    assert!(store.flushed_phy_offset() >= a.wrote_offset + a.wrote_bytes as i64);
}

/// Puts `n` messages in one unit of work on this thread, as a connection's reader
/// handles the frames of one socket read; each put is done in its one poll. Their
/// bodies and the end of the last.
fn put_in_unit(store: &MessageStore, from: usize, n: usize, len: usize) -> (Vec<Vec<u8>>, i64) {
    defer::unit(|| {
        let mut bodies = Vec::new();
        let mut end = 0;
        for k in from..from + n {
            let b = body(k, len + (k * 37) % 1500);
            let r = store
                .put_message(message("T", 0, b.clone(), String::new()))
                .now_or_never()
                .expect("an ASYNC_FLUSH put is done in one poll");
            assert_eq!(r.status, PutMessageStatus::PutOk, "message {k}");
            let a = r.append.unwrap();
            end = a.wrote_offset + a.wrote_bytes as i64;
            bodies.push(b);
        }
        (bodies, end)
    })
}

/// Appends made inside a unit of work are written out by one commit on the same
/// thread when the unit ends: readable as soon as it returns, with no wait for the
/// commit thread.
#[tokio::test]
async fn appends_in_a_unit_are_committed_at_its_end_on_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(pool_config(dir.path(), 1 << 20, 0)).unwrap();
    let mut bodies = put_many(&store, 0, 3).await;
    settle(&store);
    assert_eq!(
        store.write_buffer_unit_commits(),
        0,
        "no unit: the commit thread"
    );

    // A unit that ends while the commit thread holds the commit lock (finishing its
    // last round) leaves its appends to that thread, so not every unit finds them
    // written when it returns; without the unit's own commit none would.
    let units = 5;
    let mut written_on_return = 0;
    for u in 0..units {
        let n = if u == 0 { 20 } else { 5 };
        let (more, end) = put_in_unit(&store, bodies.len(), n, 200);
        if store.max_phy_offset() == end {
            written_on_return += 1;
        }
        bodies.extend(more);
        assert!(store.wait_for_dispatch(end, Duration::from_secs(10)));
    }
    let commits = store.write_buffer_unit_commits();
    assert!(
        written_on_return >= 1 && commits >= 1,
        "units committed their own appends: {written_on_return} of {units} written on return, {commits} unit commits"
    );
    assert!(commits <= units, "at most one commit per unit: {commits}");
    settle(&store);
    assert_bodies(bodies_of(&store), &bodies);
}

/// A unit whose appends fill the buffer and roll files: the writer, waiting for its
/// own pending bytes inside the unit, is not left waiting for the unit's end (the
/// commit thread writes them). Were it left to the commit thread's once-a-second
/// fallback wake-up, the dozens of rolls here would take far longer than the bound.
#[test]
fn a_unit_that_fills_the_buffer_and_rolls_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = 4096usize;
    let store = MessageStore::open(pool_config(dir.path(), file, 8192)).unwrap();
    let done = {
        let store = Arc::clone(&store);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(put_in_unit(&store, 0, 240, 200));
        });
        rx
    };
    let (bodies, end) = done
        .recv_timeout(Duration::from_secs(10))
        .expect("the unit's appends went through");
    assert!(end > 24 * file as i64, "many files: {end}");
    assert!(end > 4 * 8192, "the buffer wrapped: {end}");
    assert!(
        store.write_buffer_stats().0 > 0,
        "the writer waited inside the unit"
    );
    assert_eq!(store.max_phy_offset(), end);
    settle(&store);
    assert_bodies(bodies_of(&store), &bodies);
}

/// A unit that ends while a commit runs elsewhere does not wait for it: its appends are
/// left to the commit thread, and so are those of a unit that panicked.
// The held commit lock is never waited for by a put.
#[allow(clippy::await_holding_lock)]
#[tokio::test]
async fn a_busy_or_failed_unit_leaves_its_commit_to_the_commit_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(pool_config(dir.path(), 1 << 20, 0)).unwrap();
    let mut bodies = put_many(&store, 0, 3).await;
    settle(&store);
    let start = store.max_phy_offset();

    let held = store.hold_commits().unwrap();
    let (more, end) = put_in_unit(&store, 3, 4, 200);
    assert_eq!(
        store.max_phy_offset(),
        start,
        "not committed under the held lock"
    );
    assert_eq!(store.write_buffer_unit_commits(), 0);
    bodies.extend(more);
    drop(held);
    assert!(store.wait_for_dispatch(end, Duration::from_secs(10)));

    let b = body(7, 300);
    let mut failed_end = 0;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        defer::unit(|| {
            let r = store
                .put_message(message("T", 0, b.clone(), String::new()))
                .now_or_never()
                .unwrap();
            assert_eq!(r.status, PutMessageStatus::PutOk);
            let a = r.append.unwrap();
            failed_end = a.wrote_offset + a.wrote_bytes as i64;
            panic!("the unit fails after its put");
        })
    }));
    assert!(unwound.is_err());
    bodies.push(b);
    assert!(store.wait_for_dispatch(failed_end, Duration::from_secs(10)));
    assert_bodies(bodies_of(&store), &bodies);
    // The next units commit their own appends again (one may end while the commit
    // thread still holds the lock from the round above, and leave them to it).
    let mut written_on_return = false;
    for _ in 0..5 {
        let (more, end) = put_in_unit(&store, bodies.len(), 2, 200);
        written_on_return = store.max_phy_offset() == end;
        bodies.extend(more);
        assert!(store.wait_for_dispatch(end, Duration::from_secs(10)));
        if written_on_return {
            break;
        }
    }
    assert!(
        written_on_return,
        "a unit after the panic committed its appends"
    );
    settle(&store);
    assert_bodies(bodies_of(&store), &bodies);
}

/// A send looked up by its offset while its record is still in the buffer (a
/// transaction's end or a recall right after the send) is found: the lookup writes
/// the buffer out.
#[test]
fn a_lookup_by_offset_finds_an_acknowledged_record_still_in_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(pool_config(dir.path(), 1 << 20, 0)).unwrap();
    defer::unit(|| {
        // Inside a unit the record is written at the unit's end, not before.
        let r = store
            .put_message(message("T", 0, b"half".to_vec(), String::new()))
            .now_or_never()
            .expect("an ASYNC_FLUSH put is done in one poll");
        assert_eq!(r.status, PutMessageStatus::PutOk);
        let a = r.append.unwrap();
        assert!(store.max_phy_offset() <= a.wrote_offset, "not written yet");
        let found = store.look_message_by_offset(a.wrote_offset).expect("found");
        assert_eq!(&found.body[..], b"half");
        assert_eq!(
            store.max_phy_offset(),
            a.wrote_offset + a.wrote_bytes as i64
        );
    });
    // Nothing pending: a lookup past the end finds nothing and writes nothing.
    let end = store.max_phy_offset();
    assert!(store.look_message_by_offset(end).is_none());
    assert_eq!(store.max_phy_offset(), end);
}

/// A batch put inside a unit is left to the commit thread (committed at the unit's end,
/// its `pwrite` and dispatch held up the connection's next request).
#[tokio::test]
async fn a_batch_in_a_unit_goes_to_the_commit_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(pool_config(dir.path(), 1 << 20, 0)).unwrap();
    let bodies: Vec<_> = (0..4).map(|k| body(k, 300)).collect();
    let batch = bodies
        .iter()
        .map(|b| message("T", 0, b.clone(), String::new()))
        .collect();
    let r = defer::unit(|| {
        store
            .put_messages(batch)
            .now_or_never()
            .expect("an ASYNC_FLUSH put is done in one poll")
    });
    assert_eq!(r.status, PutMessageStatus::PutOk);
    let a = r.append.unwrap();
    assert!(store.wait_for_dispatch(
        a.wrote_offset + a.wrote_bytes as i64,
        Duration::from_secs(10)
    ));
    assert_eq!(store.write_buffer_unit_commits(), 0);
    assert_bodies(bodies_of(&store), &bodies);
}
