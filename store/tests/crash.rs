//! Crash test with real processes: a child process appends with SYNC_FLUSH from
//! several tasks and prints one line per acknowledged message; the parent SIGKILLs it
//! at random moments, then recovers the store and checks that every acknowledged
//! message is present, intact and in its queue exactly once, and that nothing torn
//! is readable.
//!
//! The child is this same test binary, re-executed with `--exact crash_child` and
//! the store directory in `VOSTOK_STORE_CRASH_DIR`.
//!
//! A second run does the same with ASYNC_FLUSH and the write buffer
//! (`transientStorePoolEnable`), where an acknowledged message still in the buffer may
//! be lost by design: there the check is that only the newest acknowledged messages go,
//! at most one buffer's worth, and everything before them is whole, dense and found.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{message, props};
use rand::{Rng, SeedableRng};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::record::{RecordKind, RecordView};
use vostok_remoting::protocol::message::MessageExt;
use vostok_store::{FlushDiskType, GetMessageStatus, MessageStore, PutMessageStatus, StoreConfig};

const DIR_ENV: &str = "VOSTOK_STORE_CRASH_DIR";
const ROUND_ENV: &str = "VOSTOK_STORE_CRASH_ROUND";
const MODE_ENV: &str = "VOSTOK_STORE_CRASH_MODE";
/// The write buffer's size in the write-buffer run: small, so that it fills and wraps.
const WRITE_BUFFER: usize = 64 * 1024;
const TOPIC: &str = "CrashTopic";
const QUEUES: i32 = 4;
const TASKS: u32 = 8;
/// Wall-clock budget for the kill rounds (verification comes on top).
const ROUNDS_BUDGET: Duration = Duration::from_secs(40);
const MAX_ROUNDS: u32 = 40;

/// How the store under test writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// SYNC_FLUSH: an acknowledged message is on disk.
    SyncFlush,
    /// ASYNC_FLUSH with the write buffer: an acknowledged message may still be in it.
    WriteBuffer,
    /// SYNC_FLUSH with the write buffer: an acknowledged message is on disk.
    SyncFlushWriteBuffer,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::SyncFlush => "sync-flush",
            Mode::WriteBuffer => "write-buffer",
            Mode::SyncFlushWriteBuffer => "sync-flush-write-buffer",
        }
    }

    /// Whether every acknowledged message must survive the kill.
    fn acked_is_durable(self) -> bool {
        self != Mode::WriteBuffer
    }

    fn from_env() -> Mode {
        match std::env::var(MODE_ENV).as_deref() {
            Ok("write-buffer") => Mode::WriteBuffer,
            Ok("sync-flush-write-buffer") => Mode::SyncFlushWriteBuffer,
            _ => Mode::SyncFlush,
        }
    }
}

fn crash_config(dir: &Path, mode: Mode) -> StoreConfig {
    let (flush_disk_type, pool) = match mode {
        Mode::SyncFlush => (FlushDiskType::SyncFlush, false),
        Mode::WriteBuffer => (FlushDiskType::AsyncFlush, true),
        Mode::SyncFlushWriteBuffer => (FlushDiskType::SyncFlush, true),
    };
    StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        mapped_file_size_commit_log: 128 * 1024,
        mapped_file_size_consume_queue: 20 * 50,
        max_hash_slot_num: 97,
        max_index_num: 300,
        flush_disk_type,
        transient_store_pool_enable: pool,
        transient_store_buffer_bytes: WRITE_BUFFER,
        flush_interval_consume_queue: Duration::from_millis(50),
        clean_resource_interval: Duration::from_secs(3600),
        ..Default::default()
    }
}

/// The body of message `id`: the id, then padding whose length depends on it.
fn body_of(id: &str) -> Bytes {
    let pad = vostok_remoting::protocol::filter::java_hash(id).unsigned_abs() as usize % 1500;
    let mut b = id.as_bytes().to_vec();
    b.push(b'|');
    b.extend(std::iter::repeat_n(b'x', pad));
    Bytes::from(b)
}

fn id_of(body: &[u8]) -> Option<&str> {
    let end = body.iter().position(|b| *b == b'|')?;
    std::str::from_utf8(&body[..end]).ok()
}

/// The child: appends until killed.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return; // not a child: nothing to do in a normal test run
    };
    let round: u32 = std::env::var(ROUND_ENV)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let store = MessageStore::open(crash_config(Path::new(&dir), Mode::from_env()))
            .expect("child opens the store");
        println!("READY");
        let mut tasks = Vec::new();
        for task in 0..TASKS {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for seq in 0u64.. {
                    let queue = (task as i32) % QUEUES;
                    let batch = if task == TASKS - 1 { 3 } else { 1 };
                    let ids: Vec<String> = (0..batch)
                        .map(|b| format!("r{round}-t{task}-s{seq}-b{b}"))
                        .collect();
                    let msgs: Vec<_> = ids
                        .iter()
                        .map(|id| {
                            message(
                                TOPIC,
                                queue,
                                body_of(id),
                                props(Some("T"), Some(&format!("k-{id}")), Some(id)),
                            )
                        })
                        .collect();
                    let r = if batch == 1 {
                        store
                            .put_message(msgs.into_iter().next().expect("one"))
                            .await
                    } else {
                        store.put_messages(msgs).await
                    };
                    if r.status != PutMessageStatus::PutOk {
                        println!("NACK {:?}", r.status);
                        continue;
                    }
                    let a = r.append.expect("appended");
                    for (k, (id, msg_id)) in ids.iter().zip(a.msg_id.split(',')).enumerate() {
                        let (_, phy) = decode_offset_msg_id(msg_id).expect("own msg id");
                        println!("ACK {id} {queue} {} {phy}", a.queue_offset + k as i64);
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
}

#[derive(Debug, Clone)]
struct Ack {
    queue: i32,
    queue_offset: i64,
    phy: i64,
}

fn parse_ack(line: &str) -> Option<(String, Ack)> {
    let mut it = line.strip_prefix("ACK ")?.split(' ');
    let id = it.next()?.to_owned();
    let ack = Ack {
        queue: it.next()?.parse().ok()?,
        queue_offset: it.next()?.parse().ok()?,
        phy: it.next()?.parse().ok()?,
    };
    it.next().is_none().then_some((id, ack))
}

/// When the parent kills a child.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// This long after its first acknowledgement.
    AfterFirstAck(Duration),
    /// This long after it was started: often during recovery or start-up.
    AfterSpawn(Duration),
}

/// Runs one child until it is time to kill it; returns the acks.
fn run_child(dir: &Path, mode: Mode, round: u32, kill: Kill) -> Vec<(String, Ack)> {
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(DIR_ENV, dir)
        .env(ROUND_ENV, round.to_string())
        .env(MODE_ENV, mode.name())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
        s
    });
    let mut acks = Vec::new();
    let start = Instant::now();
    let mut first_ack: Option<Instant> = None;
    let mut exited_early = false;
    loop {
        let due = match kill {
            Kill::AfterFirstAck(d) => first_ack.is_some_and(|t| t.elapsed() >= d),
            Kill::AfterSpawn(d) => start.elapsed() >= d,
        };
        if due || start.elapsed() > Duration::from_secs(20) {
            break;
        }
        match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(line) => {
                if let Some(a) = parse_ack(&line) {
                    first_ack.get_or_insert_with(Instant::now);
                    acks.push(a);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                exited_early = true;
                break;
            }
        }
    }
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    // Lines already printed were acknowledged before the kill.
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
        if let Some(a) = parse_ack(&line) {
            acks.push(a);
        }
    }
    let _ = reader.join();
    let stderr = err_reader.join().unwrap_or_default();
    assert!(!exited_early, "child {round} exited by itself:\n{stderr}");
    assert!(
        first_ack.is_some() || matches!(kill, Kill::AfterSpawn(_)),
        "child {round} acknowledged nothing in 20 s:\n{stderr}"
    );
    acks
}

/// Opens the crashed store and checks everything acknowledged so far. With the write
/// buffer, the acknowledged messages at or past the recovered end are lost by design:
/// they must be the newest, within one buffer of the newest acknowledged byte, and are
/// dropped from `acked` (their offsets are written again by the next round).
fn verify(dir: &Path, mode: Mode, acked: &mut HashMap<String, Ack>) {
    let store = MessageStore::open(crash_config(dir, mode)).expect("recovery");
    assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(30)));
    let end = store.max_phy_offset();
    let lost: Vec<(String, Ack)> = acked
        .iter()
        .filter(|(_, a)| a.phy >= end)
        .map(|(id, a)| (id.clone(), a.clone()))
        .collect();
    if mode.acked_is_durable() {
        assert!(
            lost.is_empty(),
            "acknowledged past the recovered end {end}: {lost:?}"
        );
    }
    if let Some(newest) = acked.values().map(|a| a.phy).max() {
        // The newest acknowledged record starts at `newest` and is at most ~3 KiB long.
        assert!(
            newest < end + (WRITE_BUFFER + 8 * 1024) as i64,
            "lost more than the write buffer holds: end {end}, newest ack at {newest}"
        );
    }
    if !lost.is_empty() {
        eprintln!(
            "{}: {} acknowledged messages lost past {end}",
            mode.name(),
            lost.len()
        );
    }
    for (id, _) in &lost {
        acked.remove(id);
    }

    // Every record in the commitlog is whole: walk it raw with CRC checks.
    let mut off = store.min_phy_offset();
    let file_size = 128 * 1024;
    let mut records = 0;
    while off < store.max_phy_offset() {
        let chunk = store
            .read_raw(off, file_size)
            .expect("raw bytes below the end");
        let mut pos = 0;
        while pos < chunk.len() {
            match RecordView::parse(&chunk[pos..], true).expect("no torn record below the end") {
                RecordKind::Message(v) => {
                    assert_eq!(v.physical_offset(), off + pos as i64);
                    pos += v.total_size();
                    records += 1;
                }
                RecordKind::Blank => pos = chunk.len(),
            }
        }
        off += chunk.len() as i64;
    }
    assert!(
        records >= acked.len(),
        "{records} records for {} acks",
        acked.len()
    );

    // Every acknowledged message is intact where its ack said.
    for (id, ack) in acked.iter() {
        let m = store
            .look_message_by_offset(ack.phy)
            .unwrap_or_else(|| panic!("acknowledged message {id} at {} is gone", ack.phy));
        assert_eq!(id_of(&m.body), Some(id.as_str()));
        assert_eq!(m.body, body_of(id));
        assert_eq!(
            (m.queue_id, m.queue_offset),
            (ack.queue, ack.queue_offset),
            "{id}"
        );
    }

    // Each queue is dense, whole, and holds every acknowledged message exactly once.
    let mut by_queue: BTreeMap<i32, HashSet<&str>> = BTreeMap::new();
    for (id, ack) in acked.iter() {
        by_queue.entry(ack.queue).or_default().insert(id);
    }
    for queue in 0..QUEUES {
        let max = store.max_offset_in_queue(TOPIC, queue);
        let mut seen = HashSet::new();
        let mut offset = store.min_offset_in_queue(TOPIC, queue);
        while offset < max {
            let r = store.get_message(TOPIC, queue, offset, 32, 0, None);
            assert_eq!(
                r.status,
                GetMessageStatus::Found,
                "queue {queue} offset {offset}"
            );
            for raw in &r.messages {
                let m = MessageExt::decode(raw, true).expect("whole record");
                assert_eq!(m.queue_offset, offset, "dense queue offsets");
                let id = id_of(&m.body).expect("body id").to_owned();
                assert!(seen.insert(id.clone()), "{id} twice in queue {queue}");
                offset += 1;
            }
            assert_eq!(r.next_begin_offset, offset);
        }
        for id in by_queue.get(&queue).into_iter().flatten() {
            assert!(
                seen.contains(*id),
                "acknowledged {id} missing from queue {queue}"
            );
        }
    }

    // The index finds acknowledged messages by key and by unique key.
    for (id, _) in acked.iter().step_by(97) {
        let q = store.query_message(TOPIC, id, 4, 0, i64::MAX);
        assert_eq!(q.messages.len(), 1, "unique key {id}");
        let q = store.query_message(TOPIC, &format!("k-{id}"), 4, 0, i64::MAX);
        assert_eq!(q.messages.len(), 1, "key k-{id}");
    }
    store.shutdown();
}

#[test]
fn acknowledged_messages_survive_sigkill() {
    crash_rounds(Mode::SyncFlush, ROUNDS_BUDGET);
}

/// With the write buffer only the newest acknowledged messages may go, never one before
/// a message that stayed, and never a torn or doubled record.
#[test]
fn with_the_write_buffer_only_the_newest_acknowledged_messages_can_go() {
    crash_rounds(Mode::WriteBuffer, Duration::from_secs(15));
}

/// SYNC_FLUSH with the write buffer keeps SYNC_FLUSH's promise: the group commit
/// writes what the buffer holds before it flushes and answers.
#[test]
fn with_sync_flush_and_the_write_buffer_acknowledged_messages_survive_sigkill() {
    crash_rounds(Mode::SyncFlushWriteBuffer, Duration::from_secs(15));
}

fn crash_rounds(mode: Mode, budget: Duration) {
    if std::env::var(DIR_ENV).is_ok() {
        return; // inside a child
    }
    let dir = tempfile::tempdir().unwrap();
    let seed: u64 = std::env::var("VOSTOK_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("crash test seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut acked: HashMap<String, Ack> = HashMap::new();
    let started = Instant::now();
    let mut round = 0;
    // At least 4 rounds unless the machine is very slow; never past the hard cap.
    let more = |round: u32, elapsed: Duration| {
        round < MAX_ROUNDS && (elapsed < budget || (round < 4 && elapsed < Duration::from_secs(70)))
    };
    while more(round, started.elapsed()) {
        let kill = if round % 5 == 4 {
            Kill::AfterSpawn(Duration::from_millis(rng.random_range(0..150)))
        } else {
            Kill::AfterFirstAck(Duration::from_millis(rng.random_range(0..400)))
        };
        for (id, ack) in run_child(dir.path(), mode, round, kill) {
            assert!(
                acked.insert(id.clone(), ack).is_none(),
                "{id} acknowledged twice"
            );
        }
        // Every other round the next child recovers the crash itself (and may be
        // killed while doing so); otherwise the parent recovers and checks. With the
        // write buffer the parent checks every round: a lost message's offsets are
        // written again by the next child.
        if round % 2 == 1 || !mode.acked_is_durable() {
            verify(dir.path(), mode, &mut acked);
        }
        round += 1;
    }
    verify(dir.path(), mode, &mut acked);
    eprintln!(
        "{}: {round} rounds, {} acknowledged messages verified",
        mode.name(),
        acked.len()
    );
}
