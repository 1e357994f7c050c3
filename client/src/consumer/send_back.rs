//! Messages a consumer could not consume go back to the broker for a later retry:
//! CONSUMER_SEND_MSG_BACK, or, when that fails, a plain send to
//! `%RETRY%<group>` through the client's inner producer. After `maxReconsumeTimes`
//! the broker routes them to `%DLQ%<group>`.

use tracing::debug;
use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::topic::{self, CLIENT_INNER_PRODUCER_GROUP};

use super::core::ConsumerCore;
use crate::api;
use crate::error::{ClientError, Result};
use crate::message::Message;
use crate::producer::{Producer, ProducerConfig};

impl ConsumerCore {
    async fn inner_producer(&self) -> Result<&Producer> {
        self.inner_producer
            .get_or_try_init(|| async {
                let mut config = ProducerConfig {
                    client: self.instance.config().clone(),
                    producer_group: CLIENT_INNER_PRODUCER_GROUP.to_owned(),
                    ..Default::default()
                };
                // The inner producer sends namespaced names as they are.
                config.client.namespace = String::new();
                let producer = Producer::new(config);
                match producer.start().await {
                    Ok(()) | Err(ClientError::DuplicateGroup(_)) => Ok(producer),
                    Err(e) => Err(e),
                }
            })
            .await
    }

    /// Sends a failed message back for a later retry: CONSUMER_SEND_MSG_BACK, and if that
    /// fails a plain send to `%RETRY%<group>` (docs/flows.md#send-back-processing).
    pub async fn send_back(
        &self,
        msg: &MessageExt,
        broker_name: &str,
        delay_level: i32,
    ) -> Result<()> {
        let addr = self
            .instance
            .find_broker_addr_in_publish(broker_name)
            .unwrap_or_else(|| msg.store_host.to_string().into());
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.commit_log_offset,
            group: self.group.clone(),
            delay_level,
            origin_msg_id: Some(msg.msg_id()),
            origin_topic: Some(self.wrap(&msg.topic)),
            unit_mode: Some(false),
            max_reconsume_times: Some(self.max_reconsume_times),
        };
        match api::consumer_send_msg_back(
            self.instance.remoting(),
            &addr,
            &header,
            self.instance.api_timeout(),
        )
        .await
        {
            Ok(()) => Ok(()),
            Err(e) => {
                debug!(msg_id = %msg.msg_id(), error = %e, "send-back failed; sending to the retry topic");
                self.send_back_as_new_message(msg, delay_level.max(0)).await
            }
        }
    }

    /// The fallback of [`Self::send_back`], also used by orderly consumers whose
    /// messages exhausted their retries (the broker then routes them to the DLQ).
    pub async fn send_back_as_new_message(&self, msg: &MessageExt, delay_level: i32) -> Result<()> {
        let mut m = Message::new(topic::retry_topic(&self.group), msg.body.clone());
        m.flag = msg.flag;
        m.properties = msg.properties.clone();
        let origin = msg
            .property(property::ORIGIN_MESSAGE_ID)
            .map(str::to_owned)
            .unwrap_or_else(|| msg.msg_id());
        m.properties.insert(property::ORIGIN_MESSAGE_ID, origin);
        if !m.properties.contains(property::RETRY_TOPIC) {
            m.properties
                .insert(property::RETRY_TOPIC, self.wrap(&msg.topic));
        }
        m.properties.insert(
            property::RECONSUME_TIME,
            (msg.reconsume_times + 1).to_string(),
        );
        m.properties.insert(
            property::MAX_RECONSUME_TIMES,
            self.max_reconsume_times.to_string(),
        );
        m.properties.remove(property::TRANSACTION_PREPARED);
        let level = if delay_level > 0 {
            delay_level
        } else {
            3 + msg.reconsume_times
        };
        m.set_delay_level(level);
        let producer = self.inner_producer().await?;
        producer.send_internal(m).await.map(|_| ())
    }
}
