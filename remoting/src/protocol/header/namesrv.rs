//! Name-server requests: docs/commands.md#name-server-commands and
//! docs/flows.md#name-server.

use crate::command_header;

command_header! {
    pub struct RegisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        ha_server_addr: String = "haServerAddr",
        broker_id: i64 = "brokerId",
        heartbeat_timeout_millis: Option<i64> = "heartbeatTimeoutMillis",
        enable_acting_master: Option<bool> = "enableActingMaster",
        compressed: Option<bool> = "compressed",
        body_crc32: Option<i32> = "bodyCrc32",
    }
}

command_header! {
    pub struct RegisterBrokerResponseHeader {
        ha_server_addr: Option<String> = "haServerAddr",
        master_addr: Option<String> = "masterAddr",
    }
}

command_header! {
    pub struct UnRegisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

command_header! {
    pub struct BrokerHeartbeatRequestHeader {
        cluster_name: String = "clusterName",
        broker_addr: String = "brokerAddr",
        broker_name: String = "brokerName",
        broker_id: Option<i64> = "brokerId",
        epoch: Option<i32> = "epoch",
        max_offset: Option<i64> = "maxOffset",
        confirm_offset: Option<i64> = "confirmOffset",
        heartbeat_timeout_mills: Option<i64> = "heartbeatTimeoutMills",
        /// Controller mode: a lower value wins an election among equals.
        election_priority: Option<i32> = "electionPriority",
    }
}

command_header! {
    pub struct QueryDataVersionRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

command_header! {
    pub struct QueryDataVersionResponseHeader {
        changed: bool = "changed",
    }
}

command_header! {
    pub struct GetRouteInfoRequestHeader {
        topic: String = "topic",
        accept_standard_json_only: Option<bool> = "acceptStandardJsonOnly",
    }
}

command_header! {
    pub struct PutKvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
        value: String = "value",
    }
}

command_header! {
    /// GET_KV_CONFIG and DELETE_KV_CONFIG.
    pub struct KvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
    }
}

command_header! {
    pub struct GetKvConfigResponseHeader {
        value: Option<String> = "value",
    }
}

command_header! {
    pub struct GetKvListByNamespaceRequestHeader {
        namespace: String = "namespace",
    }
}

command_header! {
    /// WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER.
    pub struct BrokerPermRequestHeader {
        broker_name: String = "brokerName",
    }
}

command_header! {
    pub struct WipeWritePermOfBrokerResponseHeader {
        wipe_topic_count: i32 = "wipeTopicCount",
    }
}

command_header! {
    pub struct AddWritePermOfBrokerResponseHeader {
        add_topic_count: i32 = "addTopicCount",
    }
}
