//! HEART_BEAT, UNREGISTER_CLIENT and CHECK_CLIENT_CONFIG (docs/commands.md, sections
//! "Heartbeat" and "Unregistering a client").

use std::time::Instant;

use serde::Deserialize;
use vostok_remoting::protocol::body::{HeartbeatData, SubscriptionData};
use vostok_remoting::protocol::filter::{needs_property_filter_switch, PropertyFilter};
use vostok_remoting::protocol::header::UnregisterClientRequestHeader;
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_body, decode_header, error};
use crate::ops::auto_create::{find_or_create_group, NotCreated};
use crate::ops::clients;
use crate::state::client_registry::{ClientChannelInfo, ConsumerRegistration};
use crate::state::consumer_filter::is_tag_type;
use crate::state::Broker;

/// Most groups (consumer plus producer) one heartbeat may list; a larger one is
/// refused. A Java client lists every group of its process, rarely more than a few
/// dozen.
const MAX_GROUPS_PER_HEARTBEAT: usize = 1024;
/// Most subscription groups (each with its retry topic) one heartbeat may create; the
/// rest wait for the client's next heartbeats, so one request's work stays bounded.
const MAX_NEW_GROUPS_PER_HEARTBEAT: usize = 64;

pub(crate) async fn heart_beat(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let heartbeat = match HeartbeatData::decode(&request.body) {
        Ok(h) => h,
        Err(e) => {
            return error(
                response_code::SYSTEM_ERROR,
                format!("bad heartbeat body: {e}"),
            )
        }
    };
    let listed = heartbeat.consumer_data_set.len() + heartbeat.producer_data_set.len();
    if listed > MAX_GROUPS_PER_HEARTBEAT {
        tracing::warn!(client = %heartbeat.client_id, peer = %channel.peer_addr(), listed, "heartbeat with too many groups refused");
        return error(
            response_code::INVALID_PARAMETER,
            format!(
                "the heartbeat lists {listed} groups; at most {MAX_GROUPS_PER_HEARTBEAT} are accepted"
            ),
        );
    }
    let info = ClientChannelInfo {
        channel: channel.clone(),
        client_id: heartbeat.client_id.clone(),
        language: request.language,
        version: request.version,
        last_update: Instant::now(),
    };
    let mut changed = Vec::new();
    let (mut created, mut deferred) = (0usize, 0usize);
    // Groups refused by a bound (docs/limits.md#groups-and-topics): the answer names
    // the first, the client's next heartbeats try again.
    let mut refused: Vec<(i32, String)> = Vec::new();
    for consumer in heartbeat.consumer_data_set {
        let exists = broker
            .consumers
            .subscriptions
            .get(&consumer.group_name)
            .is_some();
        if !exists && created >= MAX_NEW_GROUPS_PER_HEARTBEAT {
            deferred += 1;
            continue;
        }
        let group_config = match find_or_create_group(
            &broker.consumers,
            &consumer.group_name,
            Some(channel),
        ) {
            Ok(config) => config,
            // A group that does not exist and may not be created (auto-creation off, or
            // an illegal name) is not registered; the heartbeat succeeds, as in RocketMQ.
            Err(NotCreated::NotAllowed(reason)) => {
                tracing::warn!(group = %consumer.group_name, client = %heartbeat.client_id, reason, "heartbeat for an unknown or illegal consumer group ignored");
                continue;
            }
            Err(NotCreated::OverLimit(reason)) => {
                refused.push((
                    response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                    format!(
                        "subscription group [{}] not created: {reason}",
                        consumer.group_name
                    ),
                ));
                continue;
            }
        };
        if !exists {
            created += 1;
        }
        let sys_flag = if consumer.unit_mode { 2 } else { 0 };
        broker.storage.topics.get_or_create(
            &topic::retry_topic(&consumer.group_name),
            group_config.retry_queue_nums.max(1),
            perm::READ | perm::WRITE,
            sys_flag,
        );
        let registration = ConsumerRegistration {
            group: consumer.group_name.clone(),
            consume_type: consumer.consume_type,
            message_model: consumer.message_model,
            consume_from_where: consumer.consume_from_where,
            subscriptions: consumer.subscription_data_set,
        };
        // Filters are compiled only for a group the client limits admitted; SQL92 ones
        // only when property filters are on, routing keys always.
        let sql_on = broker.runtime.enable_property_filter();
        let filtered: Vec<SubscriptionData> = registration
            .subscriptions
            .iter()
            .filter(|s| sql_on || !needs_property_filter_switch(&s.expression_type))
            .cloned()
            .collect();
        let registered = clients::register_consumer(
            &broker.consumers,
            &broker.storage.topics,
            info.clone(),
            registration,
        );
        if registered.is_ok() {
            broker
                .consumers
                .filters
                .register(&consumer.group_name, &filtered);
        }
        match registered {
            Ok(true) => {
                tracing::info!(group = %consumer.group_name, client = %heartbeat.client_id, "consumer group membership changed");
                changed.push(consumer.group_name);
            }
            Ok(false) => {}
            Err(over) => refused.push((response_code::INVALID_PARAMETER, over.0)),
        }
    }
    for producer in &heartbeat.producer_data_set {
        if let Err(over) = broker
            .consumers
            .clients
            .register_producer(&producer.group_name, info.clone())
        {
            refused.push((response_code::INVALID_PARAMETER, over.0));
        }
    }
    clients::notify_consumer_ids_changed(&broker.consumers, &broker.config, &broker.life, changed);
    if let Some((code, remark)) = refused.first() {
        tracing::warn!(client = %heartbeat.client_id, peer = %channel.peer_addr(), refused = refused.len(), first = %remark, "heartbeat groups refused by a bound");
        let remark = match refused.len() - 1 {
            0 => remark.clone(),
            more => format!("{remark}; {more} more groups of this heartbeat not registered"),
        };
        return error(*code, remark);
    }
    if deferred > 0 {
        tracing::warn!(client = %heartbeat.client_id, created, deferred, "heartbeat creates too many groups at once; the rest wait for its next heartbeats");
        return error(
            response_code::SYSTEM_BUSY,
            format!(
                "created {created} new consumer groups; {deferred} more wait for the next heartbeats \
                 (at most {MAX_NEW_GROUPS_PER_HEARTBEAT} per heartbeat)"
            ),
        );
    }
    RemotingCommand::success()
}

pub(crate) async fn unregister_client(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, UnregisterClientRequestHeader);
    if let Some(group) = header.producer_group.as_deref().filter(|g| !g.is_empty()) {
        broker.consumers.clients.unregister_producer(group, channel);
    }
    if let Some(group) = header.consumer_group.as_deref().filter(|g| !g.is_empty()) {
        if broker.consumers.clients.unregister_consumer(group, channel) {
            let (consumers, config, life) = (&broker.consumers, &broker.config, &broker.life);
            clients::notify_consumer_ids_changed(consumers, config, life, vec![group.to_owned()]);
        }
    }
    RemotingCommand::success()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CheckClientRequestBody {
    #[serde(default)]
    subscription_data: Option<SubscriptionData>,
}

/// Java consumers with SQL92 subscriptions ask before starting, and the SDK asks for
/// its ROUTING ones: SQL92 needs property filters enabled, and the expression must
/// compile (a binding key must be valid).
pub(crate) fn check_client_config(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let body = decode_body!(request, CheckClientRequestBody, "CheckClientRequestBody");
    let Some(sub) = body.subscription_data else {
        return RemotingCommand::success();
    };
    if is_tag_type(&sub.expression_type) {
        return RemotingCommand::success();
    }
    if !broker.runtime.enable_property_filter()
        && needs_property_filter_switch(&sub.expression_type)
    {
        return error(
            response_code::SYSTEM_ERROR,
            format!(
                "The broker does not support consumer to filter message by {}",
                sub.expression_type
            ),
        );
    }
    match PropertyFilter::compile(&sub.expression_type, &sub.sub_string) {
        Ok(_) => RemotingCommand::success(),
        Err(e) => {
            tracing::warn!(topic = %sub.topic, expression = %sub.sub_string, error = %e, "client filter does not compile");
            error(response_code::SUBSCRIPTION_PARSE_FAILED, e.to_string())
        }
    }
}
