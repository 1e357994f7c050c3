//! CONSUMER_SEND_MSG_BACK (docs/commands.md#send-back): the header decoded into a typed
//! send-back for `crate::ops::send_back`, its outcome answered.

use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
use vostok_remoting::protocol::version;
use vostok_remoting::{Channel, RemotingCommand};

use super::{decode_header, refused};
use crate::ops::send::SendTables;
use crate::ops::send_back::{send_back, SendBack};
use crate::ops::Client;
use crate::state::Broker;

pub(crate) async fn consumer_send_msg_back(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, ConsumerSendMsgBackRequestHeader);
    let back = SendBack {
        group: header.group,
        offset: header.offset,
        delay_level: header.delay_level,
        // Clients before 3.4.9 do not set their own retry limit.
        max_reconsume_times: header
            .max_reconsume_times
            .filter(|_| request.version >= version::V3_4_9),
        origin_topic: header.origin_topic,
    };
    match send_back(SendTables::of(broker), Client::on(channel), back).await {
        Ok(_) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
}
