//! The brokers a verb acts on: one broker (`-b ADDR`) or every master of a cluster
//! (`-c CLUSTER`), as RocketMQ's `CommandUtil.fetchMasterAddrByClusterName` finds them.

use clap::{ArgGroup, Args};
use vostok_client::AdminClient;

use super::cluster::{cluster_info, cluster_masters};
use super::error::AdminError;

/// `-b ADDR` or `-c CLUSTER`: the brokers a sub-command acts on.
#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct Target {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
}

/// `-b`'s address, or the master addresses of `-c`'s cluster, by broker name.
pub async fn masters(admin: &AdminClient, target: &Target) -> Result<Vec<String>, AdminError> {
    if let Some(addr) = &target.broker_addr {
        return Ok(vec![addr.clone()]);
    }
    let cluster = target.cluster_name.as_deref().unwrap_or_default();
    let info = cluster_info(admin).await?;
    Ok(cluster_masters(&info, cluster)?
        .into_iter()
        .map(|(_, a)| a)
        .collect())
}
