//! What the store answered, as a send response (RocketMQ's `handlePutMessageResult`),
//! shared by every request that stores a message: sends, batches, send-backs and
//! transaction commits. Also where a send without a queue id lands, and the latency
//! trace's stamps of a stored send.

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::header::SendMessageResponseHeader;
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::latency_trace::{self, Stage};
use vostok_remoting::RemotingCommand;
use vostok_store::{PutMessageResult, PutMessageStatus};

use super::error;
use crate::state::Broker;

/// A negative queue id means "any writable queue".
pub(crate) fn choose_queue(requested: i32, config: &TopicConfig) -> i32 {
    if requested >= 0 {
        requested
    } else {
        rand::random_range(0..config.write_queue_nums.max(1))
    }
}

/// The latency trace's received and appended stamps, named by the commitlog offset of
/// the (first) record written; `received` is `None` when the trace is off.
pub(super) fn stamp_append(received: Option<u64>, result: &PutMessageResult) {
    if let (Some(received), Some(append)) = (received, result.append.as_ref()) {
        latency_trace::stamp_at(Stage::Received, append.wrote_offset, received);
        latency_trace::stamp(Stage::Appended, append.wrote_offset);
    }
}

/// The send response for a put result.
pub(crate) fn put_response(
    broker: &Broker,
    result: PutMessageResult,
    queue_id: i32,
    uniq_key: Option<String>,
) -> RemotingCommand {
    let code = match result.status {
        PutMessageStatus::PutOk => response_code::SUCCESS,
        PutMessageStatus::FlushDiskTimeout => response_code::FLUSH_DISK_TIMEOUT,
        PutMessageStatus::FlushSlaveTimeout => response_code::FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus::SlaveNotAvailable => response_code::SLAVE_NOT_AVAILABLE,
        PutMessageStatus::ServiceNotAvailable => {
            return error(
                response_code::SERVICE_NOT_AVAILABLE,
                "service not available now. It may be caused by one of the following reasons: \
                 the broker's disk is full, messages are put to the slave, message store has been shut down, etc.",
            )
        }
        PutMessageStatus::DiskFull => {
            // Retriable for clients (they try another broker); nothing was stored.
            return error(
                response_code::SERVICE_NOT_AVAILABLE,
                "service not available now: the broker's disk is full (no room for the next \
                 commitlog file, or usage above diskSpaceWarningLevelRatio); sends are refused \
                 until space is freed, and nothing was stored",
            )
        }
        PutMessageStatus::CreateMappedFileFailed => {
            return error(
                response_code::SYSTEM_ERROR,
                "create mapped file failed, server is busy or broken.",
            )
        }
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => {
            return error(
                response_code::MESSAGE_ILLEGAL,
                format!(
                    "the message is illegal, maybe msg body or properties length not matched. \
                     msg body length limit {}, msg properties length limit 32k.",
                    broker.config.store.max_message_size
                ),
            )
        }
        PutMessageStatus::OsPageCacheBusy => {
            return error(
                response_code::SYSTEM_BUSY,
                "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
            )
        }
        PutMessageStatus::UnknownError => return error(response_code::SYSTEM_ERROR, "UNKNOWN_ERROR"),
    };
    let Some(append) = result.append else {
        return error(
            response_code::SYSTEM_ERROR,
            "store returned no append result",
        );
    };
    let header = SendMessageResponseHeader {
        msg_id: append.msg_id,
        queue_id,
        queue_offset: append.queue_offset,
        transaction_id: uniq_key,
        batch_uniq_id: None,
        msg_region: Some(broker.config.region_id.clone()),
        trace_on: Some(broker.config.trace_on.to_string()),
    };
    RemotingCommand::response(code, None).with_header(&header)
}
