//! POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, PEEK_MESSAGE, NOTIFICATION and
//! POLLING_INFO headers (docs/pop.md#headers; `PopMessageRequestHeader` and siblings).

use crate::command_header;

/// `initMode` of a POP_MESSAGE (`ConsumeInitMode`): where a group without an offset starts.
pub const INIT_MODE_MIN: i32 = 0;
pub const INIT_MODE_MAX: i32 = 1;

command_header! {
    pub struct PopMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        /// Negative: every readable queue, starting at a random one.
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
        invisible_time: i64 = "invisibleTime",
        /// Longest hold in ms; 0 answers at once.
        poll_time: i64 = "pollTime",
        /// The client's clock when it sent the request; missing or 0 means now.
        born_time: Option<i64> = "bornTime",
        init_mode: Option<i32> = "initMode",
        exp_type: Option<String> = "expType",
        exp: Option<String> = "exp",
        order: Option<bool> = "order",
        attempt_id: Option<String> = "attemptId",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    pub struct PopMessageResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
        rest_num: i64 = "restNum",
        start_offset_info: Option<String> = "startOffsetInfo",
        msg_offset_info: Option<String> = "msgOffsetInfo",
        order_count_info: Option<String> = "orderCountInfo",
    }
}

command_header! {
    pub struct AckMessageRequestHeader {
        consumer_group: String = "consumerGroup",
        /// The topic the message was read from: a POP retry topic for a retried message.
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    pub struct ChangeInvisibleTimeRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        extra_info: String = "extraInfo",
        offset: i64 = "offset",
        invisible_time: i64 = "invisibleTime",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    pub struct ChangeInvisibleTimeResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
    }
}

command_header! {
    pub struct PeekMessageRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
        consumer_group: String = "consumerGroup",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    pub struct NotificationRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        poll_time: i64 = "pollTime",
        born_time: Option<i64> = "bornTime",
        order: Option<bool> = "order",
        attempt_id: Option<String> = "attemptId",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    pub struct NotificationResponseHeader {
        has_msg: bool = "hasMsg",
        polling_full: Option<bool> = "pollingFull",
    }
}

command_header! {
    pub struct PollingInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    pub struct PollingInfoResponseHeader {
        polling_num: i32 = "pollingNum",
    }
}
