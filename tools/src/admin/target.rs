//! The brokers a verb acts on: one broker (`-b ADDR`) or every master of a cluster
//! (`-c CLUSTER`), as RocketMQ's `CommandUtil.fetchMasterAddrByClusterName` finds them.

use vostok_client::AdminClient;

use super::args::Target;
use super::cluster::{cluster_info, cluster_masters};
use super::AdminError;

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
