//! Results of puts, pulls and queries.

use bytes::Bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PutMessageStatus {
    PutOk,
    /// Written, but not known durable within `syncFlushTimeout`.
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
    /// Shut down, or a disk error made the store read-only.
    ServiceNotAvailable,
    CreateMappedFileFailed,
    /// Too large, bad topic, mixed batch, ...
    MessageIllegal,
    PropertiesSizeExceeded,
    /// The append lock has been held too long (`osPageCacheBusyTimeOutMills`).
    OsPageCacheBusy,
    /// Disk usage is above `diskSpaceWarningLevelRatio`.
    DiskFull,
    UnknownError,
}

impl PutMessageStatus {
    /// True when the store kept the message, even if flushing or replication timed out:
    /// writing it again would store it twice.
    pub fn is_stored(self) -> bool {
        matches!(
            self,
            PutMessageStatus::PutOk
                | PutMessageStatus::FlushDiskTimeout
                | PutMessageStatus::FlushSlaveTimeout
                | PutMessageStatus::SlaveNotAvailable
        )
    }

    /// RocketMQ's enum constant name (for remarks and logs).
    pub fn as_str(self) -> &'static str {
        match self {
            PutMessageStatus::PutOk => "PUT_OK",
            PutMessageStatus::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
            PutMessageStatus::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
            PutMessageStatus::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
            PutMessageStatus::ServiceNotAvailable => "SERVICE_NOT_AVAILABLE",
            PutMessageStatus::CreateMappedFileFailed => "CREATE_MAPEDFILE_FAILED",
            PutMessageStatus::MessageIllegal => "MESSAGE_ILLEGAL",
            PutMessageStatus::PropertiesSizeExceeded => "PROPERTIES_SIZE_EXCEEDED",
            PutMessageStatus::OsPageCacheBusy => "OS_PAGECACHE_BUSY",
            PutMessageStatus::DiskFull => "DISK_FULL",
            PutMessageStatus::UnknownError => "UNKNOWN_ERROR",
        }
    }
}

/// Where and when a put landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    /// Commitlog offset of the first record.
    pub wrote_offset: i64,
    /// Bytes of all records written (blank excluded).
    pub wrote_bytes: usize,
    /// Offset message id(s) (docs/message.md#offset-message-id), comma-joined for a batch.
    pub msg_id: String,
    pub store_timestamp: i64,
    /// Queue offset of the first record (0 for prepared/rollback records).
    pub queue_offset: i64,
    pub msg_num: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutMessageResult {
    pub status: PutMessageStatus,
    /// Set whenever the records were written, even with a flush timeout.
    pub append: Option<AppendResult>,
}

impl PutMessageResult {
    pub(crate) fn failed(status: PutMessageStatus) -> Self {
        PutMessageResult {
            status,
            append: None,
        }
    }

    pub fn is_ok(&self) -> bool {
        self.status == PutMessageStatus::PutOk
    }
}

/// RocketMQ `GetMessageStatus`; docs/commands.md#pulling maps each to a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GetMessageStatus {
    Found,
    NoMatchedMessage,
    MessageWasRemoving,
    OffsetFoundNull,
    OffsetOverflowBadly,
    OffsetOverflowOne,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    NoMessageInQueue,
}

#[derive(Debug, Clone)]
pub struct GetMessageResult {
    pub status: GetMessageStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    /// Whole records, byte for byte as stored (never blanks or partial records).
    pub messages: Vec<Bytes>,
    pub buffer_total_size: usize,
    /// The data read is older than what the page cache is expected to hold.
    pub suggest_pulling_from_slave: bool,
}

impl GetMessageResult {
    /// An answer without messages.
    pub fn empty(status: GetMessageStatus, next: i64, min: i64, max: i64) -> Self {
        GetMessageResult {
            status,
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
            messages: Vec::new(),
            buffer_total_size: 0,
            suggest_pulling_from_slave: false,
        }
    }

    /// The records concatenated: the body of a pull response.
    pub fn concat(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.buffer_total_size);
        for m in &self.messages {
            out.extend_from_slice(m);
        }
        Bytes::from(out)
    }
}

#[derive(Debug, Clone, Default)]
pub struct QueryMessageResult {
    /// Whole records, newest first.
    pub messages: Vec<Bytes>,
    pub buffer_total_size: usize,
    /// End timestamp of the newest index file (response header of QUERY_MESSAGE).
    pub index_last_update_timestamp: i64,
    /// Last indexed commitlog offset of the newest index file.
    pub index_last_update_phyoffset: i64,
}
