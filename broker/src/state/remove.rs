//! Removing one waiting message (docs/operations.md#removal): the record in
//! `rmq_sys_REMOVED_MESSAGE` first, then the table ([`super::removal`]); start-up
//! replays the records, and a slave learns each one when its copy is dispatched.
//!
//! The record carries the removal twice: as JSON in its body (for people and tools)
//! and as three properties (`VOSTOK_REMOVED_TOPIC`, `VOSTOK_REMOVED_QUEUE_ID`,
//! `VOSTOK_REMOVED_QUEUE_OFFSET`), which the dispatcher's arrival callback reads
//! without touching the commitlog.

use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic::{self, REMOVED_MESSAGE_TOPIC};
use vostok_remoting::support::time::now_millis;
use vostok_store::{GetMessageStatus, MessageInner};

use super::removal::Removal;
use super::Broker;

const P_TOPIC: &str = "VOSTOK_REMOVED_TOPIC";
const P_QUEUE: &str = "VOSTOK_REMOVED_QUEUE_ID";
const P_OFFSET: &str = "VOSTOK_REMOVED_QUEUE_OFFSET";

/// Why a removal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RemoveError {
    #[error("no message at {topic} queue {queue_id} offset {queue_offset}")]
    NotFound {
        topic: String,
        queue_id: i32,
        queue_offset: i64,
    },
    #[error("{0} is a system topic: its messages cannot be removed")]
    SystemTopic(String),
    #[error("this broker is a slave: remove on its master")]
    Slave,
    #[error("the removal record was not stored: {0}")]
    NotStored(String),
}

/// The removal named by a record's properties.
pub(crate) fn from_properties(properties: &str) -> Option<(String, i32, i64)> {
    Some((
        property::find(properties, P_TOPIC)?.to_owned(),
        property::find(properties, P_QUEUE)?.parse().ok()?,
        property::find(properties, P_OFFSET)?.parse().ok()?,
    ))
}

impl Broker {
    /// The stored message at a queue offset.
    pub(crate) fn message_at(&self, topic: &str, queue_id: i32, offset: i64) -> Option<MessageExt> {
        let got = self
            .store
            .get_message(topic, queue_id, offset, 1, i32::MAX, None);
        let raw = got.messages.first()?;
        MessageExt::decode(raw, false)
            .ok()
            .filter(|m| m.queue_offset == offset)
    }

    /// Removes one waiting message: no group receives it from now on. Durable once
    /// this returns `Ok`. Removing a removed message again succeeds.
    pub(crate) async fn remove_message(
        &self,
        topic_name: &str,
        queue_id: i32,
        queue_offset: i64,
    ) -> Result<Removal, RemoveError> {
        if !self.config.is_master() {
            return Err(RemoveError::Slave);
        }
        if topic::is_system_topic(topic_name) {
            return Err(RemoveError::SystemTopic(topic_name.to_owned()));
        }
        let not_found = || RemoveError::NotFound {
            topic: topic_name.to_owned(),
            queue_id,
            queue_offset,
        };
        let msg = self
            .message_at(topic_name, queue_id, queue_offset)
            .ok_or_else(not_found)?;
        let removal = Removal {
            topic: topic_name.to_owned(),
            queue_id,
            queue_offset,
            commit_log_offset: msg.commit_log_offset,
            msg_id: create_offset_msg_id(msg.store_host, msg.commit_log_offset),
            removed_at: now_millis(),
        };
        if self.removals.is_removed(topic_name, queue_id, queue_offset) {
            return Ok(removal);
        }
        let offset_text = queue_offset.to_string();
        let queue_text = queue_id.to_string();
        let props: Properties = [
            (P_TOPIC, topic_name),
            (P_QUEUE, queue_text.as_str()),
            (P_OFFSET, offset_text.as_str()),
            (property::KEYS, removal.msg_id.as_str()),
        ]
        .into_iter()
        .collect();
        let body = serde_json::to_vec(&removal).unwrap_or_default().into();
        let record = MessageInner {
            born_timestamp: removal.removed_at,
            ..MessageInner::new(
                REMOVED_MESSAGE_TOPIC,
                0,
                body,
                props.into_string(),
                self.broker_addr,
            )
        };
        let result = self.store.put_message(record).await;
        if !result.is_ok() {
            return Err(RemoveError::NotStored(format!("{:?}", result.status)));
        }
        self.removals.add(topic_name, queue_id, queue_offset);
        Ok(removal)
    }

    /// Refills the removal table from `rmq_sys_REMOVED_MESSAGE` (start-up).
    pub(crate) fn replay_removals(&self) {
        let mut offset = self.store.min_offset_in_queue(REMOVED_MESSAGE_TOPIC, 0);
        loop {
            let got = self
                .store
                .get_message(REMOVED_MESSAGE_TOPIC, 0, offset, 256, i32::MAX, None);
            if got.status != GetMessageStatus::Found {
                break;
            }
            for raw in &got.messages {
                if let Ok(msg) = MessageExt::decode(raw, false) {
                    let p = &msg.properties;
                    let named = p.get(P_TOPIC).zip(p.get(P_QUEUE)).zip(p.get(P_OFFSET));
                    if let Some(((t, q), o)) = named {
                        if let (Ok(q), Ok(o)) = (q.parse(), o.parse()) {
                            self.removals.add(t, q, o);
                        }
                    }
                }
            }
            if got.next_begin_offset <= offset {
                break;
            }
            offset = got.next_begin_offset;
        }
        // Removals of messages retention has deleted since are of no use.
        self.removals
            .prune(|t, q| self.store.min_offset_in_queue(t, q));
    }
}
