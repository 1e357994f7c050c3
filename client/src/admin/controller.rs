//! Controller requests (RocketMQ `MQAdminExt.getControllerMetaData`,
//! `getInSyncStateData`, `electMaster`, `cleanControllerBrokerData`): asked of one
//! controller address; reads and changes go to the Raft leader, which any controller
//! names. A controller's own config is in [`super::config`].

use vostok_remoting::protocol::body::{BrokerReplicasInfo, ElectMasterResponseBody};
use vostok_remoting::protocol::header::{
    CleanControllerBrokerDataRequestHeader, ElectMasterRequestHeader, ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
};
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::api;
use crate::error::Result;

impl AdminClient {
    /// CONTROLLER_GET_METADATA_INFO: the quorum, its leader, whether `addr` leads.
    pub async fn get_controller_metadata(&self, addr: &str) -> Result<GetMetaDataResponseHeader> {
        let request = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
        let response = self.call(addr, request).await?;
        api::decode_header(addr, &response)
    }

    /// The leader's address as `addr` knows it (`addr` itself when it leads).
    async fn controller_leader(&self, addr: &str) -> Result<String> {
        let meta = self.get_controller_metadata(addr).await?;
        Ok(if meta.is_leader {
            addr.to_owned()
        } else {
            meta.controller_leader_address
                .unwrap_or_else(|| addr.to_owned())
        })
    }

    /// CONTROLLER_GET_SYNC_STATE_DATA for `broker_names` (all when empty).
    pub async fn get_sync_state_data(
        &self,
        addr: &str,
        broker_names: &[String],
    ) -> Result<BrokerReplicasInfo> {
        let leader = self.controller_leader(addr).await?;
        let request = RemotingCommand::request(request_code::CONTROLLER_GET_SYNC_STATE_DATA)
            .with_body(json::to_vec(&broker_names));
        let response = self.call(&leader, request).await?;
        Ok(json::from_slice("BrokerReplicasInfo", &response.body)?)
    }

    /// CONTROLLER_ELECT_MASTER naming `broker_id` (`designateElect`).
    pub async fn elect_master(
        &self,
        addr: &str,
        cluster: &str,
        broker_name: &str,
        broker_id: i64,
    ) -> Result<(ElectMasterResponseHeader, ElectMasterResponseBody)> {
        let leader = self.controller_leader(addr).await?;
        let header = ElectMasterRequestHeader {
            cluster_name: cluster.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_id,
            designate_elect: Some(true),
            invoke_time: None,
        };
        let request =
            RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &header);
        let response = self.call(&leader, request).await?;
        Ok((
            api::decode_header(&leader, &response)?,
            json::from_slice("ElectMasterResponseBody", &response.body)?,
        ))
    }

    /// CLEAN_BROKER_DATA (`cleanControllerBrokerData`): forgets the given broker ids of
    /// a group (all of them when `ids` is `None`, `1;2;3` otherwise); living brokers
    /// only with `clean_living`.
    pub async fn clean_controller_broker_data(
        &self,
        addr: &str,
        cluster: Option<&str>,
        broker_name: &str,
        ids: Option<&str>,
        clean_living: bool,
    ) -> Result<()> {
        let leader = self.controller_leader(addr).await?;
        let header = CleanControllerBrokerDataRequestHeader {
            cluster_name: cluster.map(str::to_owned),
            broker_name: broker_name.to_owned(),
            broker_controller_ids_to_clean: ids.map(str::to_owned),
            is_clean_living_broker: Some(clean_living),
            invoke_time: Some(vostok_remoting::support::time::now_millis()),
        };
        let request =
            RemotingCommand::request_with_header(request_code::CLEAN_BROKER_DATA, &header);
        self.call(&leader, request).await.map(drop)
    }
}
