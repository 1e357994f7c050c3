//! INVOKE_BROKER_TO_RESET_OFFSET (222, `mqadmin resetOffsetByTime`,
//! docs/commands.md#broker-to-client-requests): decoded here, done by
//! [`crate::ops::offset_reset`], answered as `ResetOffsetBody`.

use vostok_remoting::protocol::header::ResetOffsetRequestHeader;
use vostok_remoting::protocol::response_code;
use vostok_remoting::RemotingCommand;

use super::{decode_header, error, refused};
use crate::ops::offset_reset::{self as op, ResetOffset, ResetTo};
use crate::ops::{Refusal, Refused};
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
    let queues = match op::plan(&broker.storage, &broker.consumers, &reset) {
        Ok(queues) => queues,
        Err(refusal) => return refused(refusal),
    };
    if broker
        .consumers
        .clients
        .consumer_channels(&reset.group)
        .is_empty()
    {
        return refused(Refusal::new(
            Refused::NotOnline,
            format!(
                "Consumer not online, so can not reset offset, Group: {} Topic: {} Timestamp: {}",
                reset.group,
                reset.topic,
                reset.to.timestamp()
            ),
        ));
    }
    if queues.iter().any(|q| q.committed.is_none()) {
        return error(
            response_code::SYSTEM_ERROR,
            format!("THe consumer group <{}> not exist", reset.group),
        );
    }
    let table = op::apply(
        &broker.consumers,
        &broker.config.broker_name,
        &reset,
        &queues,
    );
    RemotingCommand::success().with_body(table.encode())
}
