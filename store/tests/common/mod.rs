//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses a different subset of these helpers

pub mod tier;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property::{
    push_pair, KEYS, TAGS, UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
};
use vostok_store::{FlushDiskType, MessageInner, MessageStore, StoreConfig};

pub const STORE_HOST: &str = "127.0.0.1:10911";

/// A config with small files so tests roll over quickly.
pub fn small_config(root: &Path, commit_log_file: usize) -> StoreConfig {
    StoreConfig {
        store_path_root_dir: root.to_path_buf(),
        mapped_file_size_commit_log: commit_log_file,
        mapped_file_size_consume_queue: 20 * 64,
        max_hash_slot_num: 97,
        max_index_num: 200,
        flush_disk_type: FlushDiskType::AsyncFlush,
        flush_interval_commit_log: Duration::from_millis(20),
        flush_interval_consume_queue: Duration::from_millis(20),
        clean_resource_interval: Duration::from_secs(3600),
        ..Default::default()
    }
}

pub fn props(tags: Option<&str>, keys: Option<&str>, uniq: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(t) = tags {
        push_pair(&mut s, TAGS, t);
    }
    if let Some(k) = keys {
        push_pair(&mut s, KEYS, k);
    }
    if let Some(u) = uniq {
        push_pair(&mut s, UNIQ_CLIENT_MESSAGE_ID_KEYIDX, u);
    }
    s
}

pub fn message(
    topic: &str,
    queue_id: i32,
    body: impl Into<Bytes>,
    properties: String,
) -> MessageInner {
    let store_host: SocketAddr = STORE_HOST.parse().unwrap();
    let tags = vostok_remoting::protocol::message::property::find(&properties, TAGS);
    MessageInner {
        topic: topic.to_owned(),
        queue_id,
        flag: 0,
        body: body.into(),
        tags_code: tags_code(tags),
        properties,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.1:50000".parse().unwrap(),
        store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// Waits until everything appended so far is dispatched.
pub fn settle(store: &Arc<MessageStore>) {
    assert!(
        store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(10)),
        "dispatcher did not catch up"
    );
}

/// Shuts the store down, then puts the abort file back: the next open takes the
/// crash-recovery path over the same files.
pub fn shutdown_as_crashed(store: Arc<MessageStore>, root: &Path) {
    store.shutdown();
    drop(store);
    std::fs::write(root.join("abort"), b"").unwrap();
}

/// Pulls a whole queue, returning the raw records.
pub fn pull_all(store: &MessageStore, topic: &str, queue_id: i32) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut offset = store.min_offset_in_queue(topic, queue_id);
    loop {
        let r = store.get_message(topic, queue_id, offset, 32, 0, None);
        if r.messages.is_empty() {
            return out;
        }
        out.extend(r.messages);
        offset = r.next_begin_offset;
    }
}

/// Per file mapped by this process from `dir`, in name order: for each of its mappings
/// (the kernel splits a file's mapping where its advice or locking changes), whether
/// `flag` is among the mapping's VmFlags in `/proc/self/smaps` ("rr": random read
/// advised; "lo": pages kept in memory).
#[cfg(target_os = "linux")]
pub fn vm_flag_by_file(dir: &Path, flag: &str) -> Vec<(String, Vec<bool>)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut files: Vec<(String, Vec<bool>)> = Vec::new();
    let mut current: Option<String> = None;
    for line in smaps.lines() {
        if let Some(flags) = line.strip_prefix("VmFlags:") {
            if let Some(name) = current.take() {
                let set = flags.split_whitespace().any(|f| f == flag);
                match files.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, v)) => v.push(set),
                    None => files.push((name, vec![set])),
                }
            }
        } else if is_mapping_header(line) {
            current = line
                .split_whitespace()
                .nth(5)
                .map(Path::new)
                .filter(|p| p.parent() == Some(dir))
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned());
        }
    }
    files.sort();
    files
}

/// Whether an smaps line starts a mapping (`start-end perms ...`, hex addresses).
#[cfg(target_os = "linux")]
fn is_mapping_header(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .and_then(|range| range.split_once('-'))
        .is_some_and(|(a, b)| {
            usize::from_str_radix(a, 16).is_ok() && usize::from_str_radix(b, 16).is_ok()
        })
}
