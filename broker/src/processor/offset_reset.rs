//! INVOKE_BROKER_TO_RESET_OFFSET (222, `mqadmin resetOffsetByTime`,
//! docs/commands.md#broker-to-client-requests): decoded here, done by
//! [`crate::ops::offset::reset_offset`], answered as `ResetOffsetBody`.

use vostok_remoting::protocol::header::ResetOffsetRequestHeader;
use vostok_remoting::RemotingCommand;

use super::{decode_header, refused};
use crate::ops::offset::{reset_offset, ResetOffset};
use crate::state::Broker;

pub(crate) fn invoke_broker_to_reset_offset(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ResetOffsetRequestHeader);
    let reset = ResetOffset {
        group: header.group,
        topic: header.topic,
        timestamp: header.timestamp,
        force: header.is_force,
    };
    match reset_offset(broker, &reset) {
        Ok(table) => RemotingCommand::success().with_body(table.encode()),
        Err(refusal) => refused(refusal),
    }
}
