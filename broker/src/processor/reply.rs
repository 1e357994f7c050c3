//! SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2 (docs/semantics.md#request-reply): the
//! send header decoded into a typed reply for `crate::ops::reply`, its outcome encoded
//! back.
//!
//! The answer says whether the push reached the requester: SYSTEM_ERROR when no
//! connection of that client is known or the push failed, as in Apache (the reply may
//! still have been stored).

use vostok_remoting::protocol::header::{SendHeaderView, SendMessageResponseHeader};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{Channel, RemotingCommand};

use super::refused;
use super::send::destination;
use crate::ops::reply::{reply, ReplyRequest};
use crate::ops::send::SendTables;
use crate::ops::Client;
use crate::state::Broker;

pub(crate) async fn send_reply_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let as_send = if request.code == request_code::SEND_REPLY_MESSAGE_V2 {
        request_code::SEND_MESSAGE_V2
    } else {
        request_code::SEND_MESSAGE
    };
    let header = match SendHeaderView::decode(as_send, &request.ext_fields) {
        Ok(h) => h,
        Err(e) => return super::header_error(&request, e),
    };
    let answer = ReplyRequest {
        to: destination(&header),
        producer_group: header.producer_group.to_owned(),
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        flag: header.flag,
        properties: header.properties.unwrap_or_default().to_owned(),
        body: request.body,
        reconsume_times: header.reconsume_times,
        unit_mode: header.unit_mode,
    };
    let replied = match reply(SendTables::of(broker), Client::on(channel), answer).await {
        Ok(replied) => replied,
        Err(refusal) => return refused(refusal),
    };
    // "0" keeps clients from decoding an offset id that does not exist; the stored
    // copy's place goes into the answer, its code stays the push's.
    let (msg_id, queue_offset) = replied.stored.unwrap_or_else(|| ("0".to_owned(), 0));
    let response_header = SendMessageResponseHeader {
        msg_id,
        queue_id: replied.queue_id,
        queue_offset,
        transaction_id: None,
        batch_uniq_id: None,
        msg_region: Some(broker.config.region_id.clone()),
        trace_on: Some(broker.config.trace_on.to_string()),
    };
    match replied.pushed {
        Ok(()) => RemotingCommand::response(response_code::SUCCESS, None),
        Err(remark) => RemotingCommand::response(response_code::SYSTEM_ERROR, remark),
    }
    .with_header(&response_header)
}
