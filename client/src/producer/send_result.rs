//! What a stored send returns (Java `SendStatus` / `SendResult`): the status the
//! broker answered with and where the message was written.

use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::response_code;

/// Outcome of a stored send (Java `SendStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendStatus {
    SendOk,
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
}

impl SendStatus {
    pub fn name(self) -> &'static str {
        match self {
            SendStatus::SendOk => "SEND_OK",
            SendStatus::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
            SendStatus::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
            SendStatus::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
        }
    }

    pub(crate) fn from_code(code: i32) -> Option<Self> {
        match code {
            response_code::SUCCESS => Some(SendStatus::SendOk),
            response_code::FLUSH_DISK_TIMEOUT => Some(SendStatus::FlushDiskTimeout),
            response_code::FLUSH_SLAVE_TIMEOUT => Some(SendStatus::FlushSlaveTimeout),
            response_code::SLAVE_NOT_AVAILABLE => Some(SendStatus::SlaveNotAvailable),
            _ => None,
        }
    }
}

/// What the broker answered to a stored send (Java `SendResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    pub send_status: SendStatus,
    /// The client id (`UNIQ_KEY`); for a batch, the ids of all its messages joined by `,`.
    pub msg_id: String,
    /// The broker's offset message id(s) (store host + commitlog offset).
    pub offset_msg_id: String,
    /// The queue written, topic without namespace.
    pub message_queue: MessageQueue,
    pub queue_offset: i64,
    pub transaction_id: Option<String>,
    pub region_id: Option<String>,
    pub trace_on: bool,
}
