//! The duplication window on the send path (docs/semantics.md#duplication-window):
//! which sends it applies to, the answer to a retry of a stored message, and what a
//! put records. The window itself is `state::dedupe`.

use std::time::Duration;

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::message::id::{create_offset_msg_id, decode_offset_msg_id};
use vostok_store::PutMessageResult;

use super::send::SendTables;
use super::stored::{Ack, Stored};
use super::{Refusal, Refused};

use crate::state::dedupe::{applies_to, Claim, Original};

/// Claims `uniq_keys` (the request's messages, in order) in the topic's window, or
/// `None` when the topic has no window.
pub(crate) async fn claim<'a>(
    tables: SendTables<'a>,
    topic_config: &TopicConfig,
    topic: &str,
    uniq_keys: &[&str],
) -> Option<Claim<'a>> {
    let window = tables.duplication_window(topic_config);
    if window == Duration::ZERO || !applies_to(topic) {
        return None;
    }
    Some(tables.intake.dedupe.claim(topic, uniq_keys, window).await)
}

/// The answer to a request whose every message was stored before: the first
/// message's queue and offset, every message's offset id (as the first send answered).
pub(crate) fn duplicate(
    tables: SendTables<'_>,
    claim: &Claim<'_>,
    uniq_key: Option<String>,
) -> Result<Stored, Refusal> {
    let originals: Vec<Original> = claim.originals().into_iter().flatten().collect();
    let Some(first) = originals.first() else {
        return Err(Refusal::new(Refused::SystemError, "empty request"));
    };
    tracing::debug!(
        queue_id = first.queue_id,
        queue_offset = first.queue_offset,
        "duplicate send answered from the duplication window"
    );
    Ok(Stored {
        ack: Ack::Stored,
        msg_id: msg_ids(tables, originals.iter()),
        queue_id: first.queue_id,
        queue_offset: first.queue_offset,
        uniq_key,
    })
}

/// Records where the claim's new messages landed when the put stored them; a failed
/// put releases the claim for the producer's next attempt.
pub(crate) fn record(claim: Claim<'_>, result: &PutMessageResult, queue_id: i32) {
    if !result.status.is_stored() {
        return;
    }
    match &result.append {
        Some(append) if append.msg_num <= 1 => claim.stored([Original {
            queue_id,
            queue_offset: append.queue_offset,
            commit_offset: append.wrote_offset,
        }]),
        Some(append) => claim.stored(placed(append, queue_id)),
        None => {}
    }
}

/// Where each record of a put landed: the offset ids give the commitlog offsets, queue
/// offsets follow each other from the first.
fn placed(append: &vostok_store::AppendResult, queue_id: i32) -> Vec<Original> {
    append
        .msg_id
        .split(',')
        .enumerate()
        .map(|(i, id)| Original {
            queue_id,
            queue_offset: append.queue_offset + i as i64,
            commit_offset: decode_offset_msg_id(id)
                .map(|(_, offset)| offset)
                .unwrap_or(append.wrote_offset),
        })
        .collect()
}

/// A batch outcome names every message's offset id in request order, the originals'
/// for the duplicates among them.
pub(crate) fn splice_batch_ids(
    tables: SendTables<'_>,
    mut stored: Stored,
    originals: &[Option<Original>],
) -> Stored {
    let mut new_ids = stored.msg_id.split(',');
    let ids: Vec<String> = originals
        .iter()
        .map(|o| match o {
            Some(o) => create_offset_msg_id(tables.broker_addr, o.commit_offset),
            None => new_ids.next().unwrap_or("").to_owned(),
        })
        .collect();
    stored.msg_id = ids.join(",");
    stored
}

fn msg_ids<'a>(tables: SendTables<'_>, originals: impl Iterator<Item = &'a Original>) -> String {
    originals
        .map(|o| create_offset_msg_id(tables.broker_addr, o.commit_offset))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use vostok_remoting::protocol::message::property::{
        NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    };

    use super::super::send::{send, tests::to};
    use super::super::testing::{broker, peer};
    use crate::ops::send::SendTables;
    use crate::state::dedupe::WINDOW_ATTRIBUTE;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_retried_send_inside_the_window_is_answered_not_stored_again() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let mut topic = vostok_remoting::protocol::body::TopicConfig::new("ops-dedupe", 4);
        topic
            .attributes
            .insert(WINDOW_ATTRIBUTE.to_owned(), "60".to_owned());
        b.storage.topics.update(topic);
        let keyed = |key: &str| {
            let mut request = to("ops-dedupe");
            request.properties = format!(
                "{UNIQ_CLIENT_MESSAGE_ID_KEYIDX}{NAME_VALUE_SEPARATOR}{key}{PROPERTY_SEPARATOR}"
            );
            request
        };
        let first = send(SendTables::of(b), peer(), keyed("K1")).await.unwrap();
        let retried = send(SendTables::of(b), peer(), keyed("K1")).await.unwrap();
        assert_eq!(retried.msg_id, first.msg_id, "answered as the first send");
        assert_eq!(retried.queue_offset, first.queue_offset);
        let other = send(SendTables::of(b), peer(), keyed("K2")).await.unwrap();
        assert_eq!(other.queue_offset, first.queue_offset + 1, "stored once");
        handle.shutdown().await;
    }
}
