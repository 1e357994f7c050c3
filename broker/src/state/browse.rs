//! Waiting messages, as an operator sees them (docs/operations.md#operations): browse
//! a queue without consuming (a JMS QueueBrowser: nothing is committed, no
//! checkpoint is made), and send a dead-lettered message back to its topic.

use vostok_remoting::protocol::body::{BrowsedMessage, OperationResultBody};
use vostok_remoting::protocol::message::id::{create_offset_msg_id, decode_offset_msg_id};
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;

use super::Broker;

/// Most messages one browse returns.
pub(crate) const MAX_BROWSE: usize = 256;
/// Bytes of each body shown.
const PREVIEW_BYTES: usize = 200;

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

/// Why a resend was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResendError {
    #[error("no message {0} in the dead-letter queue of the group")]
    NotFound(String),
    #[error("the message carries no RETRY_TOPIC: its topic is not known")]
    NoTopic,
    #[error("topic {0} does not exist on this broker")]
    NoSuchTopic(String),
    #[error("this broker is a slave: resend on its master")]
    Slave,
    #[error("the message was not stored: {0}")]
    NotStored(String),
}

impl Broker {
    /// Up to `max` waiting messages of `topic_name` (one queue, or all), from `group`'s
    /// committed offset (each queue's start without a group or a committed offset);
    /// removed messages are left out. Nothing is consumed.
    pub(crate) fn browse(
        &self,
        topic_name: &str,
        group: Option<&str>,
        queue_id: Option<i32>,
        max: usize,
    ) -> Vec<BrowsedMessage> {
        let max = max.clamp(1, MAX_BROWSE);
        let queues: Vec<i32> = match queue_id {
            Some(q) => vec![q],
            None => self.store.queue_ids(topic_name),
        };
        let mut out = Vec::new();
        for q in queues {
            let min = self.store.min_offset_in_queue(topic_name, q);
            let from = group
                .map(|g| self.offsets.query(g, topic_name, q))
                .filter(|o| *o >= 0)
                .unwrap_or(min)
                .max(min);
            let room = (max - out.len()) as i32;
            if room <= 0 {
                break;
            }
            let got = self.get_for_consumer(topic_name, q, from, room, i32::MAX, None);
            out.extend(
                got.messages
                    .iter()
                    .filter_map(|raw| MessageExt::decode(raw, false).ok())
                    .map(|m| browsed(&m)),
            );
        }
        out
    }

    /// Stores a copy of a dead-lettered message of `group` in its original topic
    /// (`RETRY_TOPIC`), with its reconsume count back at zero. The DLQ copy stays.
    pub(crate) async fn resend_dlq(
        &self,
        group: &str,
        msg_id: &str,
    ) -> Result<OperationResultBody, ResendError> {
        if !self.config.is_master() {
            return Err(ResendError::Slave);
        }
        let dlq = topic::dlq_topic(group);
        let by_offset = decode_offset_msg_id(msg_id)
            .ok()
            .and_then(|(_, offset)| self.store.look_message_by_offset(offset))
            .filter(|m| m.topic == dlq);
        let found = by_offset.or_else(|| {
            self.store
                .query_message(&dlq, msg_id, 1, 0, i64::MAX)
                .messages
                .first()
                .and_then(|raw| MessageExt::decode(raw, false).ok())
        });
        let dead = found.ok_or_else(|| ResendError::NotFound(msg_id.to_owned()))?;
        let target = dead
            .properties
            .get(property::RETRY_TOPIC)
            .ok_or(ResendError::NoTopic)?
            .to_owned();
        let config = self
            .topics
            .get(&target)
            .ok_or_else(|| ResendError::NoSuchTopic(target.clone()))?;
        let mut msg = crate::reroute::copy_of(&dead, self.broker_addr);
        msg.topic = target.clone();
        msg.queue_id = rand::random_range(0..config.write_queue_nums.max(1));
        msg.reconsume_times = 0;
        let mut props = dead.properties.clone();
        props.remove(property::DELAY_TIME_LEVEL);
        msg.properties = props.encode();
        let queue_id = msg.queue_id;
        let result = self.store.put_message(msg).await;
        match (&result.append, result.is_ok()) {
            (Some(a), true) => {
                self.count_put(1);
                Ok(OperationResultBody {
                    msg_id: a.msg_id.clone(),
                    topic: target,
                    queue_id,
                    queue_offset: a.queue_offset,
                })
            }
            _ => Err(ResendError::NotStored(format!("{:?}", result.status))),
        }
    }
}
