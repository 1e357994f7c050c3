//! Controller-mode headers (docs/controller.md#requests; RocketMQ
//! `remoting/protocol/header/controller/*`). Field names and optionality follow the
//! Java classes; `invokeTime` is written by Java and ignored here.

use crate::command_header;

command_header! {
    /// CONTROLLER_ALTER_SYNC_STATE_SET (1001); the body is a [`crate::protocol::body::SyncStateSet`].
    pub struct AlterSyncStateSetRequestHeader {
        broker_name: String = "brokerName",
        master_broker_id: i64 = "masterBrokerId",
        master_epoch: i32 = "masterEpoch",
        invoke_time: Option<i64> = "invokeTime",
    }
}

command_header! {
    pub struct AlterSyncStateSetResponseHeader {
        new_sync_state_set_epoch: i32 = "newSyncStateSetEpoch",
    }
}

command_header! {
    /// CONTROLLER_ELECT_MASTER (1002). `designateElect`: an operator names the new
    /// master (`brokerId`); otherwise the broker asks to be elected (`brokerId` is its own).
    pub struct ElectMasterRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        broker_id: i64 = "brokerId",
        designate_elect: Option<bool> = "designateElect",
        invoke_time: Option<i64> = "invokeTime",
    }
}

command_header! {
    /// The answer to 1002 and 1003 (`RegisterBrokerToControllerResponseHeader` adds
    /// cluster and broker names).
    pub struct ElectMasterResponseHeader {
        cluster_name: Option<String> = "clusterName",
        broker_name: Option<String> = "brokerName",
        master_broker_id: Option<i64> = "masterBrokerId",
        master_address: Option<String> = "masterAddress",
        master_epoch: Option<i32> = "masterEpoch",
        sync_state_set_epoch: Option<i32> = "syncStateSetEpoch",
        /// Vostok: the master's replication address (see `haAddress` above).
        master_ha_address: Option<String> = "masterHaAddress",
    }
}

command_header! {
    /// CONTROLLER_REGISTER_BROKER (1003).
    pub struct RegisterBrokerToControllerRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        broker_id: i64 = "brokerId",
        broker_address: String = "brokerAddress",
        invoke_time: Option<i64> = "invokeTime",
        /// Vostok: where the broker's replication port listens (`ip:port`), handed to
        /// its slaves when it is master. Java brokers do not send it.
        ha_address: Option<String> = "haAddress",
    }
}

command_header! {
    /// CONTROLLER_GET_REPLICA_INFO (1004); the answer's body is a SyncStateSet.
    pub struct GetReplicaInfoRequestHeader {
        broker_name: String = "brokerName",
    }
}

command_header! {
    pub struct GetReplicaInfoResponseHeader {
        master_broker_id: Option<i64> = "masterBrokerId",
        master_address: Option<String> = "masterAddress",
        master_epoch: Option<i32> = "masterEpoch",
        /// Vostok: the master's replication address.
        master_ha_address: Option<String> = "masterHaAddress",
    }
}

command_header! {
    /// The answer to CONTROLLER_GET_METADATA_INFO (1005).
    pub struct GetMetaDataResponseHeader {
        group: Option<String> = "group",
        controller_leader_id: Option<String> = "controllerLeaderId",
        controller_leader_address: Option<String> = "controllerLeaderAddress",
        is_leader: bool = "isLeader",
        peers: Option<String> = "peers",
    }
}

command_header! {
    /// CONTROLLER_GET_NEXT_BROKER_ID (1012).
    pub struct GetNextBrokerIdRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
    }
}

command_header! {
    pub struct GetNextBrokerIdResponseHeader {
        cluster_name: Option<String> = "clusterName",
        broker_name: Option<String> = "brokerName",
        next_broker_id: Option<i64> = "nextBrokerId",
    }
}

command_header! {
    /// CONTROLLER_APPLY_BROKER_ID (1013): `registerCheckCode` is `brokerAddr;timestamp`,
    /// so that the same broker applying again is recognised.
    pub struct ApplyBrokerIdRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
        applied_broker_id: i64 = "appliedBrokerId",
        register_check_code: String = "registerCheckCode",
    }
}

command_header! {
    pub struct ApplyBrokerIdResponseHeader {
        cluster_name: Option<String> = "clusterName",
        broker_name: Option<String> = "brokerName",
    }
}

command_header! {
    /// CLEAN_BROKER_DATA (1011).
    pub struct CleanControllerBrokerDataRequestHeader {
        cluster_name: Option<String> = "clusterName",
        broker_name: String = "brokerName",
        broker_controller_ids_to_clean: Option<String> = "brokerControllerIdsToClean",
        is_clean_living_broker: Option<bool> = "isCleanLivingBroker",
        invoke_time: Option<i64> = "invokeTime",
    }
}

command_header! {
    /// NOTIFY_BROKER_ROLE_CHANGED (1008), controller → broker; the body is a SyncStateSet.
    /// `masterHaAddress` is a Vostok extension (the master's replication address).
    pub struct NotifyBrokerRoleChangedRequestHeader {
        master_address: Option<String> = "masterAddress",
        master_epoch: Option<i32> = "masterEpoch",
        sync_state_set_epoch: Option<i32> = "syncStateSetEpoch",
        master_broker_id: Option<i64> = "masterBrokerId",
        master_ha_address: Option<String> = "masterHaAddress",
    }
}
