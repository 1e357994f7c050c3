//! Consumer offsets and queue offset queries: docs/commands.md, sections "Consumer
//! offsets" and "Queue offsets and times".

use crate::command_header;

command_header! {
    pub struct QueryConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        set_zero_if_not_found: Option<bool> = "setZeroIfNotFound",
    }
}

command_header! {
    pub struct QueryConsumerOffsetResponseHeader {
        offset: i64 = "offset",
    }
}

command_header! {
    pub struct UpdateConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        commit_offset: i64 = "commitOffset",
    }
}

command_header! {
    pub struct GetMaxOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        committed: Option<bool> = "committed",
    }
}

command_header! {
    /// Response of GET_MAX_OFFSET, GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP.
    pub struct OffsetResponseHeader {
        offset: i64 = "offset",
    }
}

command_header! {
    pub struct GetMinOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

command_header! {
    pub struct SearchOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        timestamp: i64 = "timestamp",
        /// `LOWER` (default) or `UPPER`.
        boundary_type: Option<String> = "boundaryType",
    }
}

command_header! {
    pub struct GetEarliestMsgStoretimeRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
    }
}

command_header! {
    pub struct GetEarliestMsgStoretimeResponseHeader {
        timestamp: i64 = "timestamp",
    }
}

command_header! {
    /// GET_CONSUME_STATS: a group's offsets on one topic, or on every topic it has
    /// offsets for when `topic` is absent.
    pub struct GetConsumeStatsRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: Option<String> = "topic",
    }
}
