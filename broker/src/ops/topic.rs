//! Topic administration: a topic created or changed, a topic deleted. For
//! UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER and the console's topic page.

use std::collections::BTreeMap;
use std::sync::Arc;

use vostok_remoting::protocol::body::{TopicConfig, TopicFilterType};
use vostok_remoting::protocol::topic::{self, perm};

use super::{Refusal, Refused};
use crate::state::dedupe::WINDOW_ATTRIBUTE;
use crate::state::topic::MAX_QUEUE_NUMS;
use crate::state::Broker;

/// A topic to create, or its new settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CreateTopic {
    pub(crate) topic: String,
    pub(crate) read_queue_nums: i32,
    pub(crate) write_queue_nums: i32,
    pub(crate) perm: i32,
    /// `SINGLE_TAG` or `MULTI_TAG`.
    pub(crate) topic_filter_type: String,
    pub(crate) topic_sys_flag: i32,
    pub(crate) order: bool,
    /// Changes to its attributes: `+key=value` sets, `-key` removes, comma-separated.
    pub(crate) attributes: Option<String>,
}

/// A topic to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeleteTopic {
    pub(crate) topic: String,
}

fn refused(kind: Refused, remark: impl Into<String>) -> Refusal {
    Refusal::new(kind, remark)
}

/// Creates a topic or changes its settings. Changes the topic table only, but takes
/// the broker itself (shared) to write the table's file off the async runtime, with
/// the group table's ([`Broker::persist_configs`]).
pub(crate) async fn create_topic(broker: &Arc<Broker>, header: CreateTopic) -> Result<(), Refusal> {
    if let Err(reason) = topic::validate_topic(&header.topic) {
        return Err(refused(Refused::InvalidParameter, reason));
    }
    if topic::is_not_allowed_send_topic(&header.topic)
        || header.topic == topic::AUTO_CREATE_TOPIC_KEY_TOPIC
    {
        return Err(refused(
            Refused::SystemError,
            format!("The topic[{}] is conflict with system topic.", header.topic),
        ));
    }
    for (name, n) in [
        ("readQueueNums", header.read_queue_nums),
        ("writeQueueNums", header.write_queue_nums),
    ] {
        if !(1..=MAX_QUEUE_NUMS).contains(&n) {
            return Err(refused(
                Refused::InvalidParameter,
                format!("{name} {n} out of range 1..={MAX_QUEUE_NUMS}"),
            ));
        }
    }
    let Ok(filter_type) = header.topic_filter_type.parse::<TopicFilterType>() else {
        return Err(refused(
            Refused::InvalidParameter,
            format!("unknown topicFilterType {:?}", header.topic_filter_type),
        ));
    };
    let current = broker
        .storage
        .topics
        .get(&header.topic)
        .map(|t| t.attributes);
    let attributes =
        match alter_attributes(current.unwrap_or_default(), header.attributes.as_deref()) {
            Ok(attributes) => attributes,
            Err(reason) => return Err(refused(Refused::InvalidParameter, reason)),
        };
    let config = TopicConfig {
        attributes,
        order: header.order,
        perm: header.perm & (perm::READ | perm::WRITE | perm::INHERIT | perm::PRIORITY),
        read_queue_nums: header.read_queue_nums,
        topic_filter_type: filter_type,
        topic_name: header.topic,
        topic_sys_flag: header.topic_sys_flag,
        write_queue_nums: header.write_queue_nums,
    };
    broker.storage.topics.update(config);
    broker.persist_configs().await;
    Ok(())
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

/// Deletes a topic with its offsets, removals and stored queues. Takes the broker
/// itself (shared): the store's files and the tables' files are written off the async
/// runtime, and the topic spans the storage and the consumer tables.
pub(crate) async fn delete_topic(broker: &Arc<Broker>, header: DeleteTopic) -> Result<(), Refusal> {
    if topic::is_system_topic(&header.topic) {
        return Err(refused(
            Refused::NoPermission,
            format!(
                "The topic[{}] is a system topic and cannot be deleted.",
                header.topic
            ),
        ));
    }
    broker.storage.topics.delete(&header.topic);
    broker.consumers.offsets.remove_topic(&header.topic);
    broker.storage.removals.remove_topic(&header.topic);
    // Durable before the answer: the store's tombstone, the topic table and the
    // offsets, so that a crash right after cannot bring the topic back.
    let b = broker.clone();
    let topic = header.topic.clone();
    let stored = tokio::task::spawn_blocking(move || {
        let deleted = b.storage.store.delete_topics(std::slice::from_ref(&topic));
        b.consumers.offsets.persist(false);
        deleted
    })
    .await;
    broker.persist_configs().await;
    match stored {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(refused(
            Refused::SystemError,
            format!(
                "could not delete topic {} from the store: {e}",
                header.topic
            ),
        )),
        Err(e) => Err(refused(
            Refused::SystemError,
            format!("topic deletion failed: {e}"),
        )),
    }
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

    fn create(topic: &str, queues: i32) -> CreateTopic {
        CreateTopic {
            topic: topic.to_owned(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: perm::READ | perm::WRITE,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_sys_flag: 0,
            order: false,
            attributes: Some("+duplication.window.seconds=30".to_owned()),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_topic_is_created_changed_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let handle = super::super::testing::broker(dir.path()).await;
        let b = handle.broker();
        create_topic(b, create("ops-topic", 2)).await.unwrap();
        let made = b.storage.topics.get("ops-topic").unwrap();
        assert_eq!((made.read_queue_nums, made.write_queue_nums), (2, 2));
        assert_eq!(
            made.attributes.get(WINDOW_ATTRIBUTE).map(String::as_str),
            Some("30")
        );
        create_topic(b, create("ops-topic", 4)).await.unwrap();
        assert_eq!(
            b.storage.topics.get("ops-topic").unwrap().write_queue_nums,
            4
        );
        let gone = DeleteTopic {
            topic: "ops-topic".into(),
        };
        delete_topic(b, gone).await.unwrap();
        assert!(b.storage.topics.get("ops-topic").is_none());
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn system_topics_and_bad_settings_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = super::super::testing::broker(dir.path()).await;
        let b = handle.broker();
        let kind = |r: Result<(), Refusal>| r.err().map(|r| r.kind);
        assert_eq!(
            kind(create_topic(b, create(topic::SCHEDULE_TOPIC, 1)).await),
            Some(Refused::SystemError)
        );
        assert_eq!(
            kind(create_topic(b, create("ops-none", 0)).await),
            Some(Refused::InvalidParameter)
        );
        let mut filter = create("ops-filter", 1);
        filter.topic_filter_type = "EVERY_TAG".into();
        assert_eq!(
            kind(create_topic(b, filter).await),
            Some(Refused::InvalidParameter)
        );
        let system = DeleteTopic {
            topic: topic::SCHEDULE_TOPIC.into(),
        };
        assert_eq!(
            kind(delete_topic(b, system).await),
            Some(Refused::NoPermission)
        );
        handle.shutdown().await;
    }
}
