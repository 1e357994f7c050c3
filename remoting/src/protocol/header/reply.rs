//! PUSH_REPLY_MESSAGE_TO_CLIENT (326): a reply pushed by the broker to the client
//! that sent the request (docs/semantics.md#request-reply). The body is the reply's
//! body; the header carries the rest of the message.

use crate::command_header;

command_header! {
    pub struct ReplyMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: Option<bool> = "unitMode",
        /// `ip:port` of the replier.
        born_host: String = "bornHost",
        /// `ip:port` of the broker.
        store_host: String = "storeHost",
        store_timestamp: i64 = "storeTimestamp",
    }
}
