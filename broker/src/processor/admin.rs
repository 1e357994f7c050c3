//! Administration requests of `mqadmin`: topics, subscription groups, broker config and
//! runtime information, connections.

use std::collections::BTreeMap;

use serde::Serialize;
use vostok_remoting::protocol::body::{
    Connection, ConsumeFromWhere, ConsumeType, KvTable, MessageModel, SubscriptionData,
    TopicConfig, TopicFilterType,
};
use vostok_remoting::protocol::header::{
    CreateTopicRequestHeader, GetConsumerConnectionListRequestHeader,
    GetProducerConnectionListRequestHeader, TopicRequestHeader,
};
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::protocol::{json, response_code, version};
use vostok_remoting::RemotingCommand;

use super::{decode_body, decode_header, error};
use crate::state::client_registry::ClientChannelInfo;
use crate::state::subscription::SubscriptionGroupConfig;
use crate::state::Broker;

/// Largest queue count a topic may be given.
const MAX_QUEUE_NUMS: i32 = 1024;

pub(crate) fn update_and_create_topic(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, CreateTopicRequestHeader);
    if let Err(reason) = topic::validate_topic(&header.topic) {
        return error(response_code::INVALID_PARAMETER, reason);
    }
    if topic::is_not_allowed_send_topic(&header.topic)
        || header.topic == topic::AUTO_CREATE_TOPIC_KEY_TOPIC
    {
        return error(
            response_code::SYSTEM_ERROR,
            format!("The topic[{}] is conflict with system topic.", header.topic),
        );
    }
    for (name, n) in [
        ("readQueueNums", header.read_queue_nums),
        ("writeQueueNums", header.write_queue_nums),
    ] {
        if !(1..=MAX_QUEUE_NUMS).contains(&n) {
            return error(
                response_code::INVALID_PARAMETER,
                format!("{name} {n} out of range 1..={MAX_QUEUE_NUMS}"),
            );
        }
    }
    let Ok(filter_type) = header.topic_filter_type.parse::<TopicFilterType>() else {
        return error(
            response_code::INVALID_PARAMETER,
            format!("unknown topicFilterType {:?}", header.topic_filter_type),
        );
    };
    let config = TopicConfig {
        attributes: BTreeMap::new(),
        order: header.order.unwrap_or(false),
        perm: header.perm & (perm::READ | perm::WRITE | perm::INHERIT | perm::PRIORITY),
        read_queue_nums: header.read_queue_nums,
        topic_filter_type: filter_type,
        topic_name: header.topic,
        topic_sys_flag: header.topic_sys_flag.unwrap_or(0),
        write_queue_nums: header.write_queue_nums,
    };
    broker.topics.update(config);
    RemotingCommand::success()
}

pub(crate) fn delete_topic(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, TopicRequestHeader);
    if topic::is_system_topic(&header.topic) {
        return error(
            response_code::NO_PERMISSION,
            format!(
                "The topic[{}] is a system topic and cannot be deleted.",
                header.topic
            ),
        );
    }
    broker.topics.delete(&header.topic);
    broker
        .store
        .delete_topics(std::slice::from_ref(&header.topic));
    broker.offsets.remove_topic(&header.topic);
    RemotingCommand::success()
}

pub(crate) fn get_all_topic_config(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(json::to_vec(&broker.topics.wrapper()))
}

pub(crate) fn get_topic_config(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, TopicRequestHeader);
    match broker.topics.get(&header.topic) {
        Some(config) => RemotingCommand::success().with_body(json::to_vec(&config)),
        None => error(
            response_code::TOPIC_NOT_EXIST,
            format!("No topic in this broker. topic: {}", header.topic),
        ),
    }
}

pub(crate) fn get_broker_runtime_info(broker: &Broker) -> RemotingCommand {
    let mut table: BTreeMap<String, String> = broker.store.runtime_info();
    let (put_tps, get_tps) = broker.stats.tps();
    let now = vostok_remoting::support::time::now_millis();
    let mut put = |k: &str, v: String| {
        table.insert(k.to_owned(), v);
    };
    put("brokerVersionDesc", "V5_3_3".to_owned());
    put("brokerVersion", version::CURRENT_VERSION.to_string());
    put(
        "brokerImpl",
        format!("vostok {}", env!("CARGO_PKG_VERSION")),
    );
    put("bootTimestamp", broker.boot_timestamp.to_string());
    put("runtime", format_uptime(now - broker.boot_timestamp));
    put(
        "msgPutTotalTodayNow",
        broker
            .stats
            .put
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string(),
    );
    put(
        "msgGetTotalTodayNow",
        broker
            .stats
            .get
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string(),
    );
    put("putTps", format!("{put_tps:.2}"));
    put("getTransferedTps", format!("{get_tps:.2}"));
    put(
        "sendThreadPoolQueueSize",
        (broker.config.send_thread_pool_queue_capacity - broker.send_permits.available_permits())
            .to_string(),
    );
    put(
        "sendThreadPoolQueueCapacity",
        broker.config.send_thread_pool_queue_capacity.to_string(),
    );
    put(
        "pullRequestsHeld",
        broker.long_polling.held_count().to_string(),
    );
    put("timerPendingMessages", broker.timers.pending().to_string());
    put(
        "commitLogMinOffset",
        broker.store.min_phy_offset().to_string(),
    );
    put(
        "commitLogMaxOffset",
        broker.store.max_phy_offset().to_string(),
    );
    RemotingCommand::success().with_body(json::to_vec(&KvTable { table }))
}

fn format_uptime(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        secs / 86_400,
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}

pub(crate) fn get_broker_config(broker: &Broker) -> RemotingCommand {
    let text = vostok_remoting::support::properties::render(&broker.config.to_properties());
    let version = json::to_vec(&broker.topics.data_version());
    let mut response = RemotingCommand::success().with_body(text.into_bytes());
    response
        .ext_fields
        .insert("version", String::from_utf8_lossy(&version));
    response
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicOffset {
    min_offset: i64,
    max_offset: i64,
    last_update_timestamp: i64,
}

/// GET_TOPIC_STATS_INFO: fastjson writes the `MessageQueue` keys of `offsetTable` as
/// objects, which Java admin tools expect; the same form is written here.
pub(crate) fn get_topic_stats_info(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, TopicRequestHeader);
    let Some(config) = broker.topics.get(&header.topic) else {
        return error(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist", header.topic),
        );
    };
    let mut body = String::from("{\"offsetTable\":{");
    for queue_id in 0..config.write_queue_nums {
        if queue_id > 0 {
            body.push(',');
        }
        let mq = vostok_remoting::protocol::body::MessageQueue::new(
            &header.topic,
            &broker.config.broker_name,
            queue_id,
        );
        let min = broker.store.min_offset_in_queue(&header.topic, queue_id);
        let max = broker.store.max_offset_in_queue(&header.topic, queue_id);
        let last = if max > 0 {
            broker
                .store
                .message_store_timestamp(&header.topic, queue_id, max - 1)
                .unwrap_or(0)
        } else {
            0
        };
        let offset = TopicOffset {
            min_offset: min,
            max_offset: max,
            last_update_timestamp: last,
        };
        body.push_str(&String::from_utf8_lossy(&json::to_vec(&mq)));
        body.push(':');
        body.push_str(&String::from_utf8_lossy(&json::to_vec(&offset)));
    }
    body.push_str("}}");
    RemotingCommand::success().with_body(body.into_bytes())
}

/// GET_CONSUME_STATS: per-queue broker and consumer offsets of a group on a topic.
pub(crate) fn get_consume_stats(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let group = request
        .ext_fields
        .get("consumerGroup")
        .unwrap_or("")
        .to_owned();
    if group.is_empty() {
        return error(
            response_code::SYSTEM_ERROR,
            "bad request header: missing consumerGroup",
        );
    }
    let topics: Vec<String> = match request.ext_fields.get("topic").filter(|t| !t.is_empty()) {
        Some(t) => vec![t.to_owned()],
        None => broker
            .topics
            .topic_names()
            .into_iter()
            .filter(|t| !broker.offsets.query_all(&group, t).is_empty())
            .collect(),
    };
    let mut body = String::from("{\"consumeTps\":0.0,\"offsetTable\":{");
    let mut first = true;
    for topic in topics {
        let Some(config) = broker.topics.get(&topic) else {
            continue;
        };
        for queue_id in 0..config.read_queue_nums {
            if !first {
                body.push(',');
            }
            first = false;
            let mq = vostok_remoting::protocol::body::MessageQueue::new(
                &topic,
                &broker.config.broker_name,
                queue_id,
            );
            let broker_offset = broker.store.max_offset_in_queue(&topic, queue_id);
            let consumer_offset = broker.offsets.query(&group, &topic, queue_id).max(0);
            let last = if consumer_offset > 0 {
                broker
                    .store
                    .message_store_timestamp(&topic, queue_id, consumer_offset - 1)
                    .unwrap_or(0)
            } else {
                0
            };
            body.push_str(&String::from_utf8_lossy(&json::to_vec(&mq)));
            body.push_str(&format!(
                ":{{\"brokerOffset\":{broker_offset},\"consumerOffset\":{consumer_offset},\"lastTimestamp\":{last},\"pullOffset\":{consumer_offset}}}"
            ));
        }
    }
    body.push_str("}}");
    RemotingCommand::success().with_body(body.into_bytes())
}

pub(crate) fn update_and_create_subscription_group(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let config = decode_body!(request, SubscriptionGroupConfig, "SubscriptionGroupConfig");
    if let Err(reason) = topic::validate_group(&config.group_name) {
        return error(response_code::INVALID_PARAMETER, reason);
    }
    broker.subscriptions.update(config);
    RemotingCommand::success()
}

pub(crate) fn get_all_subscription_group_config(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(broker.subscriptions.encode())
}

pub(crate) fn delete_subscription_group(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let Some(group) = request
        .ext_fields
        .get("groupName")
        .filter(|g| !g.is_empty())
    else {
        return error(
            response_code::SYSTEM_ERROR,
            "bad request header: missing groupName",
        );
    };
    broker.subscriptions.delete(group);
    RemotingCommand::success()
}

fn connections(infos: &[ClientChannelInfo]) -> Vec<Connection> {
    infos
        .iter()
        .map(|c| Connection {
            client_addr: c.channel.peer_addr().to_string(),
            client_id: c.client_id.clone(),
            language: c.language.name().to_owned(),
            version: c.version,
        })
        .collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumerConnection {
    connection_set: Vec<Connection>,
    consume_from_where: ConsumeFromWhere,
    consume_type: ConsumeType,
    message_model: MessageModel,
    subscription_table: BTreeMap<String, SubscriptionData>,
}

pub(crate) fn get_consumer_connection_list(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetConsumerConnectionListRequestHeader);
    let Some(group) = broker.clients.consumer_group(&header.consumer_group) else {
        return error(
            response_code::CONSUMER_NOT_ONLINE,
            format!("the consumer group[{}] not online", header.consumer_group),
        );
    };
    let infos: Vec<ClientChannelInfo> = group.channels.values().cloned().collect();
    let body = ConsumerConnection {
        connection_set: connections(&infos),
        consume_from_where: group.consume_from_where,
        consume_type: group.consume_type,
        message_model: group.message_model,
        subscription_table: group.subscriptions.into_iter().collect(),
    };
    RemotingCommand::success().with_body(json::to_vec(&body))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProducerConnection {
    connection_set: Vec<Connection>,
}

pub(crate) fn get_producer_connection_list(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetProducerConnectionListRequestHeader);
    let infos = broker.clients.producer_connections(&header.producer_group);
    if infos.is_empty() {
        return error(
            response_code::SYSTEM_ERROR,
            format!("the producer group[{}] not exist", header.producer_group),
        );
    }
    RemotingCommand::success().with_body(json::to_vec(&ProducerConnection {
        connection_set: connections(&infos),
    }))
}

/// GET_ALL_DELAY_OFFSET: `config/delayOffset.json` content.
pub(crate) fn get_all_delay_offset(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(broker.delay_offsets.encode())
}
