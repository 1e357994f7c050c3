//! What a SLAVE refuses (RocketMQ 4.x): its commitlog and tables are copies of its
//! master's, so requests that would write them are sent back with SERVICE_NOT_AVAILABLE
//! (sends: `send::check_message`; END_TRANSACTION: SLAVE_NOT_AVAILABLE in
//! `transaction`). Admin writes would be overwritten by the next metadata sync; POP
//! writes checkpoints to the commitlog. Pulls, queries, offset commits and reads of
//! the tables are served.

use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::error;
use crate::state::Broker;

/// The refusal for `code` on a slave, `None` when the request is served.
pub(crate) fn slave_refusal(broker: &Broker, code: i32) -> Option<RemotingCommand> {
    if broker.is_master() {
        return None;
    }
    let what = match code {
        request_code::UPDATE_AND_CREATE_TOPIC
        | request_code::DELETE_TOPIC_IN_BROKER
        | request_code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
        | request_code::DELETE_SUBSCRIPTIONGROUP
        | request_code::SET_MESSAGE_REQUEST_MODE => "admin writes",
        request_code::POP_MESSAGE
        | request_code::POP_MESSAGE_SHORT
        | request_code::ACK_MESSAGE
        | request_code::ACK_MESSAGE_SHORT
        | request_code::BATCH_ACK_MESSAGE
        | request_code::BATCH_ACK_MESSAGE_SHORT
        | request_code::CHANGE_MESSAGE_INVISIBLETIME
        | request_code::CHANGE_MESSAGE_INVISIBLETIME_SHORT => "POP consumption",
        _ => return None,
    };
    Some(error(
        response_code::SERVICE_NOT_AVAILABLE,
        format!(
            "the broker[{}, id {}] is a slave: {what} go to its master",
            broker.config.broker_name, broker.config.broker_id
        ),
    ))
}
