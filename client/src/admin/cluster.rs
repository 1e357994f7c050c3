//! Cluster requests: which brokers the name servers know, and a broker's runtime
//! figures.

use std::collections::BTreeMap;

use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::json;
use vostok_remoting::protocol::request_code;
use vostok_remoting::protocol::route::ClusterInfo;
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::error::Result;

impl AdminClient {
    /// GET_BROKER_CLUSTER_INFO (`examineBrokerClusterInfo`): every broker by name, with
    /// its addresses by broker id, and the broker names of each cluster.
    pub async fn examine_broker_cluster_info(&self) -> Result<ClusterInfo> {
        self.invoke_namesrv(|admin, addr| {
            Box::pin(async move {
                let request = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
                let response = admin.call(addr, request).await?;
                Ok(ClusterInfo::decode(&response.body)?)
            })
        })
        .await
    }

    /// GET_BROKER_RUNTIME_INFO (`fetchBrokerRuntimeStats`): the broker's key/value
    /// table (version, TPS, offsets, disk use, ...).
    pub async fn fetch_broker_runtime_stats(
        &self,
        broker_addr: &str,
    ) -> Result<BTreeMap<String, String>> {
        let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
        let response = self.call(broker_addr, request).await?;
        let kv: KvTable = json::from_slice("KvTable", &response.body)?;
        Ok(kv.table)
    }
}
