//! Vostok's operations requests (docs/commands.md#vostok-operations): where a message
//! is, browsing, removing and resending waiting messages, lag, connected clients.

use crate::command_header;

command_header! {
    /// VOSTOK_MESSAGE_STATUS: a message by id (offset or unique id) or by key.
    pub struct MessageStatusRequestHeader {
        topic: String = "topic",
        msg_id: Option<String> = "msgId",
        key: Option<String> = "key",
    }
}

command_header! {
    /// VOSTOK_BROWSE_MESSAGES: waiting messages of a queue (all queues when `queueId`
    /// is absent), from `group`'s committed offset (the queue's start without one).
    pub struct BrowseMessagesRequestHeader {
        topic: String = "topic",
        group: Option<String> = "group",
        queue_id: Option<i32> = "queueId",
        max_count: Option<i32> = "maxCount",
    }
}

command_header! {
    /// VOSTOK_REMOVE_MESSAGE: one waiting message, by queue and offset.
    pub struct RemoveMessageRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
    }
}

command_header! {
    /// VOSTOK_RESEND_DLQ_MESSAGE: a dead-lettered message of `group`, back to its topic.
    pub struct ResendDlqMessageRequestHeader {
        group: String = "group",
        msg_id: String = "msgId",
    }
}

command_header! {
    /// VOSTOK_GET_GROUP_LAG: a group's lag per queue, optionally of one topic.
    pub struct GroupLagRequestHeader {
        group: String = "group",
        topic: Option<String> = "topic",
    }
}
