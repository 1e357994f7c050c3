//! Waiting messages, as an operator sees them (docs/operations.md#operations), for
//! VOSTOK_BROWSE_MESSAGES and the console: a queue browsed without consuming (a JMS
//! QueueBrowser: nothing is committed, no checkpoint is made).

use vostok_remoting::protocol::body::BrowsedMessage;
use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::MessageExt;

use super::{Refusal, Refused};
use vostok_store::MessageStore;

use crate::state::{Consumers, Storage};

/// Most messages one browse returns.
pub(crate) const MAX_BROWSE: usize = 256;
/// Bytes of each body shown.
const PREVIEW_BYTES: usize = 200;

/// Waiting messages to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Browse {
    pub(crate) topic: String,
    /// From this group's committed offset; from each queue's start without one.
    pub(crate) group: Option<String>,
    /// One queue, or all.
    pub(crate) queue_id: Option<i32>,
    /// At most this many (1 to [`MAX_BROWSE`]).
    pub(crate) max: usize,
}

/// A stored message as a browse lists it.
pub(crate) fn browsed(m: &MessageExt) -> BrowsedMessage {
    let preview = &m.body[..m.body.len().min(PREVIEW_BYTES)];
    BrowsedMessage {
        topic: m.topic.clone(),
        queue_id: m.queue_id,
        queue_offset: m.queue_offset,
        msg_id: create_offset_msg_id(m.store_host, m.commit_log_offset),
        uniq_key: m
            .properties
            .get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            .unwrap_or("")
            .to_owned(),
        keys: m.properties.get(property::KEYS).unwrap_or("").to_owned(),
        tags: m.properties.get(property::TAGS).unwrap_or("").to_owned(),
        store_timestamp: m.store_timestamp,
        reconsume_times: m.reconsume_times,
        body_size: m.body.len() as i32,
        body_preview: String::from_utf8_lossy(preview).into_owned(),
    }
}

/// The stored message at a queue offset, removed or not.
pub(crate) fn message_at(
    store: &MessageStore,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> Option<MessageExt> {
    let got = store.get_message(topic, queue_id, offset, 1, i32::MAX, None);
    let raw = got.messages.first()?;
    MessageExt::decode(raw, false)
        .ok()
        .filter(|m| m.queue_offset == offset)
}

/// Up to `max` waiting messages of the topic, from the group's committed offset;
/// removed messages are left out. Nothing is consumed. A topic this broker does not
/// have is refused. Reads the storage and the group's committed offsets.
pub(crate) fn browse(
    storage: &Storage,
    consumers: &Consumers,
    request: &Browse,
) -> Result<Vec<BrowsedMessage>, Refusal> {
    let topic_name = request.topic.as_str();
    if !storage.topics.contains(topic_name) {
        return Err(Refusal::new(
            Refused::TopicNotExist,
            format!("topic[{topic_name}] not exist"),
        ));
    }
    let max = request.max.clamp(1, MAX_BROWSE);
    let queues: Vec<i32> = match request.queue_id {
        Some(q) => vec![q],
        None => storage.store.queue_ids(topic_name),
    };
    let mut out = Vec::new();
    for q in queues {
        let min = storage.store.min_offset_in_queue(topic_name, q);
        let from = request
            .group
            .as_deref()
            .map(|g| consumers.offsets.query(g, topic_name, q))
            .filter(|o| *o >= 0)
            .unwrap_or(min)
            .max(min);
        let room = (max - out.len()) as i32;
        if room <= 0 {
            break;
        }
        let got = storage.get_for_consumer(topic_name, q, from, room, i32::MAX, None);
        out.extend(
            got.messages
                .iter()
                .filter_map(|raw| MessageExt::decode(raw, false).ok())
                .map(|m| browsed(&m)),
        );
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::super::send::{send, tests::to, SendTables};
    use super::super::testing::{broker, peer};
    use super::*;
    use crate::state::Broker;

    /// Sends `n` messages to queue 0 of `topic` and waits until a consumer can read
    /// them; their stored forms.
    pub(crate) async fn stored(b: &Broker, topic: &str, n: i64) -> Vec<MessageExt> {
        for _ in 0..n {
            send(SendTables::of(b), peer(), to(topic)).await.unwrap();
        }
        let dispatched = async {
            while b.storage.store.max_offset_in_queue(topic, 0) < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), dispatched)
            .await
            .expect("dispatched");
        (0..n)
            .map(|o| message_at(&b.storage.store, topic, 0, o).expect("stored"))
            .collect()
    }

    fn all(topic: &str, group: Option<&str>) -> Browse {
        Browse {
            topic: topic.to_owned(),
            group: group.map(str::to_owned),
            queue_id: None,
            max: 100,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn browsing_lists_from_the_committed_offset_and_consumes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        stored(b, "ops-browse", 3).await;
        let listed = browse(&b.storage, &b.consumers, &all("ops-browse", None)).unwrap();
        assert_eq!(
            listed.iter().map(|m| m.queue_offset).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(listed[0].body_preview, "hello");
        b.consumers
            .offsets
            .commit("ops-browse-group", "ops-browse", 0, 2);
        let after = browse(
            &b.storage,
            &b.consumers,
            &all("ops-browse", Some("ops-browse-group")),
        )
        .unwrap();
        assert_eq!(after.len(), 1, "from the committed offset");
        assert_eq!(
            b.consumers
                .offsets
                .query("ops-browse-other", "ops-browse", 0),
            -1
        );
        let one = Browse {
            max: 1,
            ..all("ops-browse", None)
        };
        assert_eq!(browse(&b.storage, &b.consumers, &one).unwrap().len(), 1);
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn browsing_an_unknown_topic_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let refusal = browse(
            &handle.broker().storage,
            &handle.broker().consumers,
            &all("ops-browse-none", None),
        )
        .unwrap_err();
        assert_eq!(refusal.kind, Refused::TopicNotExist);
        handle.shutdown().await;
    }
}
