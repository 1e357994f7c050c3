//! Requests a broker sends to clients for operators
//! (docs/commands.md#broker-to-client-requests).

use crate::command_header;

command_header! {
    pub struct GetConsumerRunningInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: String = "clientId",
        jstack_enable: Option<bool> = "jstackEnable",
    }
}

command_header! {
    pub struct ConsumeMessageDirectlyResultRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: Option<String> = "clientId",
        msg_id: Option<String> = "msgId",
        broker_name: Option<String> = "brokerName",
        topic: Option<String> = "topic",
    }
}

command_header! {
    pub struct ResetOffsetRequestHeader {
        topic: String = "topic",
        group: String = "group",
        timestamp: i64 = "timestamp",
        is_force: Option<bool> = "isForce",
    }
}

command_header! {
    pub struct GetConsumerStatusRequestHeader {
        topic: String = "topic",
        group: String = "group",
        client_addr: Option<String> = "clientAddr",
    }
}
