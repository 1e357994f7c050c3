//! Client management and send-back: docs/commands.md, sections "Unregistering a
//! client", "Consumer list", "Send-back" and "Consumer ids changed".

use crate::command_header;

command_header! {
    pub struct UnregisterClientRequestHeader {
        client_id: String = "clientID",
        producer_group: Option<String> = "producerGroup",
        consumer_group: Option<String> = "consumerGroup",
    }
}

command_header! {
    pub struct GetConsumerListByGroupRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

command_header! {
    pub struct NotifyConsumerIdsChangedRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

command_header! {
    pub struct ConsumerSendMsgBackRequestHeader {
        /// Commitlog offset of the failed message.
        offset: i64 = "offset",
        group: String = "group",
        /// 0: the broker picks `3 + reconsumeTimes`; > 0: that level; < 0: straight to DLQ.
        delay_level: i32 = "delayLevel",
        origin_msg_id: Option<String> = "originMsgId",
        origin_topic: Option<String> = "originTopic",
        unit_mode: Option<bool> = "unitMode",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
    }
}

command_header! {
    pub struct GetConsumerConnectionListRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

command_header! {
    pub struct GetProducerConnectionListRequestHeader {
        producer_group: String = "producerGroup",
    }
}
