//! What the store answered for a put, as a typed send outcome (RocketMQ's
//! `handlePutMessageResult`), shared by every operation that stores a message: sends,
//! batches, send-backs and transaction commits. Also where a send without a queue id
//! lands, and the latency trace's stamps of a stored send.

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::support::latency_trace::{self, Stage};
use vostok_store::{PutMessageResult, PutMessageStatus};

use super::{Refusal, Refused};

/// How far a stored message got: stored, or stored without the flush or replica the
/// broker was told to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ack {
    Stored,
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
}

/// A stored send: where the message (or the first of a batch) landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) ack: Ack,
    /// The offset message id, ids joined by commas for a batch.
    pub(crate) msg_id: String,
    pub(crate) queue_id: i32,
    pub(crate) queue_offset: i64,
    /// The client's unique key, answered as the transaction id.
    pub(crate) uniq_key: Option<String>,
}

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
pub(crate) fn stamp_append(received: Option<u64>, result: &PutMessageResult) {
    if let (Some(received), Some(append)) = (received, result.append.as_ref()) {
        latency_trace::stamp_at(Stage::Received, append.wrote_offset, received);
        latency_trace::stamp(Stage::Appended, append.wrote_offset);
    }
}

/// The outcome of a put; `max_message_size` (the store's) for a refusal's words.
pub(crate) fn stored(
    max_message_size: usize,
    result: PutMessageResult,
    queue_id: i32,
    uniq_key: Option<String>,
) -> Result<Stored, Refusal> {
    let refuse = |kind, remark: String| Err(Refusal::new(kind, remark));
    let ack = match result.status {
        PutMessageStatus::PutOk => Ack::Stored,
        PutMessageStatus::FlushDiskTimeout => Ack::FlushDiskTimeout,
        PutMessageStatus::FlushSlaveTimeout => Ack::FlushSlaveTimeout,
        PutMessageStatus::SlaveNotAvailable => Ack::SlaveNotAvailable,
        PutMessageStatus::ServiceNotAvailable => {
            return refuse(
                Refused::NotAvailable,
                "service not available now. It may be caused by one of the following reasons: \
                 the broker's disk is full, messages are put to the slave, message store has been shut down, etc.".into(),
            )
        }
        PutMessageStatus::DiskFull => {
            // Retriable for clients (they try another broker); nothing was stored.
            return refuse(
                Refused::NotAvailable,
                "service not available now: the broker's disk is full (no room for the next \
                 commitlog file, or usage above diskSpaceWarningLevelRatio); sends are refused \
                 until space is freed, and nothing was stored".into(),
            )
        }
        PutMessageStatus::CreateMappedFileFailed => {
            return refuse(
                Refused::SystemError,
                "create mapped file failed, server is busy or broken.".into(),
            )
        }
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => {
            return refuse(
                Refused::MessageIllegal,
                format!(
                    "the message is illegal, maybe msg body or properties length not matched. \
                     msg body length limit {}, msg properties length limit 32k.",
                    max_message_size
                ),
            )
        }
        PutMessageStatus::OsPageCacheBusy => {
            return refuse(
                Refused::Busy,
                "[PC_SYNCHRONIZED]broker busy, start flow control for a while".into(),
            )
        }
        PutMessageStatus::UnknownError => {
            return refuse(Refused::SystemError, "UNKNOWN_ERROR".into())
        }
    };
    let Some(append) = result.append else {
        return refuse(
            Refused::SystemError,
            "store returned no append result".into(),
        );
    };
    Ok(Stored {
        ack,
        msg_id: append.msg_id,
        queue_id,
        queue_offset: append.queue_offset,
        uniq_key,
    })
}
