//! Settling received messages: ACK_MESSAGE, BATCH_ACK_MESSAGE and
//! CHANGE_MESSAGE_INVISIBLETIME to the broker that handed them out.

use std::collections::BTreeMap;
use std::time::Duration;

use vostok_remoting::protocol::body::{BatchAck, BatchAckMessageRequestBody};
use vostok_remoting::protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader,
};
use vostok_remoting::protocol::pop::ExtraInfo;

use super::{MessageView, SimpleConsumer};

/// One broker's acks: its name, and per checkpoint (retry flag, queue, start offset,
/// pop time) the batch ack.
type BrokerAcks = (String, BTreeMap<(String, i32, i64, i64), BatchAck>);
use crate::api;
use crate::error::{ClientError, Result};

impl SimpleConsumer {
    /// Acks a message: it is not delivered to the group again. An ack after the
    /// invisible duration is over still succeeds, as in RocketMQ, but the message may
    /// already be on its way back.
    pub async fn ack(&self, view: &MessageView) -> Result<()> {
        let (addr, extra) = self.target(view).await?;
        let config = &self.shared.config;
        let header = AckMessageRequestHeader {
            consumer_group: config.consumer_group.clone(),
            topic: extra.retry.real_topic(view.topic(), &config.consumer_group),
            queue_id: extra.queue_id,
            extra_info: view.receipt_handle().to_owned(),
            offset: extra.queue_offset.unwrap_or(view.message().queue_offset),
            broker_name: Some(extra.broker_name.clone()),
        };
        let instance = self.instance()?;
        api::ack_message(instance.remoting(), &addr, &header, config.request_timeout).await
    }

    /// Acks several messages with one BATCH_ACK_MESSAGE per broker.
    pub async fn ack_all(&self, views: &[MessageView]) -> Result<()> {
        let config = &self.shared.config;
        // broker address → its acks.
        let mut per_broker: BTreeMap<String, BrokerAcks> = BTreeMap::new();
        for view in views {
            let (addr, extra) = self.target(view).await?;
            let offset = extra.queue_offset.unwrap_or(view.message().queue_offset);
            let Ok(bit) = u32::try_from(offset - extra.ck_queue_offset) else {
                return Err(ClientError::InvalidArgument(format!(
                    "receipt handle {:?} does not cover its offset",
                    view.receipt_handle()
                )));
            };
            let (_, acks) = per_broker
                .entry(addr)
                .or_insert_with(|| (extra.broker_name.clone(), BTreeMap::new()));
            let key = (
                extra.retry.as_str().to_owned(),
                extra.queue_id,
                extra.ck_queue_offset,
                extra.pop_time,
            );
            acks.entry(key)
                .or_insert_with(|| BatchAck {
                    consumer_group: config.consumer_group.clone(),
                    topic: view.topic().to_owned(),
                    retry: extra.retry.as_str().to_owned(),
                    start_offset: extra.ck_queue_offset,
                    queue_id: extra.queue_id,
                    revive_queue_id: extra.revive_qid,
                    pop_time: extra.pop_time,
                    invisible_time: extra.invisible_time,
                    bit_set: Vec::new(),
                })
                .bit_set
                .push(bit);
        }
        let instance = self.instance()?;
        for (addr, (broker_name, acks)) in per_broker {
            let body = BatchAckMessageRequestBody {
                broker_name: Some(broker_name),
                acks: acks.into_values().collect(),
            };
            api::batch_ack_message(instance.remoting(), &addr, &body, config.request_timeout)
                .await?;
        }
        Ok(())
    }

    /// Makes a received message invisible for `duration` from now, and gives it a new
    /// receipt handle (the old one no longer acks it).
    pub async fn change_invisible_duration(
        &self,
        view: &mut MessageView,
        duration: Duration,
    ) -> Result<()> {
        let (addr, extra) = self.target(view).await?;
        let config = &self.shared.config;
        let offset = extra.queue_offset.unwrap_or(view.message().queue_offset);
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: config.consumer_group.clone(),
            topic: extra.retry.real_topic(view.topic(), &config.consumer_group),
            queue_id: extra.queue_id,
            extra_info: view.receipt_handle().to_owned(),
            offset,
            invisible_time: duration.as_millis() as i64,
            broker_name: Some(extra.broker_name.clone()),
        };
        let instance = self.instance()?;
        let reply =
            api::change_invisible_time(instance.remoting(), &addr, &header, config.request_timeout)
                .await?;
        let handle = ExtraInfo {
            ck_queue_offset: offset,
            pop_time: reply.pop_time,
            invisible_time: reply.invisible_time,
            revive_qid: reply.revive_qid,
            queue_offset: Some(offset),
            ..extra
        };
        view.set_receipt_handle(handle.to_string());
        Ok(())
    }

    /// The broker that handed out `view`, and its parsed handle.
    async fn target(&self, view: &MessageView) -> Result<(String, ExtraInfo)> {
        let instance = self.instance()?;
        let extra =
            ExtraInfo::parse(view.receipt_handle()).map_err(ClientError::InvalidArgument)?;
        if let Some(addr) = instance.find_broker_addr_in_subscribe(view.broker_name()) {
            return Ok((addr, extra));
        }
        instance.update_route(view.topic()).await?;
        let addr = instance
            .find_broker_addr_in_subscribe(view.broker_name())
            .ok_or_else(|| ClientError::NoBroker {
                topic: view.topic().to_owned(),
                broker_name: view.broker_name().to_owned(),
            })?;
        Ok((addr, extra))
    }
}
