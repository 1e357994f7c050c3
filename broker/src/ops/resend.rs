//! A dead-lettered message stored again in its topic (docs/operations.md#operations),
//! for VOSTOK_RESEND_DLQ_MESSAGE and the console.

use std::net::SocketAddr;

use tracing::info;
use vostok_remoting::protocol::body::OperationResultBody;
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;

use super::Operator;
use crate::config::BrokerConfig;
use crate::state::{Observed, Storage};

/// A message of a group's dead-letter queue to resend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResendDlq {
    pub(crate) group: String,
    /// Its offset message id, or its unique (client) id.
    pub(crate) msg_id: String,
}

/// Why a resend was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResendError {
    #[error("no message {0} in the dead-letter queue of the group")]
    NotFound(String),
    #[error("the message carries no RETRY_TOPIC: its topic is not known")]
    NoTopic,
    #[error("topic {0} does not exist on this broker")]
    NoSuchTopic(String),
    #[error("this broker is a slave: resend on its master")]
    Slave,
    #[error("the message was not stored: {0}")]
    NotStored(String),
}

/// Stores a copy of a dead-lettered message of the group in its original topic
/// (`RETRY_TOPIC`), with its reconsume count back at zero. The DLQ copy stays. Reads
/// and writes the storage and counts the put; the config says whether this broker is
/// a master, `broker_addr` is the copy's store host.
pub(crate) async fn resend_dlq(
    storage: &Storage,
    observed: &Observed,
    config: &BrokerConfig,
    broker_addr: SocketAddr,
    by: &Operator,
    request: ResendDlq,
) -> Result<OperationResultBody, ResendError> {
    let ResendDlq { group, msg_id } = request;
    if !config.is_master() {
        return Err(ResendError::Slave);
    }
    let dlq = topic::dlq_topic(&group);
    let store = &storage.store;
    let by_offset = decode_offset_msg_id(&msg_id)
        .ok()
        .and_then(|(_, offset)| store.look_message_by_offset(offset))
        .filter(|m| m.topic == dlq);
    let found = by_offset.or_else(|| {
        store
            .query_message(&dlq, &msg_id, 1, 0, i64::MAX)
            .messages
            .first()
            .and_then(|raw| MessageExt::decode(raw, false).ok())
    });
    let dead = found.ok_or_else(|| ResendError::NotFound(msg_id.clone()))?;
    let target = dead
        .properties
        .get(property::RETRY_TOPIC)
        .ok_or(ResendError::NoTopic)?
        .to_owned();
    let topic_config = storage
        .topics
        .get(&target)
        .ok_or_else(|| ResendError::NoSuchTopic(target.clone()))?;
    let mut msg = crate::reroute::copy_of(&dead, broker_addr);
    msg.topic = target.clone();
    msg.queue_id = rand::random_range(0..topic_config.write_queue_nums.max(1));
    msg.reconsume_times = 0;
    let mut props = dead.properties.clone();
    props.remove(property::DELAY_TIME_LEVEL);
    msg.properties = props.encode();
    let queue_id = msg.queue_id;
    let result = store.put_message(msg).await;
    match (&result.append, result.is_ok()) {
        (Some(a), true) => {
            observed.count_put(1);
            info!(group = %group, msg_id = %msg_id, topic = %target, by = %by, "dead-lettered message resent");
            Ok(OperationResultBody {
                msg_id: a.msg_id.clone(),
                topic: target,
                queue_id,
                queue_offset: a.queue_offset,
            })
        }
        _ => Err(ResendError::NotStored(format!("{:?}", result.status))),
    }
}

#[cfg(test)]
mod tests {
    use vostok_remoting::protocol::message::id::create_offset_msg_id;

    use super::super::browse::tests::stored;
    use super::super::send::SendTables;
    use super::super::send_back::{send_back, SendBack, SentBack};
    use super::super::testing::{broker, peer};
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_lettered_message_goes_back_to_its_topic() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let original = stored(b, "ops-resend", 1).await.remove(0);
        let back = SendBack {
            group: "ops-resend-group".into(),
            offset: original.commit_log_offset,
            delay_level: -1,
            max_reconsume_times: None,
            origin_topic: Some("ops-resend".into()),
        };
        assert_eq!(
            send_back(SendTables::of(b), peer(), back).await,
            Ok(SentBack::DeadLetter)
        );
        let dlq = topic::dlq_topic("ops-resend-group");
        let dead = async {
            loop {
                let got = b.storage.store.get_message(&dlq, 0, 0, 1, i32::MAX, None);
                if let Some(m) = got.messages.first() {
                    break MessageExt::decode(m, false).unwrap();
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        let dead = tokio::time::timeout(std::time::Duration::from_secs(20), dead)
            .await
            .expect("dead-lettered");
        let by = Operator::Console("ops".into());
        let resend = |msg_id: String| ResendDlq {
            group: "ops-resend-group".into(),
            msg_id,
        };
        let id = create_offset_msg_id(dead.store_host, dead.commit_log_offset);
        let resent = resend_dlq(
            &b.storage,
            &b.observed,
            &b.config,
            b.broker_addr,
            &by,
            resend(id),
        )
        .await
        .unwrap();
        assert_eq!(resent.topic, "ops-resend");
        let copy = b
            .storage
            .store
            .look_message_by_offset(decode_offset_msg_id(&resent.msg_id).unwrap().1);
        let copy = copy.expect("stored");
        assert_eq!(
            (copy.topic.as_str(), copy.reconsume_times),
            ("ops-resend", 0)
        );
        assert_eq!(copy.body, original.body);
        // A message of another topic, by its offset id, is not in the group's DLQ.
        let other = create_offset_msg_id(original.store_host, original.commit_log_offset);
        assert_eq!(
            resend_dlq(
                &b.storage,
                &b.observed,
                &b.config,
                b.broker_addr,
                &by,
                resend(other.clone())
            )
            .await,
            Err(ResendError::NotFound(other))
        );
        handle.shutdown().await;
    }
}
