//! Replication verbs: `haStatus` (a master's slaves, or a slave's master link),
//! `getBrokerEpoch` (controller mode: each broker's epoch entries) and
//! `resetMasterFlushOffset` (what a slave records as its master's flushed offset).
//! With `-i SECONDS` the first two repeat until stopped, printing each round; with
//! `--json` they run once.

use std::time::Duration;

use clap::{ArgGroup, Args};
use serde::Serialize;
use vostok_client::AdminClient;
use vostok_remoting::protocol::body::{EpochEntryCache, HaRuntimeInfo};
use vostok_remoting::protocol::request_code::{
    GET_BROKER_EPOCH_CACHE, GET_BROKER_HA_STATUS, RESET_MASTER_FLUSH_OFFSET,
};

use super::cluster::{cluster_info, cluster_masters};
use super::error::{during, AdminError};
use super::output::{format_seconds, render_applied, Applied, JsonFlag};
use super::target::{masters, Target};

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct HaStatusArgs {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every master of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// Repeat every this many seconds until stopped.
    #[arg(short = 'i', long = "interval", value_name = "SECONDS")]
    pub interval: Option<u64>,
}

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_name", "cluster_name"])))]
pub struct GetBrokerEpochArgs {
    /// Every broker (master and slaves) of this broker name.
    #[arg(short = 'b', long = "brokerName", value_name = "NAME")]
    pub broker_name: Option<String>,
    /// Every broker of this cluster.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// Repeat every this many seconds until stopped.
    #[arg(short = 'i', long = "interval", value_name = "SECONDS")]
    pub interval: Option<u64>,
}

#[derive(Args, Debug, Clone)]
pub struct ResetMasterFlushOffsetArgs {
    /// The slave.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: String,
    /// The master's flushed offset to record.
    #[arg(short = 'o', long = "offset")]
    pub offset: i64,
}

/// One broker's replication status.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HaStatus {
    broker_addr: String,
    #[serde(flatten)]
    info: HaRuntimeInfo,
}

fn ha_text(s: &HaStatus) -> String {
    let i = &s.info;
    if i.master {
        let mut out = format!(
            "\n#MasterAddr\t{}\n#MasterCommitLogMaxOffset\t{}\n#SlaveNum\t{}\n#InSyncSlaveNum\t{}\n",
            s.broker_addr,
            i.master_commit_log_max_offset,
            i.ha_connection_info.len(),
            i.in_sync_slave_nums
        );
        out.push_str(&format!(
            "{:<32}  {:<16} {:>16} {:>16} {:>16} {:>16}\n",
            "#SlaveAddr",
            "#SlaveAckOffset",
            "#Diff",
            "#TransferSpeed(KB/s)",
            "#Status",
            "#TransferFromWhere"
        ));
        for c in &i.ha_connection_info {
            out.push_str(&format!(
                "{:<32}  {:<16} {:>16} {:>16.2} {:>16} {:>16}\n",
                c.addr,
                c.slave_ack_offset,
                c.diff,
                c.transferred_byte_in_second as f64 / 1024.0,
                if c.in_sync { "OK" } else { "Fall Behind" },
                c.transfer_from_where
            ));
        }
        out
    } else {
        let c = &i.ha_client_runtime_info;
        format!(
            "\n#MasterAddr\t{}\n#CommitLogMaxOffset\t{}\n#TransferSpeed(KB/s)\t{:.2}\n#LastReadTime\t{}\n#LastWriteTime\t{}\n#MasterFlushOffset\t{}\n",
            c.master_addr.as_deref().unwrap_or("-"),
            c.max_offset,
            c.transferred_byte_in_second as f64 / 1024.0,
            format_seconds(c.last_read_timestamp),
            format_seconds(c.last_write_timestamp),
            c.master_flush_offset
        )
    }
}

/// Runs `round` once, or with `interval` until stopped, printing each round.
async fn rounds<F, Fut>(
    interval: Option<u64>,
    out: JsonFlag,
    round: F,
) -> Result<String, AdminError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<String, AdminError>>,
{
    let Some(seconds) = interval.filter(|_| !out.json) else {
        return round().await;
    };
    loop {
        print!("{}", round().await?);
        tokio::time::sleep(Duration::from_secs(seconds.max(1))).await;
    }
}

/// GET_BROKER_HA_STATUS of `-b`, or of each master of `-c`.
pub async fn ha_status(
    admin: &AdminClient,
    args: &HaStatusArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let target = Target {
        broker_addr: args.broker_addr.clone(),
        cluster_name: args.cluster_name.clone(),
    };
    rounds(args.interval, out, || async {
        let mut all = Vec::new();
        for addr in masters(admin, &target).await? {
            let info = admin
                .get_broker_ha_status(&addr)
                .await
                .map_err(during(GET_BROKER_HA_STATUS))?;
            all.push(HaStatus {
                broker_addr: addr,
                info,
            });
        }
        out.render(&all, |all| all.iter().map(ha_text).collect())
    })
    .await
}

/// One broker's epoch cache.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokerEpoch {
    broker_addr: String,
    #[serde(flatten)]
    cache: EpochEntryCache,
}

fn epoch_text(e: &BrokerEpoch) -> String {
    let c = &e.cache;
    let mut out = format!(
        "\n#clusterName\t{}\n#brokerName\t{}\n#brokerAddr\t{}\n#brokerId\t{}",
        c.cluster_name, c.broker_name, e.broker_addr, c.broker_id
    );
    for entry in &c.epoch_list {
        out.push_str(&format!(
            "\n#Epoch: EpochEntry{{epoch={}, startOffset={}, endOffset={}}}",
            entry.epoch, entry.start_offset, entry.end_offset
        ));
    }
    out.push('\n');
    out
}

/// GET_BROKER_EPOCH_CACHE of every broker (masters and slaves) of `-b`'s broker name
/// or of `-c`'s cluster.
pub async fn get_broker_epoch(
    admin: &AdminClient,
    args: &GetBrokerEpochArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    rounds(args.interval, out, || async {
        let info = cluster_info(admin).await?;
        let names: Vec<String> = match (&args.broker_name, &args.cluster_name) {
            (Some(name), _) => vec![name.clone()],
            (None, Some(cluster)) => cluster_masters(&info, cluster)?
                .into_iter()
                .map(|(name, _)| name)
                .collect(),
            (None, None) => Vec::new(),
        };
        let mut all = Vec::new();
        for name in names {
            let broker = info.broker_addr_table.get(&name).ok_or_else(|| {
                AdminError::NotFound(format!("broker name {name} is unknown to the name server"))
            })?;
            for addr in broker.broker_addrs.values() {
                let cache = admin
                    .get_broker_epoch_cache(addr)
                    .await
                    .map_err(during(GET_BROKER_EPOCH_CACHE))?;
                all.push(BrokerEpoch {
                    broker_addr: addr.clone(),
                    cache,
                });
            }
        }
        out.render(&all, |all| all.iter().map(epoch_text).collect())
    })
    .await
}

/// RESET_MASTER_FLUSH_OFFSET to one slave (a master ignores it).
pub async fn reset_master_flush_offset(
    admin: &AdminClient,
    args: &ResetMasterFlushOffsetArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    admin
        .reset_master_flush_offset(&args.broker_addr, args.offset)
        .await
        .map_err(during(RESET_MASTER_FLUSH_OFFSET))?;
    let line = format!("reset master flush offset to {} success", args.offset);
    render_applied(out, &[Applied::new(args.broker_addr.clone(), line)])
}
