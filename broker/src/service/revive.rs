//! POP revive (`PopReviveService`, docs/pop.md#checkpoints-acks-and-revive): messages
//! popped and not acked within their invisible time come back.
//!
//! Every `reviveInterval` (sooner when a checkpoint is due sooner) the service takes
//! the due checkpoints out of the table and, for each offset not acked, stores a copy
//! of the message in the group's POP retry topic (queue 0, `reconsumeTimes + 1`,
//! `1ST_POP_TIME` kept), or in `%DLQ%<group>` once the message has been reconsumed
//! `retryMaxTimes` times. Then it stores a `bAck` record naming the revived offsets, so
//! that a restart does not revive them again, and moves the revive queues' watermarks
//! (the offsets of `CID_RMQ_SYS_REVIVE_GROUP`) past every finished checkpoint.
//!
//! **Vostok differs:** RocketMQ's broker has no DLQ rule for POP (its 5.x proxy moves a
//! message to the DLQ when the client sees it too often); Vostok's revive does.

use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info, warn};
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::pop::{self, REVIVE_GROUP};
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::support::time::now_millis;

use crate::reroute;
use crate::state::master_services::ServiceScope;
use crate::state::pop::checkpoint::Checkpoint;
use crate::state::pop::journal;
use crate::state::Broker;

/// Most checkpoints revived in one pass.
const MAX_PER_PASS: usize = 1024;

/// Starts the revive loop, until `scope` stops (a master only).
pub(crate) fn spawn(broker: &Arc<Broker>, scope: &ServiceScope) {
    let (b, stop) = (broker.clone(), scope.stop().clone());
    scope.spawn(async move {
        let interval = b.config.pop.revive_interval;
        while !stop.is_cancelled() {
            let revived = revive_due(&b).await;
            advance_watermarks(&b);
            if revived >= MAX_PER_PASS {
                continue;
            }
            let next = b.pop.checkpoints().next_due();
            let wait = next.map_or(interval, |at| {
                Duration::from_millis(
                    (at - now_millis()).clamp(1, interval.as_millis() as i64) as u64
                )
            });
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => break,
            }
        }
    });
}

/// Revives the checkpoints due now; returns how many were taken.
async fn revive_due(broker: &Broker) -> usize {
    let due = broker
        .pop
        .checkpoints()
        .take_due(now_millis(), MAX_PER_PASS);
    let n = due.len();
    for ck in due {
        revive(broker, ck).await;
    }
    n
}

/// Moves each revive queue's offset to its first record still needed.
fn advance_watermarks(broker: &Broker) {
    let topic = &broker.pop.revive_topic;
    for qid in 0..broker.pop.revive_queue_num {
        if let Some(w) = broker.pop.watermark(&broker.storage.store, qid) {
            if w > broker.consumers.offsets.query(REVIVE_GROUP, topic, qid) {
                broker.consumers.offsets.commit(REVIVE_GROUP, topic, qid, w);
            }
        }
    }
}

/// The normal topic of a checkpoint's topic (itself, or the topic its POP retry topic
/// is for).
fn normal_topic<'a>(ck_topic: &'a str, group: &str) -> &'a str {
    ck_topic
        .strip_prefix(topic::RETRY_GROUP_TOPIC_PREFIX)
        .and_then(|rest| rest.strip_prefix(group))
        .and_then(|rest| rest.strip_prefix(['_', '+']))
        .unwrap_or(ck_topic)
}

async fn revive(broker: &Broker, mut ck: Checkpoint) {
    let group = ck.key.group.to_string();
    let normal = normal_topic(&ck.key.topic, &group).to_owned();
    let group_config = broker.consumers.subscriptions.get(&group);
    let (Some(group_config), true) = (group_config, broker.storage.topics.contains(&normal)) else {
        // The group or topic was deleted: nothing to bring back.
        broker
            .pop
            .checkpoints()
            .finish_revive(ck.revive_qid, ck.revive_offset);
        return;
    };
    let mut revived = Vec::new();
    for i in 0..ck.diffs.len() {
        if ck.is_acked(i) {
            continue;
        }
        let offset = ck.offset_at(i);
        match revive_one(broker, &ck, offset, &normal, group_config.retry_max_times).await {
            Some(true) => {}
            Some(false) => {
                // The store refused the copy: try the rest again shortly.
                let retry_at = now_millis() + broker.config.pop.revive_interval.as_millis() as i64;
                mark_revived(broker, &ck, &revived).await;
                for o in &revived {
                    if let Some(j) = ck.index_of(*o) {
                        ck.acked |= 1 << j;
                    }
                }
                broker.pop.checkpoints().restore(ck, retry_at);
                return;
            }
            None => debug!(topic = %ck.key.topic, offset, "popped message gone; not revived"),
        }
        revived.push(offset);
    }
    mark_revived(broker, &ck, &revived).await;
    broker
        .pop
        .checkpoints()
        .finish_revive(ck.revive_qid, ck.revive_offset);
    if !revived.is_empty() {
        broker.pop.polling.notify_group(&normal, &group);
    }
}

/// Stores the record that says these offsets of `ck` are done with.
async fn mark_revived(broker: &Broker, ck: &Checkpoint, offsets: &[i64]) {
    if offsets.is_empty() {
        return;
    }
    let record = journal::ack_record(
        &ck.key,
        offsets,
        &broker.pop.revive_topic,
        ck.revive_qid,
        &broker.config.broker_name,
        broker.broker_addr,
    );
    let status = broker.storage.store.put_message(record).await.status;
    if !status.is_stored() {
        warn!(
            ?status,
            "cannot record revived offsets; a restart may revive them again"
        );
    }
}

/// Copies the message at `offset` into the retry topic or the DLQ. `None`: the
/// message is no longer in the store; `Some(false)`: the store refused the copy.
async fn revive_one(
    broker: &Broker,
    ck: &Checkpoint,
    offset: i64,
    normal: &str,
    max_reconsume: i32,
) -> Option<bool> {
    let got =
        broker
            .storage
            .store
            .get_message(&ck.key.topic, ck.key.queue_id, offset, 1, i32::MAX, None);
    let original = got
        .messages
        .first()
        .and_then(|r| MessageExt::decode(r, false).ok())
        .filter(|m| m.queue_offset == offset)?;
    let group = &*ck.key.group;
    let mut msg = reroute::copy_of(&original, broker.broker_addr);
    let mut props = original.properties.clone();
    props.remove(property::POP_CK);
    if original.reconsume_times == 0 || !props.contains(property::FIRST_POP_TIME) {
        props.insert(property::FIRST_POP_TIME, ck.key.pop_time.to_string());
    }
    let dead_letter = original.reconsume_times >= max_reconsume;
    if dead_letter {
        let dlq = topic::dlq_topic(group);
        broker.storage.topics.get_or_create(
            &dlq,
            topic::DLQ_NUMS_PER_GROUP,
            perm::READ | perm::WRITE,
            0,
        );
        if !props.contains(property::RETRY_TOPIC) {
            props.insert(property::RETRY_TOPIC, normal);
        }
        info!(
            group,
            topic = normal,
            reconsume = original.reconsume_times,
            "popped message sent to the dead-letter queue"
        );
        msg.topic = dlq;
    } else {
        msg.topic = if topic::is_retry_topic(&ck.key.topic) {
            ck.key.topic.to_string()
        } else {
            pop::pop_retry_topic(normal, group, broker.config.pop.enable_retry_topic_v2)
        };
        broker
            .storage
            .topics
            .get_or_create(&msg.topic, 1, perm::READ | perm::WRITE, 0);
    }
    msg.queue_id = 0;
    msg.reconsume_times = original.reconsume_times.saturating_add(1);
    props.insert(property::WAIT_STORE_MSG_OK, "false");
    msg.properties = props.encode();
    let stored = broker
        .storage
        .store
        .put_message(msg)
        .await
        .status
        .is_stored();
    if stored {
        broker.observed.count_put(1);
        if dead_letter {
            broker.observed.metrics.events.dlq_moved(group, normal);
        }
    }
    Some(stored)
}

#[cfg(test)]
mod tests {
    #[test]
    fn normal_topics_of_retry_topics() {
        assert_eq!(super::normal_topic("%RETRY%g_T", "g"), "T");
        assert_eq!(super::normal_topic("%RETRY%g+T_x", "g"), "T_x");
        assert_eq!(super::normal_topic("T", "g"), "T");
        assert_eq!(super::normal_topic("%RETRY%a_b_T", "a_b"), "T");
    }
}
