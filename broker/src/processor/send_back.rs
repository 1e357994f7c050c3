//! CONSUMER_SEND_MSG_BACK (PROTOCOL.md 3.9, 7.3): a consumer failed a message; store a
//! copy in the group's retry topic with a delay, or in its DLQ after the maximum.

use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::protocol::version;
use vostok_remoting::{Channel, RemotingCommand};
use vostok_store::MessageInner;

use super::{decode_header, error};
use crate::broker::Broker;
use crate::schedule::props_without;

pub(crate) async fn consumer_send_msg_back(
    broker: &Broker,
    _channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ConsumerSendMsgBackRequestHeader);
    let Some(group) = broker.subscriptions.find_or_create(&header.group) else {
        return error(
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {}", header.group),
        );
    };
    if !broker.config.is_writeable() {
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
    let mut properties = original.properties.clone();
    if !properties.contains(property::RETRY_TOPIC) {
        properties.insert(property::RETRY_TOPIC, original.topic.clone());
    }
    let mut max_reconsume = group.retry_max_times;
    if request.version >= version::V3_4_9 {
        if let Some(max) = header.max_reconsume_times {
            max_reconsume = max;
        }
    }
    let (target, queue_id, delay) = if original.reconsume_times >= max_reconsume
        || header.delay_level < 0
    {
        let dlq = topic::dlq_topic(&header.group);
        broker
            .topics
            .get_or_create(&dlq, topic::DLQ_NUMS_PER_GROUP, perm::WRITE, 0);
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
    // The first delivery's offset id, kept through every retry (RocketMQ ignores the
    // header's originMsgId here: clients put the UNIQ_KEY in it).
    if !properties.contains(property::ORIGIN_MESSAGE_ID) {
        properties.insert(property::ORIGIN_MESSAGE_ID, original.offset_msg_id());
    }
    properties.insert(property::WAIT_STORE_MSG_OK, "false");
    let mut props = props_without(&properties.encode(), &[property::DELAY_TIME_LEVEL]);
    if delay > 0 {
        push_pair(&mut props, property::DELAY_TIME_LEVEL, &delay.to_string());
    }
    let mut msg = MessageInner {
        topic: target,
        queue_id,
        flag: original.flag,
        body: original.body.clone(),
        tags_code: tags_code(properties.tags()),
        properties: props,
        sys_flag: original.sys_flag,
        born_timestamp: original.born_timestamp,
        born_host: original.born_host,
        store_host: broker.broker_addr,
        reconsume_times: original.reconsume_times.saturating_add(1),
        prepared_transaction_offset: 0,
    };
    if delay > 0 {
        crate::schedule::to_schedule_message(broker, &mut msg, delay);
    }
    let result = broker.store.put_message(msg).await;
    if response_code::is_stored(
        super::send::put_response(broker, result.clone(), queue_id, None).code,
    ) {
        broker.count_put(1);
        RemotingCommand::success()
    } else {
        error(response_code::SYSTEM_ERROR, format!("{:?}", result.status))
    }
}
