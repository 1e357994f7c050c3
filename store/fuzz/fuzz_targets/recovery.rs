//! Store recovery over damaged files. A small valid store (three topics, two queues
//! each, keys in the index, two commitlog files) is built once; each input is a script
//! of damage applied to a fresh copy of its files: truncations, bit flips, zero-filled
//! ranges, overwritten bytes and removed files, over the commitlog, the consume
//! queues, the index and the checkpoint. The first byte's low bit chooses the crash
//! path (an `abort` file) or a clean-exit one. The store is then opened (recovery runs,
//! with `checkCRCOnRecover` on) and everything it serves is read back: every queue by
//! pulling, every key by index query, every original offset by lookup.
//! Contract: no panic; opening may fail with an error; every record served parses
//! (magic, sizes, CRC) and carries one of the bodies that were stored.
//!
//! Run from `store/`: `cargo +nightly fuzz run recovery fuzz/corpus/recovery
//! fuzz/seeds/recovery`.
#![no_main]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property::push_pair;
use vostok_remoting::protocol::message::RecordView;
use vostok_store::{FlushDiskType, MessageInner, MessageStore, StoreConfig};

const TOPICS: [&str; 3] = ["A", "B", "%RETRY%g"];
const MESSAGES: usize = 36;

struct Template {
    /// Every file of the store but its lock, relative to the root, with its bytes.
    files: Vec<(PathBuf, Vec<u8>)>,
    bodies: HashSet<Vec<u8>>,
    offsets: Vec<i64>,
}

fn config(root: &Path) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: root.to_path_buf(),
        mapped_file_size_commit_log: 4096,
        mapped_file_size_consume_queue: 20 * 8,
        max_hash_slot_num: 17,
        max_index_num: 64,
        flush_disk_type: FlushDiskType::AsyncFlush,
        flush_interval_commit_log: Duration::from_millis(10),
        flush_interval_consume_queue: Duration::from_millis(10),
        clean_resource_interval: Duration::from_secs(3600),
        check_crc_on_recover: true,
        ..Default::default()
    }
}

fn message(i: usize) -> MessageInner {
    let mut properties = String::new();
    push_pair(&mut properties, "TAGS", "t");
    push_pair(&mut properties, "KEYS", &format!("k{i} all"));
    push_pair(&mut properties, "UNIQ_KEY", &format!("U{i:04}"));
    MessageInner {
        topic: TOPICS[i % 3].to_owned(),
        queue_id: (i % 2) as i32,
        flag: 0,
        body: Bytes::from(format!("body-{i}-{}", "x".repeat(i * 3))),
        tags_code: tags_code(Some("t")),
        properties,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.1:50000".parse().expect("literal address"),
        store_host: "127.0.0.1:10911".parse().expect("literal address"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn files_under(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read the template")
        .map(|e| e.expect("template entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(root, &path, out);
        } else if path.file_name().is_some_and(|n| n != "lock") {
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .to_path_buf();
            out.push((rel, std::fs::read(&path).expect("read a template file")));
        }
    }
}

fn template() -> &'static Template {
    static TEMPLATE: OnceLock<Template> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = MessageStore::open(config(dir.path())).expect("open the template store");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut bodies = HashSet::new();
        let mut offsets = Vec::new();
        for i in 0..MESSAGES {
            let m = message(i);
            bodies.insert(m.body.to_vec());
            let r = rt.block_on(store.put_message(m));
            offsets.push(r.append.expect("template put").wrote_offset);
        }
        assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(10)));
        store.shutdown();
        drop(store);
        let mut files = Vec::new();
        files_under(dir.path(), dir.path(), &mut files);
        Template {
            files,
            bodies,
            offsets,
        }
    })
}

fn check(raw: &[u8], t: &Template, path: &str) {
    let view = match RecordView::parse_message(raw, true) {
        Ok(view) => view,
        Err(e) => panic!("{path} served a record that does not parse: {e}"),
    };
    assert!(
        t.bodies.contains(view.body()),
        "{path} served a body that was never stored"
    );
}

/// Applies one step of damage; `op` is 4 bytes: file, kind, offset (2 bytes).
fn damage(files: &mut [(PathBuf, Vec<u8>)], op: &[u8], arg: u8) {
    let n = files.len().max(1);
    let Some((path, bytes)) = files.get_mut(op[0] as usize % n) else {
        return;
    };
    if std::env::var_os("RECOVERY_DEBUG").is_some() {
        eprintln!(
            "damage {} ({} bytes): {op:?} {arg}",
            path.display(),
            bytes.len()
        );
    }
    let len = bytes.len();
    let at = if len == 0 {
        0
    } else {
        u16::from_be_bytes([op[2], op[3]]) as usize % len
    };
    match op[1] % 6 {
        0 => bytes.truncate(at),
        1 if len > 0 => bytes[at] ^= 1 << (arg % 8),
        2 => {
            let end = (at + arg as usize + 1).min(len);
            bytes[at..end].fill(0);
        }
        3 if len > 0 => bytes[at] = arg,
        4 => bytes.clear(),
        5 => {
            // A 4-byte word (a size or an offset) overwritten with a big value.
            let end = (at + 4).min(len);
            bytes[at..end].fill(0x7F);
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, script)) = data.split_first() else {
        return;
    };
    let t = template();
    let mut files = t.files.clone();
    files.retain(|(p, _)| p != Path::new("abort"));
    for step in script.chunks_exact(5).take(16) {
        damage(&mut files, &step[..4], step[4]);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for (rel, bytes) in &files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("create a store directory");
        // With mode bit 1 set, a file that damage emptied is removed instead.
        if !(bytes.is_empty() && mode & 2 != 0) {
            std::fs::write(&path, bytes).expect("write a store file");
        }
    }
    if mode & 1 != 0 {
        std::fs::write(dir.path().join("abort"), b"").expect("write the abort file");
    }
    let Ok(store) = MessageStore::open(config(dir.path())) else {
        return;
    };
    for topic in store.topics() {
        for queue_id in store.queue_ids(&topic) {
            let mut offset = store.min_offset_in_queue(&topic, queue_id);
            for _ in 0..MESSAGES * 2 {
                let r = store.get_message(&topic, queue_id, offset, 32, 0, None);
                for raw in &r.messages {
                    check(raw, t, "get_message");
                }
                if r.next_begin_offset <= offset {
                    break;
                }
                offset = r.next_begin_offset;
            }
        }
    }
    for topic in TOPICS {
        for key in ["all", "k1", "k5", "U0003"] {
            for raw in store.query_message(topic, key, 32, 0, i64::MAX).messages {
                check(&raw, t, "query_message");
            }
        }
    }
    for &offset in &t.offsets {
        if let Some(raw) = store.select_one_message_by_offset(offset) {
            check(&raw, t, "select_one_message_by_offset");
        }
    }
    store.shutdown();
});
