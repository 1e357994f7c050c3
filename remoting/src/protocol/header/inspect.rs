//! Operator requests about a broker's own state (docs/commands.md#broker-inspection):
//! consume stats of every group, one subscription group's config, a consume queue's
//! entries, a slave's record of its master's flushed offset, a group's request mode.

use crate::command_header;

command_header! {
    /// GET_BROKER_CONSUME_STATS (317): `isOrder` keeps only ordered topics.
    pub struct GetConsumeStatsInBrokerHeader {
        is_order: bool = "isOrder",
    }
}

command_header! {
    /// GET_SUBSCRIPTIONGROUP_CONFIG (352).
    pub struct GetSubscriptionGroupConfigRequestHeader {
        group: String = "group",
    }
}

command_header! {
    /// QUERY_CONSUME_QUEUE (321): `count` entries of a queue from `index`, and with
    /// `consumerGroup` that group's subscription and whether each entry matches it.
    pub struct QueryConsumeQueueRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        index: i64 = "index",
        count: i32 = "count",
        consumer_group: Option<String> = "consumerGroup",
    }
}

command_header! {
    /// RESET_MASTER_FLUSH_OFFSET (908), to a slave.
    pub struct ResetMasterFlushOffsetHeader {
        master_flush_offset: Option<i64> = "masterFlushOffset",
    }
}
