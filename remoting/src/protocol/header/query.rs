//! QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33): docs/commands.md#message-queries.

use crate::command_header;

command_header! {
    pub struct QueryMessageRequestHeader {
        topic: String = "topic",
        /// A message key, or a UNIQ_KEY when `unique_key_query` is set.
        key: String = "key",
        max_num: i32 = "maxNum",
        begin_timestamp: i64 = "beginTimestamp",
        end_timestamp: i64 = "endTimestamp",
        unique_key_query: Option<bool> = "_UNIQUE_KEY_QUERY",
    }
}

command_header! {
    pub struct QueryMessageResponseHeader {
        index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        index_last_update_phyoffset: i64 = "indexLastUpdatePhyoffset",
    }
}

command_header! {
    pub struct ViewMessageRequestHeader {
        /// Commitlog physical offset, decoded from an offset message id.
        offset: i64 = "offset",
        topic: Option<String> = "topic",
    }
}
