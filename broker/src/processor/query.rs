//! QUERY_MESSAGE and VIEW_MESSAGE_BY_ID (docs/commands.md#message-queries).

use bytes::BytesMut;
use vostok_remoting::protocol::header::{
    QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use vostok_remoting::protocol::response_code;
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::Broker;

/// `defaultQueryMaxNum` for lookups by unique key.
const DEFAULT_QUERY_MAX_NUM: i32 = 32;

/// Runs on the tier's reader threads when the tier is on ([`super::tier_reads`]).
pub(crate) fn query_message(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let mut header = decode_header!(request, QueryMessageRequestHeader);
    if header.unique_key_query == Some(true) {
        header.max_num = DEFAULT_QUERY_MAX_NUM;
    }
    let result = broker.storage.store.query_message(
        &header.topic,
        &header.key,
        header.max_num,
        header.begin_timestamp,
        header.end_timestamp,
    );
    let response_header = QueryMessageResponseHeader {
        index_last_update_timestamp: result.index_last_update_timestamp,
        index_last_update_phyoffset: result.index_last_update_phyoffset,
    };
    if result.messages.is_empty() {
        return error(
            response_code::QUERY_NOT_FOUND,
            "can not find message, maybe time range not correct",
        )
        .with_header(&response_header);
    }
    let mut body = BytesMut::new();
    for record in &result.messages {
        body.extend_from_slice(record);
    }
    RemotingCommand::success()
        .with_header(&response_header)
        .with_body(body.freeze())
}

/// Runs on the tier's reader threads when the tier is on ([`super::tier_reads`]).
pub(crate) fn view_message_by_id(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let header = decode_header!(request, ViewMessageRequestHeader);
    match broker
        .storage
        .store
        .select_one_message_by_offset(header.offset)
    {
        Some(record) => RemotingCommand::success().with_body(record),
        None => error(
            response_code::SYSTEM_ERROR,
            format!("can not find message by the offset, {}", header.offset),
        ),
    }
}
