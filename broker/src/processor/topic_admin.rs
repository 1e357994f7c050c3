//! Topic administration: UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER,
//! GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG, GET_TOPIC_STATS_INFO.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use vostok_remoting::protocol::body::{TopicConfig, TopicFilterType};
use vostok_remoting::protocol::header::{CreateTopicRequestHeader, TopicRequestHeader};
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::dedupe::WINDOW_ATTRIBUTE;
use crate::state::topic::MAX_QUEUE_NUMS;
use crate::state::Broker;

pub(crate) async fn update_and_create_topic(
    broker: &Arc<Broker>,
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
    let current = broker.topics.get(&header.topic).map(|t| t.attributes);
    let attributes =
        match alter_attributes(current.unwrap_or_default(), header.attributes.as_deref()) {
            Ok(attributes) => attributes,
            Err(reason) => return error(response_code::INVALID_PARAMETER, reason),
        };
    let config = TopicConfig {
        attributes,
        order: header.order.unwrap_or(false),
        perm: header.perm & (perm::READ | perm::WRITE | perm::INHERIT | perm::PRIORITY),
        read_queue_nums: header.read_queue_nums,
        topic_filter_type: filter_type,
        topic_name: header.topic,
        topic_sys_flag: header.topic_sys_flag.unwrap_or(0),
        write_queue_nums: header.write_queue_nums,
    };
    broker.topics.update(config);
    broker.persist_configs().await;
    RemotingCommand::success()
}

/// Applies an `attributes` header (`+key=value` sets, `-key` removes, comma-separated;
/// Apache's `AttributeParser`) to a topic's current attributes. The duplication
/// window's value must be whole seconds.
fn alter_attributes(
    mut current: BTreeMap<String, String>,
    change: Option<&str>,
) -> Result<BTreeMap<String, String>, String> {
    for item in change
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        if let Some(key) = item.strip_prefix('-') {
            // `-key`, or `-key=` as clients that join a map write it.
            current.remove(key.split('=').next().unwrap_or(key));
            continue;
        }
        let item = item.strip_prefix('+').unwrap_or(item);
        let Some((key, value)) = item
            .split_once('=')
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        else {
            return Err(format!("attribute {item:?} is not +key=value or -key"));
        };
        if key == WINDOW_ATTRIBUTE && value.parse::<u64>().is_err() {
            return Err(format!(
                "{WINDOW_ATTRIBUTE} takes whole seconds, not {value:?}"
            ));
        }
        current.insert(key.to_owned(), value.to_owned());
    }
    Ok(current)
}

pub(crate) async fn delete_topic(
    broker: &Arc<Broker>,
    request: RemotingCommand,
) -> RemotingCommand {
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
    broker.offsets.remove_topic(&header.topic);
    broker.removals.remove_topic(&header.topic);
    // Durable before the answer: the store's tombstone, the topic table and the
    // offsets, so that a crash right after cannot bring the topic back.
    let b = broker.clone();
    let topic = header.topic.clone();
    let stored = tokio::task::spawn_blocking(move || {
        let deleted = b.store.delete_topics(std::slice::from_ref(&topic));
        b.offsets.persist(false);
        deleted
    })
    .await;
    broker.persist_configs().await;
    match stored {
        Ok(Ok(())) => RemotingCommand::success(),
        Ok(Err(e)) => error(
            response_code::SYSTEM_ERROR,
            format!(
                "could not delete topic {} from the store: {e}",
                header.topic
            ),
        ),
        Err(e) => error(
            response_code::SYSTEM_ERROR,
            format!("topic deletion failed: {e}"),
        ),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_set_and_removed_as_apache_spells_them() {
        let mut current = BTreeMap::new();
        current.insert("message.type".to_owned(), "NORMAL".to_owned());
        let altered = alter_attributes(
            current,
            Some("+duplication.window.seconds=60,-message.type=,+a=b,-gone"),
        )
        .unwrap();
        assert_eq!(
            altered.get(WINDOW_ATTRIBUTE).map(String::as_str),
            Some("60")
        );
        assert_eq!(altered.get("a").map(String::as_str), Some("b"));
        assert!(!altered.contains_key("message.type"));
        assert!(alter_attributes(BTreeMap::new(), Some("+duplication.window.seconds=1m")).is_err());
        assert!(alter_attributes(BTreeMap::new(), Some("+=x")).is_err());
        assert!(alter_attributes(BTreeMap::new(), None).unwrap().is_empty());
    }
}
