//! Put and pull semantics: validation, delay levels, batches, the arrival listener,
//! pull limits, SYNC_FLUSH acknowledgements, offsets by time.

mod common;

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::{message, props, pull_all, settle, small_config};
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic::SCHEDULE_TOPIC;
use vostok_store::{
    FlushDiskType, GetMessageStatus, MessageArrivingListener, MessageStore, PutMessageStatus,
    StoreConfig,
};

#[tokio::test]
async fn illegal_messages_are_refused_with_a_status() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_message_size: 2000,
        ..small_config(dir.path(), 64 * 1024)
    };
    let store = MessageStore::open(config).unwrap();
    let big = store
        .put_message(message("T", 0, vec![0u8; 2000], String::new()))
        .await;
    assert_eq!(big.status, PutMessageStatus::MessageIllegal);
    let mut long_props = String::new();
    push_pair(&mut long_props, "K", &"v".repeat(40_000));
    let p = store.put_message(message("T", 0, "x", long_props)).await;
    assert_eq!(p.status, PutMessageStatus::PropertiesSizeExceeded);
    for topic in ["", "..", "a/b"] {
        let r = store
            .put_message(message(topic, 0, "x", String::new()))
            .await;
        assert_eq!(r.status, PutMessageStatus::MessageIllegal, "{topic:?}");
    }
    let mixed = vec![
        message("T", 0, "a", String::new()),
        message("T", 1, "b", String::new()),
    ];
    assert_eq!(
        store.put_messages(mixed).await.status,
        PutMessageStatus::MessageIllegal
    );
    assert_eq!(
        store.put_messages(Vec::new()).await.status,
        PutMessageStatus::MessageIllegal
    );
    assert_eq!(store.max_phy_offset(), 0, "nothing was written");
    assert_eq!(store.runtime_info()["putMessageFailedTimes"], "7");
    // A 128+ byte topic uses the v2 record and works end to end.
    let long_topic = "t".repeat(200);
    assert!(store
        .put_message(message(&long_topic, 0, "v2", String::new()))
        .await
        .is_ok());
    settle(&store);
    assert_eq!(
        MessageExt::decode(&pull_all(&store, &long_topic, 0)[0], true)
            .unwrap()
            .topic,
        long_topic
    );
}

/// Parking a delayed message is the broker's business; the store only gives a parked
/// record its delivery time as the consume-queue tag field.
#[tokio::test]
async fn parked_delay_records_carry_their_delivery_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), 64 * 1024)).unwrap();
    let mut p = props(Some("TagA"), None, None);
    push_pair(&mut p, property::DELAY_TIME_LEVEL, "3");
    push_pair(&mut p, property::REAL_TOPIC, "Orders");
    push_pair(&mut p, property::REAL_QUEUE_ID, "5");
    let r = store
        .put_message(message(SCHEDULE_TOPIC, 2, "later", p))
        .await
        .append
        .unwrap();
    // A level above the maximum is read as the maximum (18: 2 h).
    let mut p = String::new();
    push_pair(&mut p, property::DELAY_TIME_LEVEL, "99");
    let r18 = store
        .put_message(message(SCHEDULE_TOPIC, 17, "much later", p))
        .await
        .append
        .unwrap();
    // A delay level on an ordinary topic is left alone.
    let mut p = String::new();
    push_pair(&mut p, property::DELAY_TIME_LEVEL, "3");
    store.put_message(message("Orders", 1, "now", p)).await;
    settle(&store);
    assert_eq!(store.max_offset_in_queue("Orders", 1), 1);
    struct Due(i64);
    impl vostok_store::MessageFilter for Due {
        fn is_matched_by_consume_queue(&self, tags_code: i64) -> bool {
            tags_code == self.0
        }
    }
    let due = Due(r.store_timestamp + 10_000);
    let g = store.get_message(SCHEDULE_TOPIC, 2, 0, 1, 0, Some(&due));
    assert_eq!(g.status, GetMessageStatus::Found);
    let due = Due(r18.store_timestamp + 2 * 3600 * 1000);
    let g = store.get_message(SCHEDULE_TOPIC, 17, 0, 1, 0, Some(&due));
    assert_eq!(g.status, GetMessageStatus::Found);
}

struct Recorder(Mutex<mpsc::Sender<(String, i32, i64, i64)>>);
impl MessageArrivingListener for Recorder {
    fn arriving(
        &self,
        topic: &str,
        queue_id: i32,
        logic_offset: i64,
        tags_code: i64,
        _ts: i64,
        _p: &str,
    ) {
        let _ = self
            .0
            .lock()
            .unwrap()
            .send((topic.to_owned(), queue_id, logic_offset, tags_code));
    }
}

#[tokio::test]
async fn the_arrival_listener_hears_every_visible_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), 64 * 1024)).unwrap();
    let (tx, rx) = mpsc::channel();
    store.set_arrival_listener(Arc::new(Recorder(Mutex::new(tx))));
    let start = Instant::now();
    store
        .put_message(message("L", 3, "a", props(Some("TagA"), None, None)))
        .await;
    let (topic, queue, logic, tags) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let latency = start.elapsed();
    assert_eq!((topic.as_str(), queue, logic), ("L", 3, 1));
    assert_eq!(
        tags,
        vostok_remoting::protocol::filter::java_hash("TagA") as i64
    );
    // When told, the message is already pullable.
    assert_eq!(
        store.get_message("L", 3, 0, 1, 0, None).status,
        GetMessageStatus::Found
    );
    eprintln!("arrival notified {latency:?} after the put");
    let mut prepared = message("L", 3, "half", String::new());
    prepared.sys_flag = vostok_remoting::protocol::message::sysflag::TRANSACTION_PREPARED_TYPE;
    store.put_message(prepared).await;
    store.put_message(message("L", 3, "b", String::new())).await;
    let (_, _, logic, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(logic, 2, "the prepared record is not announced");
}

/// A consumer waiting for the next message of a stream is answered because the append
/// dispatched it or woke the dispatcher, not because the dispatcher looked again after
/// a polling period. Each append is announced before the next is made, so the
/// dispatcher has caught up and parked before every one: a single message is
/// dispatched by its writer, a batch wakes the dispatcher, and nothing waits on a timer.
#[tokio::test]
async fn a_stream_is_announced_by_wake_ups_without_timed_polls() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), 64 * 1024)).unwrap();
    let (tx, rx) = mpsc::channel();
    store.set_arrival_listener(Arc::new(Recorder(Mutex::new(tx))));
    let mut next = 0;
    for i in 0..100 {
        let single = store
            .put_message(message("W", 1, format!("m{i}"), String::new()))
            .await;
        assert!(single.is_ok(), "{:?}", single.status);
        let batch = vec![
            message("W", 1, format!("b{i}"), String::new()),
            message("W", 1, format!("c{i}"), String::new()),
        ];
        let batch = store.put_messages(batch).await;
        assert!(batch.is_ok(), "{:?}", batch.status);
        for _ in 0..3 {
            let (topic, queue, logic, _) = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the append did not reach the dispatcher");
            assert_eq!((topic.as_str(), queue, logic), ("W", 1, next + 1));
            // What the waiting consumer then reads.
            assert_eq!(
                store.get_message("W", 1, next, 1, 0, None).status,
                GetMessageStatus::Found
            );
            next += 1;
        }
    }
    assert_eq!(store.dispatch_timed_waits(), 0, "the dispatcher polled");
}

/// Appends made in one unit of work (a connection reader's poll: the frames of one
/// socket read), singles and a batch alike, are dispatched once the unit ends, on its
/// thread: never during the unit (the appends' answers do not wait for it), and with no
/// dispatcher thread woken. (The dispatcher thread, if still running its last pass
/// when the unit appends, may take some records itself, on its own thread.)
#[test]
fn appends_in_a_unit_are_dispatched_at_its_end_on_its_thread() {
    use std::cell::Cell;
    use std::thread::ThreadId;

    use futures_util::FutureExt;
    use vostok_remoting::support::defer;

    thread_local! {
        /// Set while the unit's appends are made (before its deferred work runs).
        static APPENDING: Cell<bool> = const { Cell::new(false) };
    }
    /// Each record heard: its thread, and whether that thread was still appending.
    struct Heard(Mutex<Vec<(ThreadId, bool)>>);
    impl MessageArrivingListener for Heard {
        fn arriving(&self, _t: &str, _q: i32, _o: i64, _c: i64, _ts: i64, _p: &str) {
            let appending = APPENDING.with(Cell::get);
            self.0
                .lock()
                .unwrap()
                .push((std::thread::current().id(), appending));
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), 64 * 1024)).unwrap();
    let heard = Arc::new(Heard(Mutex::new(Vec::new())));
    store.set_arrival_listener(heard.clone());
    let rounds = 20;
    for round in 0..rounds {
        settle(&store);
        defer::unit(|| {
            APPENDING.with(|a| a.set(true));
            for k in 0..3 {
                let single = store
                    .put_message(message("U", 0, format!("s{round}-{k}"), String::new()))
                    .now_or_never()
                    .expect("an ASYNC_FLUSH put is answered at its first poll");
                assert!(single.is_ok(), "{:?}", single.status);
            }
            let batch = (0..4)
                .map(|k| message("U", 0, format!("b{round}-{k}"), String::new()))
                .collect();
            let batch = store
                .put_messages(batch)
                .now_or_never()
                .expect("an ASYNC_FLUSH batch is answered at its first poll");
            assert!(batch.is_ok(), "{:?}", batch.status);
            APPENDING.with(|a| a.set(false));
        });
    }
    settle(&store);
    assert_eq!(store.max_offset_in_queue("U", 0), rounds * 7);
    let heard = heard.0.lock().unwrap();
    assert_eq!(heard.len() as i64, rounds * 7);
    let me = std::thread::current().id();
    assert!(
        !heard.iter().any(|&(t, appending)| t == me && appending),
        "a record was dispatched on the appending thread before its unit ended"
    );
    let here = heard.iter().filter(|&&(t, _)| t == me).count();
    assert!(
        here > 0,
        "no record was dispatched at a unit's end on the appending thread"
    );
    assert_eq!(store.dispatch_timed_waits(), 0, "the dispatcher polled");
}

#[tokio::test]
async fn pulls_respect_count_byte_and_disk_limits() {
    let dir = tempfile::tempdir().unwrap();
    // Ratio 0: everything counts as "on disk", so the disk limits (8 / 64 KiB) apply.
    let config = StoreConfig {
        access_message_in_memory_max_ratio: 0,
        ..small_config(dir.path(), 1 << 20)
    };
    let store = MessageStore::open(config).unwrap();
    for _ in 0..100 {
        store
            .put_message(message("P", 0, vec![b'p'; 1000], String::new()))
            .await;
    }
    settle(&store);
    let r = store.get_message("P", 0, 0, 32, 0, None);
    assert_eq!((r.messages.len(), r.next_begin_offset), (8, 8));
    assert!(r.suggest_pulling_from_slave);
    let r = store.get_message("P", 0, 10, 3, 0, None);
    assert_eq!((r.messages.len(), r.next_begin_offset), (3, 13));
    let r = store.get_message("P", 0, 10, 32, 2500, None);
    assert_eq!(r.messages.len(), 2, "max bytes");
    let one = r.messages[0].len();
    let r = store.get_message("P", 0, 10, 32, 10, None);
    assert_eq!(r.messages.len(), 1, "the first message always fits");
    assert_eq!(r.buffer_total_size, one);
    assert!(!store.is_in_memory(0));
}

#[tokio::test]
async fn offsets_by_time_and_store_times() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path(), 64 * 1024)).unwrap();
    let mut times = Vec::new();
    for i in 0..20 {
        let r = store
            .put_message(message("Time", 0, format!("{i}"), String::new()))
            .await;
        times.push(r.append.unwrap().store_timestamp);
    }

    settle(&store);
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "store times never go back"
    );
    for (i, t) in times.iter().enumerate() {
        let o = store.offset_in_queue_by_time("Time", 0, *t);
        assert_eq!(
            store.message_store_timestamp("Time", 0, o),
            Some(*t),
            "offset {i}"
        );
        assert!(o <= i as i64);
    }
    assert_eq!(store.offset_in_queue_by_time("Time", 0, 0), 0);
    assert_eq!(store.offset_in_queue_by_time("Time", 0, i64::MAX), 19);
    assert_eq!(store.offset_in_queue_by_time("None", 0, 5), 0);
    assert_eq!(store.earliest_message_time("Time", 0), Some(times[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_flush_acknowledges_durable_writes_in_groups() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        flush_disk_type: FlushDiskType::SyncFlush,
        ..small_config(dir.path(), 1 << 20)
    };
    let store = MessageStore::open(config).unwrap();
    let mut tasks = Vec::new();
    for t in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..20 {
                let r = store
                    .put_message(message("S", t % 4, vec![b's'; 500], String::new()))
                    .await;
                assert_eq!(r.status, PutMessageStatus::PutOk);
                let a = r.append.unwrap();
                assert!(store.flushed_phy_offset() >= a.wrote_offset + a.wrote_bytes as i64);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let info = store.runtime_info();
    let rounds: u64 = info["groupCommitRounds"].parse().unwrap();
    let served: u64 = info["groupCommitWaiters"].parse().unwrap();
    // A writer whose record a concurrent sync already covered does not wait at all.
    assert!(served <= 320);
    assert!(
        rounds < served,
        "some syncs served several writers ({rounds} rounds, {served} waiters)"
    );
    // WAIT=false does not wait for the flush.
    let mut p = String::new();
    push_pair(&mut p, property::WAIT_STORE_MSG_OK, "false");
    assert!(store
        .put_message(message("S", 0, "nowait", p))
        .await
        .is_ok());
}
