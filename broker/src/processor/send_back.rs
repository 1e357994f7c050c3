//! CONSUMER_SEND_MSG_BACK (docs/commands.md#send-back, docs/flows.md#send-back-processing):
//! a consumer failed a message; store a copy in the group's retry topic with a delay, or in
//! its DLQ after the maximum.

use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::protocol::version;
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_header, error};
use crate::reroute::{self, Parking};
use crate::state::Broker;

pub(crate) async fn consumer_send_msg_back(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ConsumerSendMsgBackRequestHeader);
    let group = match broker.find_or_create_group(&header.group, Some(channel)) {
        Ok(group) => group,
        Err(reason) => {
            return error(
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("subscription group not exist, {}: {reason}", header.group),
            )
        }
    };
    if !(broker.is_master() && perm::is_writeable(broker.config.broker_permission)) {
        return error(
            response_code::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden",
                broker.config.broker_ip1
            ),
        );
    }
    if group.retry_queue_nums <= 0 {
        return RemotingCommand::success();
    }
    let retry = topic::retry_topic(&header.group);
    let retry_config =
        broker
            .topics
            .get_or_create(&retry, group.retry_queue_nums, perm::READ | perm::WRITE, 0);
    if !perm::is_writeable(retry_config.perm) {
        return error(
            response_code::NO_PERMISSION,
            format!("the topic[{retry}] sending message is forbidden"),
        );
    }
    let Some(original) = broker.store.look_message_by_offset(header.offset) else {
        return error(
            response_code::SYSTEM_ERROR,
            format!("look message by offset failed, {}", header.offset),
        );
    };
    let mut max_reconsume = group.retry_max_times;
    if request.version >= version::V3_4_9 {
        if let Some(max) = header.max_reconsume_times {
            max_reconsume = max;
        }
    }
    let dead_letter = original.reconsume_times >= max_reconsume || header.delay_level < 0;
    let (target, queue_id, delay) = if dead_letter {
        let dlq = topic::dlq_topic(&header.group);
        broker
            .topics
            .get_or_create(&dlq, topic::DLQ_NUMS_PER_GROUP, perm::READ | perm::WRITE, 0);
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
    let mut msg = reroute::copy_of(&original, broker.broker_addr);
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
        let level = delay.min(crate::ops::send::max_delay_level(broker));
        reroute::park(&mut msg, props, Parking::Delay { level });
    } else {
        msg.properties = props.into_string();
    }
    let result = broker.store.put_message(msg).await;
    if response_code::is_stored(
        super::put_response::put_response(broker, result.clone(), queue_id, None).code,
    ) {
        broker.count_put(1);
        if dead_letter {
            let origin = header.origin_topic.as_deref().unwrap_or(&original.topic);
            broker.metrics.events.dlq_moved(&header.group, origin);
        }
        RemotingCommand::success()
    } else {
        error(response_code::SYSTEM_ERROR, format!("{:?}", result.status))
    }
}
