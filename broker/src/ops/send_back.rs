//! Sending a message back (docs/commands.md#send-back, docs/flows.md#send-back-processing):
//! a consumer failed a message; a copy goes to the group's retry topic with a delay, or
//! to its DLQ after the maximum. For CONSUMER_SEND_MSG_BACK and gRPC's
//! ForwardMessageToDeadLetterQueue.

use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::topic::{self, perm};

use super::auto_create::find_or_create_group;
use super::send::SendTables;
use super::stored::stored;
use super::{Client, Refusal, Refused};
use crate::reroute::{self, Parking};

/// One failed message to send back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SendBack {
    pub(crate) group: String,
    /// The message's commitlog offset.
    pub(crate) offset: i64,
    /// 0: the next level for its retries; negative: straight to the dead-letter queue.
    pub(crate) delay_level: i32,
    /// The consumer's own retry limit, when its client may set one.
    pub(crate) max_reconsume_times: Option<i32>,
    /// The topic the message was consumed from, for the dead-letter metrics.
    pub(crate) origin_topic: Option<String>,
}

/// Where a sent-back message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SentBack {
    Retry,
    DeadLetter,
    /// The group keeps no retries: the message is dropped.
    Dropped,
}

fn refused(kind: Refused, remark: impl Into<String>) -> Refusal {
    Refusal::new(kind, remark)
}

/// Stores a consumer's failed message again: in the group's retry topic, or past its
/// retries in the group's dead-letter queue.
pub(crate) async fn send_back(
    tables: SendTables<'_>,
    client: Client<'_>,
    header: SendBack,
) -> Result<SentBack, Refusal> {
    let group = match find_or_create_group(tables.consumers, &header.group, client.connection) {
        Ok(group) => group,
        Err(reason) => {
            return Err(refused(
                Refused::GroupNotExist,
                format!("subscription group not exist, {}: {reason}", header.group),
            ))
        }
    };
    if !(tables.is_master() && perm::is_writeable(tables.config.broker_permission)) {
        return Err(refused(
            Refused::NoPermission,
            format!(
                "the broker[{}] sending message is forbidden",
                tables.config.broker_ip1
            ),
        ));
    }
    if group.retry_queue_nums <= 0 {
        return Ok(SentBack::Dropped);
    }
    let retry = topic::retry_topic(&header.group);
    let retry_config = tables.storage.topics.get_or_create(
        &retry,
        group.retry_queue_nums,
        perm::READ | perm::WRITE,
        0,
    );
    if !perm::is_writeable(retry_config.perm) {
        return Err(refused(
            Refused::NoPermission,
            format!("the topic[{retry}] sending message is forbidden"),
        ));
    }
    let Some(original) = tables.storage.store.look_message_by_offset(header.offset) else {
        return Err(refused(
            Refused::SystemError,
            format!("look message by offset failed, {}", header.offset),
        ));
    };
    let mut max_reconsume = group.retry_max_times;
    if let Some(max) = header.max_reconsume_times {
        max_reconsume = max;
    }
    let dead_letter = original.reconsume_times >= max_reconsume || header.delay_level < 0;
    let (target, queue_id, delay) = if dead_letter {
        let dlq = topic::dlq_topic(&header.group);
        tables.storage.topics.get_or_create(
            &dlq,
            topic::DLQ_NUMS_PER_GROUP,
            perm::READ | perm::WRITE,
            0,
        );
        tracing::info!(group = %header.group, msg_id = %original.msg_id(), reconsume = original.reconsume_times, "message sent to the dead-letter queue");
        (dlq, 0, 0)
    } else {
        let level = if header.delay_level == 0 {
            original.reconsume_times.saturating_add(3)
        } else {
            header.delay_level
        };
        let queue = rand::random_range(0..retry_config.write_queue_nums.max(1));
        (retry, queue, level)
    };
    let mut msg = reroute::copy_of(&original, tables.broker_addr);
    msg.topic = target;
    msg.queue_id = queue_id;
    msg.reconsume_times = original.reconsume_times.saturating_add(1);
    let mut props = original.properties.clone();
    if !props.contains(property::RETRY_TOPIC) {
        props.insert(property::RETRY_TOPIC, &original.topic);
    }
    // The first delivery's offset id, kept through every retry (RocketMQ ignores the
    // header's originMsgId here: clients put the UNIQ_KEY in it).
    if !props.contains(property::ORIGIN_MESSAGE_ID) {
        props.insert(property::ORIGIN_MESSAGE_ID, original.offset_msg_id());
    }
    props.insert(property::WAIT_STORE_MSG_OK, "false");
    props.remove(property::DELAY_TIME_LEVEL);
    if delay > 0 {
        let level = delay.min(super::send::max_delay_level(tables.config));
        reroute::park(&mut msg, props, Parking::Delay { level });
    } else {
        msg.properties = props.into_string();
    }
    let result = tables.storage.store.put_message(msg).await;
    if stored(
        tables.config.store.max_message_size,
        result.clone(),
        queue_id,
        None,
    )
    .is_ok()
    {
        tables.observed.count_put(1);
        if dead_letter {
            let origin = header.origin_topic.as_deref().unwrap_or(&original.topic);
            tables
                .observed
                .metrics
                .events
                .dlq_moved(&header.group, origin);
        }
        Ok(if dead_letter {
            SentBack::DeadLetter
        } else {
            SentBack::Retry
        })
    } else {
        Err(refused(
            Refused::SystemError,
            format!("{:?}", result.status),
        ))
    }
}

#[cfg(test)]
mod tests {
    use vostok_remoting::protocol::message::id::decode_offset_msg_id;

    use super::super::send::{send, tests::to};
    use super::super::testing::{broker, peer};
    use super::*;
    use crate::state::Broker;

    async fn stored_at(broker: &Broker) -> i64 {
        let stored = send(SendTables::of(broker), peer(), to("ops-back"))
            .await
            .unwrap();
        decode_offset_msg_id(&stored.msg_id).unwrap().1
    }

    fn back(offset: i64, delay_level: i32) -> SendBack {
        SendBack {
            group: "ops-back-group".into(),
            offset,
            delay_level,
            max_reconsume_times: None,
            origin_topic: Some("ops-back".into()),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_message_goes_to_retry_or_straight_to_the_dlq() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let offset = stored_at(b).await;
        assert_eq!(
            send_back(SendTables::of(b), peer(), back(offset, 0)).await,
            Ok(SentBack::Retry)
        );
        assert!(b
            .storage
            .topics
            .get(&topic::retry_topic("ops-back-group"))
            .is_some());
        assert_eq!(
            send_back(SendTables::of(b), peer(), back(offset, -1)).await,
            Ok(SentBack::DeadLetter)
        );
        assert!(b
            .storage
            .topics
            .get(&topic::dlq_topic("ops-back-group"))
            .is_some());
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_send_back_of_no_message_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let refusal = send_back(SendTables::of(b), peer(), back(1 << 40, 0))
            .await
            .unwrap_err();
        assert_eq!(refusal.kind, Refused::SystemError);
        handle.shutdown().await;
    }
}
