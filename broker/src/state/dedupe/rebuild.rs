//! Rebuilding the duplication window at start from the commitlog tail
//! (docs/semantics.md#duplication-window).
//!
//! The commitlog is the truth: a message whose answer was lost to a crash is in it
//! (recovery kept it), so reading the records stored within the longest window
//! restores exactly what the window held, with no extra write on the send path and no
//! file of its own to keep in step with the commitlog. The scan starts at the newest
//! commitlog file whose first record is older than the window (each file's first
//! record is read to find it), so it reads the window's records plus at most the part
//! of one file before them.
//!
//! A parked message (delayed, timer, transaction half) counts under its real topic and
//! queue, as its send was answered; copies made later with the same unique id (the
//! delivered message, a committed transaction) find its entry there and are skipped.

use std::time::{Duration, Instant};

use tracing::info;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::record::{RecordKind, RecordView};
use vostok_remoting::support::time::now_millis;
use vostok_store::MessageStore;

use super::{applies_to, DedupeWindow, Original};

/// Reads the records of the last `longest` and restores the entries still inside the
/// window of their topic (`window_of`, zero when the topic has none).
pub(crate) fn rebuild(
    window: &DedupeWindow,
    store: &MessageStore,
    longest: Duration,
    window_of: impl Fn(&str) -> Duration,
) {
    let began = Instant::now();
    let now = now_millis();
    let cutoff = now.saturating_sub(longest.as_millis() as i64);
    let file_size = store.config().mapped_file_size_commit_log.max(1) as i64;
    let (min, max) = (store.min_phy_offset(), store.max_phy_offset());
    if max <= min {
        return;
    }
    let start = scan_start(store, min, max, file_size, cutoff);
    let (mut pos, mut records, mut restored) = (start, 0u64, 0u64);
    while pos < max {
        let Some(bytes) = store.read_raw(pos, usize::MAX) else {
            break;
        };
        let mut next = pos + bytes.len() as i64;
        let mut at = 0;
        while at < bytes.len() {
            let Ok(RecordKind::Message(view)) = RecordView::parse(&bytes[at..], false) else {
                // The end-of-file blank (or unreadable bytes): on to the next file.
                next = next_file(pos, file_size);
                break;
            };
            at += view.total_size();
            records += 1;
            if restore(window, &view, now, &window_of) {
                restored += 1;
            }
        }
        pos = next;
    }
    info!(
        from = start,
        to = max,
        records,
        restored,
        entries = window.len(),
        elapsed_ms = began.elapsed().as_millis() as u64,
        "duplication window rebuilt from the commitlog"
    );
}

/// The start of the newest file whose first record is at or before `cutoff` (a store
/// time in ms), else the oldest data.
fn scan_start(store: &MessageStore, min: i64, max: i64, file_size: i64, cutoff: i64) -> i64 {
    let mut base = (max - 1) - (max - 1).rem_euclid(file_size);
    while base > min {
        let first = store.read_raw(base, usize::MAX).and_then(|bytes| {
            match RecordView::parse(&bytes, false) {
                Ok(RecordKind::Message(view)) => Some(view.store_timestamp()),
                _ => None,
            }
        });
        if first.is_some_and(|ts| ts <= cutoff) {
            return base;
        }
        base -= file_size;
    }
    min
}

fn next_file(pos: i64, file_size: i64) -> i64 {
    pos - pos.rem_euclid(file_size) + file_size
}

/// Restores one record's entry when it is inside its topic's window.
fn restore(
    window: &DedupeWindow,
    view: &RecordView<'_>,
    now: i64,
    window_of: &impl Fn(&str) -> Duration,
) -> bool {
    let Some(uniq_key) = view.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX) else {
        return false;
    };
    let topic = view
        .property(property::REAL_TOPIC)
        .unwrap_or_else(|| view.topic());
    if !applies_to(topic) {
        return false;
    }
    let ttl = window_of(topic).as_millis() as i64;
    let expire_at = view.store_timestamp().saturating_add(ttl);
    if ttl == 0 || expire_at <= now {
        return false;
    }
    let queue_id = view
        .property(property::REAL_QUEUE_ID)
        .and_then(|q| q.parse().ok())
        .unwrap_or_else(|| view.queue_id());
    let original = Original {
        queue_id,
        queue_offset: view.queue_offset(),
        commit_offset: view.physical_offset(),
    };
    window.restore(topic, uniq_key, original, expire_at);
    true
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use bytes::Bytes;
    use vostok_remoting::protocol::message::property::push_pair;
    use vostok_store::{MessageInner, StoreConfig};

    use super::*;

    fn message(topic: &str, key: &str, extra: &[(&str, &str)]) -> MessageInner {
        let mut properties = String::new();
        push_pair(
            &mut properties,
            property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            key,
        );
        for (k, v) in extra {
            push_pair(&mut properties, k, v);
        }
        let host: SocketAddr = "127.0.0.1:10911".parse().unwrap();
        MessageInner {
            topic: topic.to_owned(),
            queue_id: 0,
            flag: 0,
            body: Bytes::from(vec![b'x'; 700]),
            properties,
            tags_code: 0,
            sys_flag: 0,
            born_timestamp: now_millis(),
            born_host: host,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    #[tokio::test]
    async fn restores_every_file_of_the_window_and_parked_messages_under_their_topic() {
        let dir = tempfile::tempdir().unwrap();
        let store = MessageStore::open(StoreConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            mapped_file_size_commit_log: 8 * 1024,
            ..StoreConfig::default()
        })
        .unwrap();
        let mut offsets = Vec::new();
        for i in 0..40 {
            let r = store.put_message(message("T", &format!("k{i}"), &[])).await;
            offsets.push(r.append.unwrap().wrote_offset);
        }
        // A delayed message waits in the schedule topic; its later copy in the real
        // topic carries the same key.
        let parked = [(property::REAL_TOPIC, "T"), (property::REAL_QUEUE_ID, "3")];
        store
            .put_message(message(
                vostok_remoting::protocol::topic::SCHEDULE_TOPIC,
                "late",
                &parked,
            ))
            .await;
        store.put_message(message("T", "late", &[])).await;
        store.put_message(message("%RETRY%g", "k1", &[])).await;
        let files = store.max_phy_offset() / (8 * 1024);
        assert!(files >= 3, "the test needs several files, has {files}");

        // At start-up everything recovered is durable; here the flush makes it so.
        store.flush().unwrap();
        let window = DedupeWindow::new(1000);
        rebuild(&window, &store, Duration::from_secs(60), |_| {
            Duration::from_secs(60)
        });
        assert_eq!(
            window.len(),
            41,
            "40 keys and the parked one; retry topics are skipped"
        );
        let claim = window
            .claim("T", &["k0", "k39", "late"], Duration::from_secs(60))
            .await;
        let originals: Vec<_> = claim.originals().into_iter().map(|o| o.unwrap()).collect();
        assert_eq!(originals[0].commit_offset, offsets[0]);
        assert_eq!(originals[1].commit_offset, offsets[39]);
        assert_eq!(originals[1].queue_offset, 39);
        assert_eq!(originals[2].queue_id, 3, "the parked message's real queue");
        drop(claim);

        // Where the scan starts: everything is newer than a cutoff of 0, everything
        // older than one in the future (then only the last file is read).
        let (min, max) = (store.min_phy_offset(), store.max_phy_offset());
        assert_eq!(scan_start(&store, min, max, 8 * 1024, 0), min);
        let last = (max - 1) / (8 * 1024) * (8 * 1024);
        assert_eq!(scan_start(&store, min, max, 8 * 1024, i64::MAX), last);
        // Topics without a window restore nothing.
        let none = DedupeWindow::new(1000);
        rebuild(&none, &store, Duration::from_secs(60), |_| Duration::ZERO);
        assert_eq!(none.len(), 0);
        store.shutdown();
    }
}
