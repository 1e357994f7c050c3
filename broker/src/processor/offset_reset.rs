//! INVOKE_BROKER_TO_RESET_OFFSET (222, `mqadmin resetOffsetByTime`,
//! docs/commands.md#broker-to-client-requests), as Apache's `Broker2Client.resetOffset`:
//! for each write queue of the topic here, the offset of the first message stored at
//! or after `timestamp` (`-1`: the queue's end), kept only where it moves the group
//! back unless `isForce`; the table is pushed to every online client of the group
//! with RESET_CONSUMER_CLIENT_OFFSET (oneway) and answered as `ResetOffsetBody`.
//!
//! **Vostok differs:** the broker also commits the new offsets itself, so the reset
//! holds even if a client misses the push or restarts before it commits; and a group
//! with nobody online is CONSUMER_NOT_ONLINE before its offsets are looked at (Apache
//! first answers SYSTEM_ERROR for a group that never committed), so that the tools
//! fall back to committing the offsets themselves.

use std::time::Duration;

use tracing::{debug, info};
use vostok_remoting::protocol::body::{MessageQueue, ResetOffsetBody};
use vostok_remoting::protocol::header::ResetOffsetRequestHeader;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::Broker;

pub(crate) fn invoke_broker_to_reset_offset(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ResetOffsetRequestHeader);
    let Some(topic) = broker.topics.get(&header.topic) else {
        return error(
            response_code::TOPIC_NOT_EXIST,
            format!(
                "[reset-offset] reset offset failed, no topic in this broker. topic={}",
                header.topic
            ),
        );
    };
    let channels = broker.clients.consumer_channels(&header.group);
    if channels.is_empty() {
        return error(
            response_code::CONSUMER_NOT_ONLINE,
            format!(
                "Consumer not online, so can not reset offset, Group: {} Topic: {} Timestamp: {}",
                header.group, header.topic, header.timestamp
            ),
        );
    }
    let force = header.is_force.unwrap_or(true);
    let mut table = ResetOffsetBody::default();
    for queue_id in 0..topic.write_queue_nums {
        let committed = broker.offsets.query(&header.group, &header.topic, queue_id);
        if committed == -1 {
            return error(
                response_code::SYSTEM_ERROR,
                format!("THe consumer group <{}> not exist", header.group),
            );
        }
        let at_time = if header.timestamp == -1 {
            broker.store.max_offset_in_queue(&header.topic, queue_id)
        } else {
            broker
                .store
                .offset_in_queue_by_time(&header.topic, queue_id, header.timestamp)
        }
        .max(0);
        let offset = if force || at_time < committed {
            at_time
        } else {
            committed
        };
        let mq = MessageQueue::new(
            header.topic.as_str(),
            broker.config.broker_name.as_str(),
            queue_id,
        );
        table.offset_table.insert(mq, offset);
    }
    for (mq, offset) in &table.offset_table {
        broker
            .offsets
            .commit(&header.group, &mq.topic, mq.queue_id, *offset);
    }
    let body = table.encode();
    for channel in channels {
        let push = RemotingCommand::request_with_header(
            request_code::RESET_CONSUMER_CLIENT_OFFSET,
            &ResetOffsetRequestHeader {
                topic: header.topic.clone(),
                group: header.group.clone(),
                timestamp: header.timestamp,
                is_force: header.is_force,
            },
        )
        .with_body(body.clone());
        tokio::spawn(async move {
            if let Err(e) = channel.invoke_oneway(push, Duration::from_secs(5)).await {
                debug!(peer = %channel.peer_addr(), error = %e, "RESET_CONSUMER_CLIENT_OFFSET not delivered");
            }
        });
    }
    info!(topic = %header.topic, group = %header.group, timestamp = header.timestamp, queues = table.offset_table.len(), "offsets reset");
    RemotingCommand::success().with_body(body)
}
