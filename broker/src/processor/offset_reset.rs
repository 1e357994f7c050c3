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

use vostok_remoting::protocol::header::ResetOffsetRequestHeader;
use vostok_remoting::protocol::response_code;
use vostok_remoting::RemotingCommand;

use super::{decode_header, error, refused};
use crate::ops::offset_reset::{self as op, ResetOffset, ResetTo};
use crate::state::Broker;

pub(crate) fn invoke_broker_to_reset_offset(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ResetOffsetRequestHeader);
    let reset = ResetOffset {
        group: header.group,
        topic: header.topic,
        to: ResetTo::of_timestamp(header.timestamp),
        force: header.is_force.unwrap_or(true),
    };
    let queues = match op::plan(broker, &reset) {
        Ok(queues) => queues,
        Err(refusal) => return refused(refusal),
    };
    if broker.clients.consumer_channels(&reset.group).is_empty() {
        return error(
            response_code::CONSUMER_NOT_ONLINE,
            format!(
                "Consumer not online, so can not reset offset, Group: {} Topic: {} Timestamp: {}",
                reset.group,
                reset.topic,
                reset.to.timestamp()
            ),
        );
    }
    if queues.iter().any(|q| q.committed.is_none()) {
        return error(
            response_code::SYSTEM_ERROR,
            format!("THe consumer group <{}> not exist", reset.group),
        );
    }
    let table = op::apply(broker, &reset, &queues);
    RemotingCommand::success().with_body(table.encode())
}
