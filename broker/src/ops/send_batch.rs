//! Sending a batch (docs/commands.md, "Sending"): one body holding several messages of
//! one topic, stored as one unit in one queue with consecutive offsets. A batch passes
//! the single send's checks ([`super::send::check_message`]); batches cannot be
//! delayed, be transactional or go to a retry topic.

use bytes::Bytes;
use vostok_remoting::protocol::body::TopicFilterType;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::{batch, sysflag};
use vostok_remoting::protocol::topic;
use vostok_store::MessageInner;

use super::send::{admit, check_message, Destination, SendTables};
use super::send_dedupe;
use super::stored::{choose_queue, stamp_append, stored, Stored};
use super::{Client, Refusal, Refused};
use crate::state::metrics::MessageKind;

/// Several messages to store together.
#[derive(Debug, Clone)]
pub(crate) struct BatchRequest {
    pub(crate) to: Destination,
    pub(crate) sys_flag: i32,
    pub(crate) born_timestamp: i64,
    pub(crate) reconsume_times: i32,
    /// The encoded batch (docs/message.md): each message's flag, body and properties.
    pub(crate) body: Bytes,
    /// When the request arrived, in the latency trace's clock; `None` when it is off.
    pub(crate) received: Option<u64>,
}

fn illegal(remark: impl Into<String>) -> Refusal {
    Refusal::new(Refused::MessageIllegal, remark)
}

/// Stores a batch sent by `client`; the answer's message id lists the batch's ids,
/// joined by commas.
pub(crate) async fn send_batch(
    tables: SendTables<'_>,
    client: Client<'_>,
    request: BatchRequest,
) -> Result<Stored, Refusal> {
    let _permit = admit(tables.intake, tables.storage, tables.memory)?;
    let topic_config = check_message(tables, client, &request.to)?;
    let name = &request.to.topic;
    if name.len() > topic::TOPIC_MAX_LENGTH {
        return Err(illegal(format!(
            "message topic length too long {}",
            name.len()
        )));
    }
    if topic::is_retry_topic(name) {
        return Err(illegal(format!(
            "batch request does not support retry group {name}"
        )));
    }
    let max = tables.config.store.max_message_size;
    if request.body.len() > max {
        return Err(illegal(format!(
            "the batch size {} over max value, MAX: {max}",
            request.body.len()
        )));
    }
    let entries = match batch::decode(&request.body) {
        Ok(entries) if !entries.is_empty() => entries,
        Ok(_) => return Err(illegal("empty batch")),
        Err(e) => return Err(illegal(format!("bad batch body: {e}"))),
    };
    let queue_id = choose_queue(request.to.queue_id, &topic_config);
    let mut sys_flag = request.sys_flag;
    if topic_config.topic_filter_type == TopicFilterType::MultiTag {
        sys_flag |= sysflag::MULTI_TAGS_FLAG;
    }
    let mut msgs = Vec::with_capacity(entries.len());
    let mut uniq_keys = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.properties.len() > property::MAX_PROPERTIES_LEN {
            return Err(illegal("batch message properties too long"));
        }
        let mut delayed = false;
        let mut uniq_key = None;
        let mut props = Properties::decode_owned_with(entry.properties, |k, v| match k {
            property::DELAY_TIME_LEVEL => delayed = v.trim().parse::<i32>().is_ok_and(|l| l > 0),
            property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX => uniq_key = Some(v.to_owned()),
            _ => {}
        });
        if delayed {
            return Err(illegal("batch messages cannot be delayed"));
        }
        let uniq_key = uniq_key.unwrap_or_else(|| {
            let key = tables.intake.ids.next_id();
            props.insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, &key);
            key
        });
        uniq_keys.push(uniq_key);
        msgs.push(MessageInner {
            flag: entry.flag,
            sys_flag,
            born_timestamp: request.born_timestamp,
            born_host: client.addr,
            reconsume_times: request.reconsume_times,
            ..MessageInner::new(
                name.clone(),
                queue_id,
                Bytes::clone(&entry.body),
                props.into_string(),
                tables.broker_addr,
            )
        });
    }
    let kind = if MessageKind::is_fifo_topic(&topic_config) {
        MessageKind::Fifo
    } else {
        MessageKind::Normal
    };
    // Each message on its own: duplicates are answered, the others stored.
    let keys: Vec<&str> = uniq_keys.iter().map(String::as_str).collect();
    let Some(claim) = send_dedupe::claim(tables, &topic_config, name, &keys).await else {
        let n = msgs.len() as u64;
        let result = tables.storage.store.put_messages(msgs).await;
        stamp_append(request.received, &result);
        tables.observed.count_put(n);
        tables.observed.metrics.record_put(name, kind, &result);
        return stored(tables.config.store.max_message_size, result, queue_id, None);
    };
    if claim.all_duplicates() {
        return send_dedupe::duplicate(tables, &claim, None);
    }
    let msgs: Vec<MessageInner> = msgs
        .into_iter()
        .zip(claim.originals())
        .filter(|(_, original)| original.is_none())
        .map(|(m, _)| m)
        .collect();
    let n = msgs.len() as u64;
    let result = tables.storage.store.put_messages(msgs).await;
    stamp_append(request.received, &result);
    tables.observed.count_put(n);
    tables.observed.metrics.record_put(name, kind, &result);
    let originals = claim.originals();
    send_dedupe::record(claim, &result, queue_id);
    stored(tables.config.store.max_message_size, result, queue_id, None).map(|stored| {
        if originals.iter().any(Option::is_some) {
            send_dedupe::splice_batch_ids(tables, stored, &originals)
        } else {
            stored
        }
    })
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::super::send::tests::to;
    use super::super::stored::Ack;
    use super::super::testing::{broker, peer};
    use super::*;

    fn batch_to(topic: &str, messages: &[(&[u8], &str)]) -> BatchRequest {
        let mut body = BytesMut::new();
        for (payload, properties) in messages {
            batch::encode_block(&mut body, 0, payload, properties);
        }
        BatchRequest {
            to: to(topic).to,
            sys_flag: 0,
            born_timestamp: 1,
            reconsume_times: 0,
            body: body.freeze(),
            received: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_is_stored_with_consecutive_offsets_in_one_queue() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let stored = send_batch(
            SendTables::of(b),
            peer(),
            batch_to("ops-batch", &[(b"a", ""), (b"b", "")]),
        )
        .await
        .unwrap();
        assert_eq!(stored.ack, Ack::Stored);
        assert_eq!((stored.queue_id, stored.queue_offset), (0, 0));
        let ids: Vec<&str> = stored.msg_id.split(',').collect();
        assert_eq!(ids.len(), 2, "one id per message: {}", stored.msg_id);
        let next = send_batch(
            SendTables::of(b),
            peer(),
            batch_to("ops-batch", &[(b"c", "")]),
        )
        .await
        .unwrap();
        assert_eq!(next.queue_offset, 2, "after the first batch's two messages");
        for (id, body) in ids.iter().zip([&b"a"[..], b"b"]) {
            let (_, at) = vostok_remoting::protocol::message::id::decode_offset_msg_id(id).unwrap();
            let record = b.storage.store.look_message_by_offset(at).unwrap();
            assert_eq!(record.topic, "ops-batch");
            assert_eq!(&record.body[..], body);
        }
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_is_refused_what_a_batch_cannot_be() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let kind = |r: Result<Stored, Refusal>| r.err().map(|r| r.kind);
        let delayed = format!("{}\u{1}3\u{2}", property::DELAY_TIME_LEVEL);
        assert_eq!(
            kind(
                send_batch(
                    SendTables::of(b),
                    peer(),
                    batch_to("ops-batch", &[(b"a", &delayed)])
                )
                .await
            ),
            Some(Refused::MessageIllegal)
        );
        assert_eq!(
            kind(send_batch(SendTables::of(b), peer(), batch_to("ops-batch", &[])).await),
            Some(Refused::MessageIllegal)
        );
        let retry = format!("{}ops-group", topic::RETRY_GROUP_TOPIC_PREFIX);
        assert_eq!(
            kind(send_batch(SendTables::of(b), peer(), batch_to(&retry, &[(b"a", "")])).await),
            Some(Refused::MessageIllegal)
        );
        // The single send's checks come first.
        assert_eq!(
            kind(
                send_batch(
                    SendTables::of(b),
                    peer(),
                    batch_to("bad topic!", &[(b"a", "")])
                )
                .await
            ),
            Some(Refused::InvalidParameter)
        );
        handle.shutdown().await;
    }
}
