//! SEND_BATCH_MESSAGE (docs/commands.md, "Sending"): one body holding several messages
//! of one topic, stored as one unit in one queue with consecutive offsets. Batches
//! cannot be delayed, be transactional or go to a retry topic.

use std::net::SocketAddr;

use bytes::Bytes;
use vostok_remoting::protocol::body::{TopicConfig, TopicFilterType};
use vostok_remoting::protocol::header::SendMessageRequestHeader;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::{batch, sysflag};
use vostok_remoting::protocol::{response_code, topic};
use vostok_remoting::{Channel, RemotingCommand};
use vostok_store::MessageInner;

use super::error;
use super::put_response::{put_response, send_response};
use crate::ops::send_dedupe;
use crate::ops::stored::{choose_queue, stamp_append, stored};
use crate::state::metrics::MessageKind;
use crate::state::Broker;

pub(super) async fn send_batch(
    broker: &Broker,
    channel: &Channel,
    request: &RemotingCommand,
    header: &SendMessageRequestHeader,
    topic_config: &TopicConfig,
    received: Option<u64>,
) -> RemotingCommand {
    if header.topic.len() > topic::TOPIC_MAX_LENGTH {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!("message topic length too long {}", header.topic.len()),
        );
    }
    if topic::is_retry_topic(&header.topic) {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "batch request does not support retry group {}",
                header.topic
            ),
        );
    }
    if request.body.len() > broker.config.store.max_message_size {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "the batch size {} over max value, MAX: {}",
                request.body.len(),
                broker.config.store.max_message_size
            ),
        );
    }
    let entries = match batch::decode(&request.body) {
        Ok(entries) if !entries.is_empty() => entries,
        Ok(_) => return error(response_code::MESSAGE_ILLEGAL, "empty batch"),
        Err(e) => {
            return error(
                response_code::MESSAGE_ILLEGAL,
                format!("bad batch body: {e}"),
            )
        }
    };
    let queue_id = choose_queue(header.queue_id, topic_config);
    let born_host: SocketAddr = channel.peer_addr();
    let mut sys_flag = header.sys_flag;
    if topic_config.topic_filter_type == TopicFilterType::MultiTag {
        sys_flag |= sysflag::MULTI_TAGS_FLAG;
    }
    let mut msgs = Vec::with_capacity(entries.len());
    let mut uniq_keys = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.properties.len() > property::MAX_PROPERTIES_LEN {
            return error(
                response_code::MESSAGE_ILLEGAL,
                "batch message properties too long",
            );
        }
        let mut delayed = false;
        let mut uniq_key = None;
        let mut props = Properties::decode_owned_with(entry.properties, |k, v| match k {
            property::DELAY_TIME_LEVEL => delayed = v.trim().parse::<i32>().is_ok_and(|l| l > 0),
            property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX => uniq_key = Some(v.to_owned()),
            _ => {}
        });
        if delayed {
            return error(
                response_code::MESSAGE_ILLEGAL,
                "batch messages cannot be delayed",
            );
        }
        let uniq_key = uniq_key.unwrap_or_else(|| {
            let key = broker.uniq_ids.next_id();
            props.insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, &key);
            key
        });
        uniq_keys.push(uniq_key);
        let body = Bytes::clone(&entry.body);
        let properties = props.into_string();
        msgs.push(MessageInner {
            flag: entry.flag,
            sys_flag,
            born_timestamp: header.born_timestamp,
            born_host,
            reconsume_times: header.reconsume_times.unwrap_or(0),
            ..MessageInner::new(
                header.topic.clone(),
                queue_id,
                body,
                properties,
                broker.broker_addr,
            )
        });
    }
    let kind = if MessageKind::is_fifo_topic(topic_config) {
        MessageKind::Fifo
    } else {
        MessageKind::Normal
    };
    // Each message on its own: duplicates are answered, the others stored.
    let keys: Vec<&str> = uniq_keys.iter().map(String::as_str).collect();
    let claim = send_dedupe::claim(broker, topic_config, &header.topic, &keys).await;
    let Some(claim) = claim else {
        let n = msgs.len() as u64;
        let result = broker.storage.store.put_messages(msgs).await;
        stamp_append(received, &result);
        broker.count_put(n);
        broker.metrics.record_put(&header.topic, kind, &result);
        return put_response(broker, result, queue_id, None);
    };
    if claim.all_duplicates() {
        return send_response(broker, send_dedupe::duplicate(broker, &claim, None));
    }
    let msgs: Vec<MessageInner> = msgs
        .into_iter()
        .zip(claim.originals())
        .filter(|(_, original)| original.is_none())
        .map(|(m, _)| m)
        .collect();
    let n = msgs.len() as u64;
    let result = broker.storage.store.put_messages(msgs).await;
    stamp_append(received, &result);
    broker.count_put(n);
    broker.metrics.record_put(&header.topic, kind, &result);
    let originals = claim.originals();
    send_dedupe::record(claim, &result, queue_id);
    let outcome = stored(broker, result, queue_id, None).map(|stored| {
        if originals.iter().any(Option::is_some) {
            send_dedupe::splice_batch_ids(broker, stored, &originals)
        } else {
            stored
        }
    });
    send_response(broker, outcome)
}
