//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361): docs/commands.md#pulling.

use crate::command_header;

/// Pull `sysFlag` bit 0: the broker stores `commitOffset`.
pub const PULL_FLAG_COMMIT_OFFSET: i32 = 0x1;
/// Bit 1: the broker may hold the request (long polling).
pub const PULL_FLAG_SUSPEND: i32 = 0x2;
/// Bit 2: filter by the request's own subscription rather than the heartbeat's.
pub const PULL_FLAG_SUBSCRIPTION: i32 = 0x4;
/// Bit 3: class filter (obsolete).
pub const PULL_FLAG_CLASS_FILTER: i32 = 0x8;
/// Bit 4: lite pull.
pub const PULL_FLAG_LITE_PULL: i32 = 0x10;

command_header! {
    pub struct PullMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        max_msg_nums: i32 = "maxMsgNums",
        sys_flag: i32 = "sysFlag",
        commit_offset: i64 = "commitOffset",
        suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        subscription: Option<String> = "subscription",
        sub_version: i64 = "subVersion",
        expression_type: Option<String> = "expressionType",
        max_msg_bytes: Option<i32> = "maxMsgBytes",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    pub struct PullMessageResponseHeader {
        suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        next_begin_offset: i64 = "nextBeginOffset",
        min_offset: i64 = "minOffset",
        max_offset: i64 = "maxOffset",
    }
}
