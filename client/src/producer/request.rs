//! Request/reply (RocketMQ 4.6): a producer sends a request message and waits for the
//! reply a consumer sends back through the broker.
//!
//! The request carries `CORRELATION_ID`, `REPLY_TO_CLIENT` (this client id) and `TTL`;
//! the replier builds its answer with [`create_reply_message`] (topic
//! `<cluster>_REPLY_TOPIC`, `MSG_TYPE=reply`) and sends it with any producer, which uses
//! SEND_REPLY_MESSAGE_V2; the broker pushes it to the requester with
//! PUSH_REPLY_MESSAGE_TO_CLIENT. Vostok brokers and Apache RocketMQ ≥ 4.6 do this; a
//! broker without it answers the reply send with an error and the request times out.

use std::time::{Duration, Instant};

use bytes::Bytes;
use vostok_remoting::protocol::message::{property, MessageExt};

use super::Producer;
use crate::error::{ClientError, Result};
use crate::message::Message;

/// Suffix of the topic replies travel on: `<cluster>_REPLY_TOPIC`.
pub const REPLY_TOPIC_POSTFIX: &str = "REPLY_TOPIC";

impl Producer {
    /// Sends `msg` as a request and waits up to `timeout` for its reply.
    pub async fn request(&self, mut msg: Message, timeout: Duration) -> Result<MessageExt> {
        let shared = &self.shared;
        let instance = shared.instance()?.clone();
        let begin = Instant::now();
        let correlation_id = instance.next_uniq_id();
        msg.properties
            .insert(property::CORRELATION_ID, correlation_id.clone());
        msg.properties
            .insert(property::MESSAGE_REPLY_TO_CLIENT, instance.client_id());
        msg.properties
            .insert(property::MESSAGE_TTL, timeout.as_millis().to_string());
        // The reply is pushed over a producer connection the broker knows from this
        // client's heartbeat: a topic met for the first time is routed and the brokers
        // told about this client before the request goes out (Java `prepareSendRequest`).
        let topic = self.shared.wrap(&msg.topic);
        if instance.cached_route(&topic).is_none() {
            instance.update_route(&topic).await?;
            instance.send_heartbeat_to_all_brokers().await;
        }
        let waiter = instance.reply_waiters().register(&correlation_id);
        let outcome = async {
            self.send_with_timeout(msg, timeout).await?;
            let remaining = timeout.saturating_sub(begin.elapsed());
            match tokio::time::timeout(remaining, waiter).await {
                Ok(Ok(reply)) => Ok(reply),
                Ok(Err(_)) => Err(ClientError::ShutDown("client instance")),
                Err(_) => Err(ClientError::Timeout {
                    operation: "request (waiting for the reply)",
                    elapsed: begin.elapsed(),
                }),
            }
        }
        .await;
        instance.reply_waiters().remove(&correlation_id);
        outcome
    }
}

/// The reply to a request message (Java `MessageUtil.createReplyMessage`).
pub fn create_reply_message(request: &MessageExt, body: impl Into<Bytes>) -> Result<Message> {
    let cluster = request.property(property::CLUSTER).ok_or_else(|| {
        ClientError::InvalidMessage("the request message has no CLUSTER property".into())
    })?;
    let mut reply = Message::new(format!("{cluster}_{REPLY_TOPIC_POSTFIX}"), body);
    reply
        .properties
        .insert(property::MESSAGE_TYPE, property::REPLY_MESSAGE_FLAG);
    for key in [
        property::CORRELATION_ID,
        property::MESSAGE_REPLY_TO_CLIENT,
        property::MESSAGE_TTL,
    ] {
        if let Some(v) = request.property(key) {
            reply.properties.insert(key, v);
        }
    }
    Ok(reply)
}
