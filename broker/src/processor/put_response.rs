//! A send outcome (`crate::ops::stored`) as a remoting send response.

use vostok_remoting::protocol::header::SendResponseView;
use vostok_remoting::protocol::response_code;
use vostok_remoting::{ExtFields, RemotingCommand};

use super::refused;
use crate::ops::stored::{Ack, Stored};
use crate::ops::Refusal;
use crate::state::Broker;

/// The send response for a send's outcome.
pub(crate) fn send_response(broker: &Broker, outcome: Result<Stored, Refusal>) -> RemotingCommand {
    let stored = match outcome {
        Ok(stored) => stored,
        Err(refusal) => return refused(refusal),
    };
    let code = match stored.ack {
        Ack::Stored => response_code::SUCCESS,
        Ack::FlushDiskTimeout => response_code::FLUSH_DISK_TIMEOUT,
        Ack::FlushSlaveTimeout => response_code::FLUSH_SLAVE_TIMEOUT,
        Ack::SlaveNotAvailable => response_code::SLAVE_NOT_AVAILABLE,
    };
    let mut response = RemotingCommand::response(code, None);
    response.ext_fields = ExtFields::with_capacity(8);
    // Written from borrowed fields: the region and flag need no copy per send.
    SendResponseView {
        msg_id: &stored.msg_id,
        queue_id: stored.queue_id,
        queue_offset: stored.queue_offset,
        transaction_id: stored.uniq_key.as_deref(),
        batch_uniq_id: None,
        msg_region: Some(&broker.config.region_id),
        trace_on: Some(if broker.config.trace_on {
            "true"
        } else {
            "false"
        }),
    }
    .write_to(&mut response.ext_fields);
    response
}
