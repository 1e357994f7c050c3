//! Removing one waiting message (docs/operations.md#removal), for
//! VOSTOK_REMOVE_MESSAGE and the console: the record in `rmq_sys_REMOVED_MESSAGE`
//! first, then the table ([`crate::state::removal`], which also holds the record's
//! format and its replay at start-up); a slave learns each removal when its copy is
//! dispatched.

use std::net::SocketAddr;

use tracing::info;
use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::topic::{self, REMOVED_MESSAGE_TOPIC};
use vostok_remoting::support::time::now_millis;
use vostok_store::MessageInner;

use super::browse::message_at;
use super::Operator;
use crate::config::BrokerConfig;
use crate::state::removal::{record_properties, Removal};
use crate::state::Storage;

/// One waiting message to remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoveMessage {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) queue_offset: i64,
}

/// Why a removal was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RemoveError {
    #[error("no message at {topic} queue {queue_id} offset {queue_offset}")]
    NotFound {
        topic: String,
        queue_id: i32,
        queue_offset: i64,
    },
    #[error("{0} is a system topic: its messages cannot be removed")]
    SystemTopic(String),
    #[error("this broker is a slave: remove on its master")]
    Slave,
    #[error("the removal record was not stored: {0}")]
    NotStored(String),
}

/// Removes one waiting message: no group receives it from now on. Durable once this
/// returns `Ok`. Removing a removed message again succeeds. Writes the storage only;
/// the config says whether this broker is a master, `broker_addr` is the record's
/// store host.
pub(crate) async fn remove_message(
    storage: &Storage,
    config: &BrokerConfig,
    broker_addr: SocketAddr,
    by: &Operator,
    request: RemoveMessage,
) -> Result<Removal, RemoveError> {
    let RemoveMessage {
        topic: topic_name,
        queue_id,
        queue_offset,
    } = request;
    if !config.is_master() {
        return Err(RemoveError::Slave);
    }
    if topic::is_system_topic(&topic_name) {
        return Err(RemoveError::SystemTopic(topic_name));
    }
    let Some(msg) = message_at(&storage.store, &topic_name, queue_id, queue_offset) else {
        return Err(RemoveError::NotFound {
            topic: topic_name,
            queue_id,
            queue_offset,
        });
    };
    let removal = Removal {
        topic: topic_name,
        queue_id,
        queue_offset,
        commit_log_offset: msg.commit_log_offset,
        msg_id: create_offset_msg_id(msg.store_host, msg.commit_log_offset),
        removed_at: now_millis(),
    };
    if storage
        .removals
        .is_removed(&removal.topic, queue_id, queue_offset)
    {
        return Ok(removal);
    }
    let body = serde_json::to_vec(&removal).unwrap_or_default().into();
    let record = MessageInner {
        born_timestamp: removal.removed_at,
        ..MessageInner::new(
            REMOVED_MESSAGE_TOPIC,
            0,
            body,
            record_properties(&removal).into_string(),
            broker_addr,
        )
    };
    let result = storage.store.put_message(record).await;
    if !result.is_ok() {
        return Err(RemoveError::NotStored(format!("{:?}", result.status)));
    }
    storage.removals.add(&removal.topic, queue_id, queue_offset);
    info!(topic = %removal.topic, queue_id, queue_offset, msg_id = %removal.msg_id, by = %by, "message removed by an operator");
    Ok(removal)
}

#[cfg(test)]
mod tests {
    use super::super::browse::tests::stored;
    use super::super::testing::broker;
    use super::*;

    fn at(topic: &str, queue_offset: i64) -> RemoveMessage {
        RemoveMessage {
            topic: topic.to_owned(),
            queue_id: 0,
            queue_offset,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_removed_message_is_skipped_and_stays_removed() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        stored(b, "ops-remove", 2).await;
        let by = Operator::Console(String::new());
        let removal = remove_message(
            &b.storage,
            &b.config,
            b.broker_addr,
            &by,
            at("ops-remove", 0),
        )
        .await
        .unwrap();
        assert_eq!((removal.queue_id, removal.queue_offset), (0, 0));
        assert!(b.storage.removals.is_removed("ops-remove", 0, 0));
        let again = remove_message(
            &b.storage,
            &b.config,
            b.broker_addr,
            &by,
            at("ops-remove", 0),
        )
        .await
        .unwrap();
        assert_eq!(again.msg_id, removal.msg_id, "removing twice is once");
        let got = b
            .storage
            .get_for_consumer("ops-remove", 0, 0, 32, i32::MAX, None);
        assert_eq!(got.messages.len(), 1, "the pull path skips it");
        // The record replays into an empty table, once dispatched.
        let dispatched = async {
            while b
                .storage
                .store
                .max_offset_in_queue(REMOVED_MESSAGE_TOPIC, 0)
                < 1
            {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(20), dispatched)
            .await
            .expect("record dispatched");
        let table = crate::state::removal::RemovedMessages::default();
        crate::state::removal::replay(&table, &b.storage.store);
        assert!(table.is_removed("ops-remove", 0, 0));
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_message_or_a_system_topic_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        stored(b, "ops-remove-none", 1).await;
        let by = Operator::Console(String::new());
        assert!(matches!(
            remove_message(
                &b.storage,
                &b.config,
                b.broker_addr,
                &by,
                at("ops-remove-none", 5)
            )
            .await,
            Err(RemoveError::NotFound {
                queue_offset: 5,
                ..
            })
        ));
        assert_eq!(
            remove_message(
                &b.storage,
                &b.config,
                b.broker_addr,
                &by,
                at(topic::SCHEDULE_TOPIC, 0)
            )
            .await,
            Err(RemoveError::SystemTopic(topic::SCHEDULE_TOPIC.to_owned()))
        );
        assert!(!b.storage.removals.is_removed("ops-remove-none", 0, 5));
        handle.shutdown().await;
    }
}
