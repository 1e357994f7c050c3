//! Batch sends (Java `DefaultMQProducer.send(Collection)` / `MessageBatch`): many messages
//! of one topic in one SEND_BATCH_MESSAGE request, body encoded as in
//! docs/message.md#batch-body. Each message keeps its own properties and gets its own
//! UNIQ_KEY; the result's `msg_id` lists them joined by `,`.

use bytes::BytesMut;
use vostok_remoting::protocol::message::batch::{block_len, encode_block};
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::topic;

use super::send::Prepared;
use super::send_result::SendResult;
use super::Producer;
use crate::error::{ClientError, Result};
use crate::hook::CommunicationMode;
use crate::message::{self, Message};

impl Producer {
    /// Sends `messages` (same topic, no delay level, not a retry topic) in one request.
    /// The encoded batch must not exceed `maxMessageSize`.
    pub async fn send_batch(&self, messages: Vec<Message>) -> Result<SendResult> {
        let shared = &self.shared;
        let prepared = shared.prepare_batch(messages)?;
        shared
            .send_default(
                &prepared,
                CommunicationMode::Sync,
                shared.config.send_msg_timeout,
            )
            .await
    }
}

impl super::ProducerShared {
    pub(crate) fn prepare_batch(&self, messages: Vec<Message>) -> Result<Prepared> {
        self.instance()?;
        let Some(first) = messages.first() else {
            return Err(ClientError::InvalidMessage("the batch is empty".into()));
        };
        let user_topic = first.topic.clone();
        let wait = first.wait_store_msg_ok();
        if topic::is_retry_topic(&user_topic) {
            return Err(ClientError::InvalidMessage(
                "retry group topic is not supported for batching".into(),
            ));
        }
        let mut encoded: Vec<(Message, String)> = Vec::with_capacity(messages.len());
        let mut total = 0usize;
        for mut msg in messages {
            if msg.topic != user_topic {
                return Err(ClientError::InvalidMessage(
                    "the topic of the messages in one batch should be the same".into(),
                ));
            }
            if msg.delay_level() > 0 {
                return Err(ClientError::InvalidMessage(
                    "the delay level of a batched message must be 0".into(),
                ));
            }
            if msg.wait_store_msg_ok() != wait {
                return Err(ClientError::InvalidMessage(
                    "the WAIT flag of the messages in one batch should be the same".into(),
                ));
            }
            message::validate(&msg, self.config.max_message_size)?;
            message::check_user_properties(&msg)?;
            msg.topic = self.wrap(&msg.topic);
            self.stamp_uniq_key(&mut msg)?;
            let props = msg.properties.encode();
            total += block_len(msg.body.len(), props.len());
            encoded.push((msg, props));
        }
        if total > self.config.max_message_size {
            return Err(ClientError::MessageTooLarge {
                size: total,
                max: self.config.max_message_size,
            });
        }
        let mut body = BytesMut::with_capacity(total);
        let mut ids = Vec::with_capacity(encoded.len());
        for (msg, props) in &encoded {
            encode_block(&mut body, msg.flag, &msg.body, props);
            ids.push(msg.uniq_key().unwrap_or_default().to_owned());
        }
        let mut batch = Message::new(self.wrap(&user_topic), body.freeze());
        batch
            .properties
            .insert(property::WAIT_STORE_MSG_OK, wait.to_string());
        self.stamp_uniq_key(&mut batch)?;
        Ok(Prepared {
            msg: batch,
            batch_ids: Some(ids.join(",")),
        })
    }
}
