//! Receiving: POP_MESSAGE to one broker of a subscribed topic, and the handle of each
//! message (`MQClientAPIImpl.processPopResponse`).
//!
//! The broker answers with the records and, in the header, the pop time, invisible
//! time, revive queue and per queue the checkpoint's start offset; the client builds
//! each message's `extraInfo` (`POP_CK`) from them, unless the broker put one in the
//! record (retried messages). A FIFO message's earlier deliveries come as
//! `orderCountInfo` and become its reconsume times.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use vostok_remoting::protocol::body::ConsumeFromWhere;
use vostok_remoting::protocol::header::{
    PopMessageRequestHeader, PopMessageResponseHeader, INIT_MODE_MAX, INIT_MODE_MIN,
};
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::pop::{parse_offset_info, ExtraInfo, RetryFlag};
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::perm;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;

use super::SimpleConsumer;
use crate::api;
use crate::error::{ClientError, Result};

/// A received message with its receipt handle (5.x `MessageView`).
#[derive(Debug, Clone)]
pub struct MessageView {
    message: MessageExt,
    receipt_handle: String,
    broker_name: String,
}

impl MessageView {
    /// The message, shown under the subscribed topic, with `POP_CK` set.
    pub fn message(&self) -> &MessageExt {
        &self.message
    }

    pub fn into_message(self) -> MessageExt {
        self.message
    }

    pub fn topic(&self) -> &str {
        &self.message.topic
    }

    pub fn body(&self) -> &[u8] {
        &self.message.body
    }

    pub fn tag(&self) -> Option<&str> {
        self.message.properties.tags()
    }

    /// The producer's message id (`UNIQ_KEY`), else the offset message id.
    pub fn message_id(&self) -> String {
        self.message
            .properties
            .uniq_key()
            .map(str::to_owned)
            .unwrap_or_else(|| self.message.offset_msg_id())
    }

    /// 1 for the first delivery.
    pub fn delivery_attempt(&self) -> i32 {
        self.message.reconsume_times.saturating_add(1)
    }

    /// The handle an ack or invisible-duration change names (`extraInfo`); replaced by
    /// [`SimpleConsumer::change_invisible_duration`].
    pub fn receipt_handle(&self) -> &str {
        &self.receipt_handle
    }

    pub fn broker_name(&self) -> &str {
        &self.broker_name
    }

    pub(crate) fn set_receipt_handle(&mut self, handle: String) {
        self.message
            .properties
            .insert(property::POP_CK, handle.as_str());
        self.receipt_handle = handle;
    }
}

impl SimpleConsumer {
    /// Pops up to `max` (1..=32) messages that stay invisible to the group for
    /// `invisible_duration`, waiting up to the await duration for the first. An empty
    /// result means nothing arrived in time.
    pub async fn receive(
        &self,
        max: i32,
        invisible_duration: Duration,
    ) -> Result<Vec<MessageView>> {
        let instance = self.instance()?;
        if !(1..=32).contains(&max) {
            return Err(ClientError::InvalidArgument(format!(
                "max messages {max} is not in 1..=32"
            )));
        }
        let (topic, broker_name, addr) = self.next_broker().await?;
        let config = &self.shared.config;
        let Some(sub) = self.shared.subscriptions.read_locked().get(&topic).cloned() else {
            return Ok(Vec::new());
        };
        let header = PopMessageRequestHeader {
            consumer_group: config.consumer_group.clone(),
            topic: topic.clone(),
            queue_id: -1,
            max_msg_nums: max,
            invisible_time: invisible_duration.as_millis() as i64,
            poll_time: config.await_duration.as_millis() as i64,
            born_time: Some(now_millis()),
            init_mode: Some(match config.consume_from_where {
                ConsumeFromWhere::ConsumeFromFirstOffset => INIT_MODE_MIN,
                _ => INIT_MODE_MAX,
            }),
            exp_type: Some(sub.data.expression_type.clone()),
            exp: Some(sub.data.sub_string.clone()),
            order: Some(config.fifo),
            attempt_id: None,
            broker_name: Some(broker_name.clone()),
        };
        let answer = api::pop_message(
            instance.long_polls(&addr),
            &addr,
            &header,
            config.await_duration + config.request_timeout,
        )
        .await;
        let response = match answer {
            Err(ClientError::Broker { code, remark, .. })
                if sub.is_routing()
                    && matches!(
                        code,
                        response_code::SUBSCRIPTION_PARSE_FAILED | response_code::SYSTEM_ERROR
                    ) =>
            {
                // A broker without routing keys: receive everything, filter here.
                tracing::warn!(topic = %topic, broker = %addr, binding_key = %sub.data.sub_string, code, remark = %remark,
                    "the broker does not filter by routing key; filtering on the client");
                self.shared
                    .subscriptions
                    .write_locked()
                    .insert(topic.clone(), sub.client_side());
                return Ok(Vec::new());
            }
            other => other?,
        };
        if response.code != response_code::SUCCESS {
            if response.code == response_code::POLLING_FULL {
                // The broker holds too many receives: back off a little.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            return Ok(Vec::new());
        }
        let reply: PopMessageResponseHeader = api::decode_header(&addr, &response)?;
        let all = views(
            &topic,
            &broker_name,
            &reply,
            MessageExt::decode_all(&response.body),
        )?;
        if sub.pattern.is_none() || sub.is_routing() {
            return Ok(all);
        }
        // Filtered on the client: what does not match is acked at once, never shown.
        let (kept, dropped): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|v| sub.accepts(v.message()));
        if !dropped.is_empty() {
            if let Err(e) = self.ack_all(&dropped).await {
                tracing::warn!(topic = %topic, error = %e, "cannot ack messages filtered out");
            }
        }
        Ok(kept)
    }

    /// The next (topic, broker name, address) to receive from, round robin over the
    /// readable brokers of every subscribed topic.
    async fn next_broker(&self) -> Result<(String, String, String)> {
        let instance = self.instance()?;
        let topics: Vec<String> = self
            .shared
            .subscriptions
            .read_locked()
            .keys()
            .cloned()
            .collect();
        if topics.is_empty() {
            return Err(ClientError::InvalidArgument(
                "no topic subscribed".to_owned(),
            ));
        }
        let mut targets = Vec::new();
        for topic in &topics {
            let route = match instance.cached_route(topic) {
                Some(r) => Some(r),
                None => instance.update_route(topic).await?,
            };
            let Some(route) = route else { continue };
            for qd in &route.queue_datas {
                if qd.read_queue_nums > 0 && perm::is_readable(qd.perm) {
                    if let Some(addr) = route.broker(&qd.broker_name).and_then(|b| b.master_addr())
                    {
                        targets.push((topic.clone(), qd.broker_name.clone(), addr.to_owned()));
                    }
                }
            }
        }
        if targets.is_empty() {
            return Err(ClientError::NoRoute {
                topic: topics.join(","),
            });
        }
        let i = self.shared.next.fetch_add(1, Ordering::Relaxed);
        Ok(targets.swap_remove(i % targets.len()))
    }
}

/// The popped messages with their handles, shown under `topic`.
fn views(
    topic: &str,
    broker_name: &str,
    reply: &PopMessageResponseHeader,
    messages: Vec<MessageExt>,
) -> Result<Vec<MessageView>> {
    let parse = |info: &Option<String>| -> Result<HashMap<String, String>> {
        Ok(parse_offset_info(info.as_deref().unwrap_or(""))
            .map_err(ClientError::InvalidMessage)?
            .into_iter()
            .collect())
    };
    let starts = parse(&reply.start_offset_info)?;
    let counts = parse(&reply.order_count_info)?;
    let mut out = Vec::with_capacity(messages.len());
    for mut msg in messages {
        let handle = match msg.properties.get(property::POP_CK) {
            Some(ck) => ck.to_owned(),
            None => {
                let retry = RetryFlag::of_topic(&msg.topic);
                let key = format!("{}@{}", retry.as_str(), msg.queue_id);
                let start = starts
                    .get(&key)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(msg.queue_offset);
                if let Some(n) = counts
                    .get(&format!(
                        "{}@qo{}%{}",
                        retry.as_str(),
                        msg.queue_id,
                        msg.queue_offset
                    ))
                    .or_else(|| counts.get(&key))
                    .and_then(|c| c.parse::<i32>().ok())
                    .filter(|c| *c > 0)
                {
                    msg.reconsume_times = n;
                }
                ExtraInfo {
                    ck_queue_offset: start,
                    pop_time: reply.pop_time,
                    invisible_time: reply.invisible_time,
                    revive_qid: reply.revive_qid,
                    retry,
                    broker_name: broker_name.to_owned(),
                    queue_id: msg.queue_id,
                    queue_offset: Some(msg.queue_offset),
                }
                .to_string()
            }
        };
        if !msg.properties.contains(property::FIRST_POP_TIME) {
            msg.properties
                .insert(property::FIRST_POP_TIME, reply.pop_time.to_string());
        }
        msg.properties.insert(property::POP_CK, handle.as_str());
        msg.topic = topic.to_owned();
        out.push(MessageView {
            message: msg,
            receipt_handle: handle,
            broker_name: broker_name.to_owned(),
        });
    }
    Ok(out)
}
