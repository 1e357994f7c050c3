//! NOTIFICATION and POLLING_INFO (docs/pop.md#notification-and-polling_info): whether a
//! POP consumer has something to pop, held like a pop until there is; and how many POP
//! requests are held for a queue.

use vostok_remoting::protocol::header::{
    NotificationRequestHeader, NotificationResponseHeader, PollingInfoRequestHeader,
    PollingInfoResponseHeader,
};
use vostok_remoting::protocol::pop::pop_retry_topic;
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_header, error, success_with};
use crate::ops::pop::{consuming_group, readable_topic};
use crate::state::Broker;

const MAX_POLL: std::time::Duration = std::time::Duration::from_secs(30);

pub(crate) async fn notification(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, NotificationRequestHeader);
    let topic = match readable_topic(&broker.storage.topics, &header.topic) {
        Ok(t) => t,
        Err(e) => return error(e.code, e.remark),
    };
    if header.queue_id >= topic.read_queue_nums {
        return error(
            response_code::INVALID_PARAMETER,
            format!(
                "queueId[{}] is illegal, topic:[{}]",
                header.queue_id, header.topic
            ),
        );
    }
    if let Err(e) = consuming_group(&broker.consumers, &header.consumer_group, Some(channel)) {
        return error(e.code, e.remark);
    }
    let now = now_millis();
    let born = header.born_time.filter(|t| *t != 0).unwrap_or(now);
    let poll = std::time::Duration::from_millis((born + header.poll_time - now).max(0) as u64)
        .min(MAX_POLL);
    let deadline = tokio::time::Instant::now() + poll;
    let closed = channel.closed();
    tokio::pin!(closed);
    let mut polling_full = false;
    loop {
        if has_message(broker, &header, topic.read_queue_nums) {
            return answer(true, false);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline || polling_full || broker.life.shutdown.is_cancelled() {
            return answer(false, polling_full);
        }
        let hold = broker.pop.polling.hold(
            &header.topic,
            &header.consumer_group,
            header.queue_id,
            deadline - now,
            || has_message(broker, &header, topic.read_queue_nums),
        );
        tokio::select! {
            held = hold => polling_full = held.is_err(),
            _ = &mut closed => return answer(false, false),
        }
    }
}

fn answer(has_msg: bool, polling_full: bool) -> RemotingCommand {
    success_with(&NotificationResponseHeader {
        has_msg,
        polling_full: Some(polling_full),
    })
}

/// A queue of the topic (or of its POP retry topics) has messages beyond the group's
/// offset and, for FIFO, is not blocked.
fn has_message(broker: &Broker, h: &NotificationRequestHeader, queues: i32) -> bool {
    let now = now_millis();
    let order = h.order.unwrap_or(false);
    let backlog = |topic: &str, q: i32| {
        let store = &broker.storage.store;
        let committed = broker.consumers.offsets.query(&h.consumer_group, topic, q);
        let from = if committed >= 0 {
            committed
        } else {
            store.min_offset_in_queue(topic, q)
        };
        let blocked = order
            && broker.pop.orders().check_block(
                &(topic.to_owned(), h.consumer_group.clone(), q),
                h.attempt_id.as_deref(),
                now,
            );
        !blocked && store.max_offset_in_queue(topic, q) > from
    };
    let own: Vec<i32> = if h.queue_id < 0 {
        (0..queues).collect()
    } else {
        vec![h.queue_id]
    };
    own.into_iter().any(|q| backlog(&h.topic, q))
        || (!order
            && [false, true].into_iter().any(|v2| {
                let retry = pop_retry_topic(&h.topic, &h.consumer_group, v2);
                broker.storage.topics.contains(&retry) && backlog(&retry, 0)
            }))
}

pub(crate) fn polling_info(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, PollingInfoRequestHeader);
    let topic = match readable_topic(&broker.storage.topics, &header.topic) {
        Ok(t) => t,
        Err(e) => return error(e.code, e.remark),
    };
    if header.queue_id >= topic.read_queue_nums {
        return error(
            response_code::INVALID_PARAMETER,
            format!(
                "queueId[{}] is illegal, topic:[{}]",
                header.queue_id, header.topic
            ),
        );
    }
    if let Err(e) = consuming_group(&broker.consumers, &header.consumer_group, Some(channel)) {
        return error(e.code, e.remark);
    }
    let n = broker
        .pop
        .polling
        .count(&header.topic, &header.consumer_group, header.queue_id);
    success_with(&PollingInfoResponseHeader {
        polling_num: n as i32,
    })
}
