//! Consumer-group administration: subscription groups (all, or one), consume stats and the
//! connection lists of consumer and producer groups.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use vostok_remoting::protocol::body::{
    Connection, ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData,
};
use vostok_remoting::protocol::header::{
    GetConsumerConnectionListRequestHeader, GetProducerConnectionListRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_body, decode_header, error, refused};
use crate::ops;
use crate::ops::group::DeleteGroup;
use crate::state::client_registry::ClientChannelInfo;
use crate::state::subscription::SubscriptionGroupConfig;
use crate::state::Broker;

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
            .storage
            .topics
            .topic_names()
            .into_iter()
            .filter(|t| !broker.consumers.offsets.query_all(&group, t).is_empty())
            .collect(),
    };
    let mut body = String::from("{\"consumeTps\":0.0,\"offsetTable\":{");
    let mut first = true;
    for topic in topics {
        let Some(config) = broker.storage.topics.get(&topic) else {
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
            let broker_offset = broker.storage.store.max_offset_in_queue(&topic, queue_id);
            let consumer_offset = broker
                .consumers
                .offsets
                .query(&group, &topic, queue_id)
                .max(0);
            let last = if consumer_offset > 0 {
                broker
                    .storage
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

pub(crate) async fn update_and_create_subscription_group(
    broker: &Arc<Broker>,
    request: RemotingCommand,
) -> RemotingCommand {
    let config = decode_body!(request, SubscriptionGroupConfig, "SubscriptionGroupConfig");
    match ops::group::update_group(broker, config).await {
        Ok(()) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
}

/// GET_SUBSCRIPTIONGROUP_CONFIG: one group's settings; a group this broker does not
/// have is SUBSCRIPTION_GROUP_NOT_EXIST, as Apache answers.
pub(crate) fn get_subscription_group_config(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetSubscriptionGroupConfigRequestHeader);
    match broker.consumers.subscriptions.get(&header.group) {
        Some(config) => RemotingCommand::success().with_body(json::to_vec(&config)),
        None => error(
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            "No group in this broker",
        ),
    }
}

pub(crate) fn get_all_subscription_group_config(broker: &Broker) -> RemotingCommand {
    RemotingCommand::success().with_body(broker.consumers.subscriptions.encode())
}

pub(crate) async fn delete_subscription_group(
    broker: &Arc<Broker>,
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
    let delete = DeleteGroup {
        group: group.to_owned(),
        clean_offset: request.ext_fields.get("cleanOffset") == Some("true"),
    };
    match ops::group::delete_group(broker, delete).await {
        Ok(()) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
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
    let Some(group) = broker
        .consumers
        .clients
        .consumer_group(&header.consumer_group)
    else {
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
    let infos = broker
        .consumers
        .clients
        .producer_connections(&header.producer_group);
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
