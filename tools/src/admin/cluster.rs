//! `clusterList` and `brokerStatus`, and the cluster lookups other sub-commands share.

use clap::{ArgGroup, Args};
use serde::Serialize;
use std::collections::BTreeMap;

use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{GET_BROKER_CLUSTER_INFO, GET_BROKER_RUNTIME_INFO};
use vostok_remoting::protocol::route::ClusterInfo;
use vostok_remoting::protocol::topic::MASTER_ID;

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::table::Table;

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("target").required(true).args(["broker_addr", "cluster_name"])))]
pub struct BrokerStatusArgs {
    /// One broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: Option<String>,
    /// Every broker of this cluster, masters and slaves.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
}

/// GET_BROKER_CLUSTER_INFO from the first name server that answers.
pub async fn cluster_info(admin: &AdminClient) -> Result<ClusterInfo, AdminError> {
    admin
        .examine_broker_cluster_info()
        .await
        .map_err(during(GET_BROKER_CLUSTER_INFO))
}

/// GET_BROKER_RUNTIME_INFO of the broker at `addr`.
async fn runtime_info(
    admin: &AdminClient,
    addr: &str,
) -> Result<BTreeMap<String, String>, AdminError> {
    admin
        .fetch_broker_runtime_stats(addr)
        .await
        .map_err(during(GET_BROKER_RUNTIME_INFO))
}

/// `(broker name, master address)` of every master of `cluster`, by broker name.
pub fn cluster_masters(
    info: &ClusterInfo,
    cluster: &str,
) -> Result<Vec<(String, String)>, AdminError> {
    let names = info.cluster_addr_table.get(cluster).ok_or_else(|| {
        AdminError::NotFound(format!(
            "cluster {cluster} is unknown to the name server (known: {})",
            known(info.cluster_addr_table.keys())
        ))
    })?;
    let masters: Vec<(String, String)> = names
        .iter()
        .filter_map(|name| {
            let addr = info.broker_addr_table.get(name)?.master_addr()?;
            Some((name.clone(), addr.to_owned()))
        })
        .collect();
    if masters.is_empty() {
        return Err(AdminError::NotFound(format!(
            "cluster {cluster} has no master broker online"
        )));
    }
    Ok(masters)
}

/// `(broker name, broker id, address)` of every broker of `cluster`.
pub(crate) fn cluster_brokers(info: &ClusterInfo, cluster: &str) -> Vec<(String, i64, String)> {
    let mut out = Vec::new();
    for name in info.cluster_addr_table.get(cluster).into_iter().flatten() {
        if let Some(data) = info.broker_addr_table.get(name) {
            for (id, addr) in &data.broker_addrs {
                out.push((name.clone(), *id, addr.clone()));
            }
        }
    }
    out
}

fn known<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// The first figure of a runtime-info value (Java brokers write `putTps` as three
/// space-separated rates: last 10 s, 1 min, 10 min).
fn first_figure(table: &BTreeMap<String, String>, key: &str) -> String {
    table
        .get(key)
        .and_then(|v| v.split_whitespace().next())
        .unwrap_or("")
        .to_owned()
}

fn figure(table: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    table.get(key)?.trim().parse().ok()
}

/// How far a slave is behind its master: bytes of commitlog, and seconds between the
/// store times of their newest records (0 when the slave holds everything). `None`
/// when either broker did not say, or the slave holds no record yet.
pub fn replication_lag(
    master: &BTreeMap<String, String>,
    slave: &BTreeMap<String, String>,
) -> Option<(i64, f64)> {
    let bytes = figure(master, "commitLogMaxOffset")? - figure(slave, "commitLogMaxOffset")?;
    if bytes <= 0 {
        return Some((0, 0.0));
    }
    // A slave that holds no record yet has no time to compare.
    let slave_ts = figure(slave, "commitLogMaxStoreTimestamp").filter(|t| *t > 0)?;
    let ms = figure(master, "commitLogMaxStoreTimestamp")? - slave_ts;
    Some((bytes, ms.max(0) as f64 / 1000.0))
}

/// One broker as `clusterList` shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRow {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub addr: String,
    pub version: Option<String>,
    pub in_tps: Option<f64>,
    pub out_tps: Option<f64>,
    pub role: Option<String>,
    /// A slave's lag behind its master: bytes of commitlog and seconds.
    pub lag_bytes: Option<i64>,
    pub lag_secs: Option<f64>,
}

/// GET_BROKER_CLUSTER_INFO, then GET_BROKER_RUNTIME_INFO of each broker for its
/// version, rates and role, and for each slave its lag behind the group's master
/// (`-` for a broker that does not answer).
pub async fn cluster_list(admin: &AdminClient, out: JsonFlag) -> Result<String, AdminError> {
    let info = cluster_info(admin).await?;
    let mut rows = Vec::new();
    for cluster in info.cluster_addr_table.keys() {
        let brokers = cluster_brokers(&info, cluster);
        let mut runtimes = Vec::with_capacity(brokers.len());
        for (_, _, addr) in &brokers {
            runtimes.push(runtime_info(admin, addr).await.unwrap_or_default());
        }
        for ((name, id, addr), runtime) in brokers.iter().zip(&runtimes) {
            let master = brokers
                .iter()
                .zip(&runtimes)
                .find(|((n, i, _), _)| n == name && *i == MASTER_ID)
                .map(|(_, r)| r);
            let lag = match master {
                Some(m) if *id != MASTER_ID => replication_lag(m, runtime),
                _ => None,
            };
            let rate = |key: &str| first_figure(runtime, key).parse::<f64>().ok();
            rows.push(ClusterRow {
                cluster_name: cluster.clone(),
                broker_name: name.clone(),
                broker_id: *id,
                addr: addr.clone(),
                version: runtime.get("brokerVersionDesc").cloned(),
                in_tps: rate("putTps"),
                out_tps: rate("getTransferedTps"),
                role: runtime.get("brokerRole").cloned(),
                lag_bytes: lag.map(|(b, _)| b),
                lag_secs: lag.map(|(_, s)| s),
            });
        }
    }
    out.render(&rows, |rows| {
        let mut table = Table::new(&[
            "#Cluster Name",
            "#Broker Name",
            "#BID",
            "#Addr",
            "#Version",
            "#InTPS",
            "#OutTPS",
            "#Role",
            "#LagBytes",
            "#LagSec",
        ]);
        let figure = |v: Option<f64>| v.map(|v| format!("{v:.2}")).unwrap_or_default();
        for r in rows {
            table.row(vec![
                r.cluster_name.clone(),
                r.broker_name.clone(),
                r.broker_id.to_string(),
                r.addr.clone(),
                r.version.clone().unwrap_or_default(),
                figure(r.in_tps),
                figure(r.out_tps),
                r.role.clone().unwrap_or_else(|| "-".to_owned()),
                r.lag_bytes.map_or("-".to_owned(), |b| b.to_string()),
                r.lag_secs.map_or("-".to_owned(), |s| format!("{s:.3}")),
            ]);
        }
        table.render()
    })
}

/// GET_BROKER_RUNTIME_INFO of one broker (`key: value` lines, sorted) or of every
/// broker of a cluster (the address in front of each line); `--json` is an object of
/// each broker's figures by address.
pub async fn broker_status(
    admin: &AdminClient,
    args: &BrokerStatusArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let addrs = match &args.broker_addr {
        Some(addr) => vec![addr.clone()],
        None => {
            let cluster = args.cluster_name.as_deref().unwrap_or_default();
            let info = cluster_info(admin).await?;
            let brokers = cluster_brokers(&info, cluster);
            if brokers.is_empty() {
                return Err(AdminError::NotFound(format!(
                    "cluster {cluster} has no broker (known clusters: {})",
                    known(info.cluster_addr_table.keys())
                )));
            }
            brokers.into_iter().map(|(_, _, addr)| addr).collect()
        }
    };
    let mut all = BTreeMap::new();
    for addr in addrs {
        let figures = runtime_info(admin, &addr).await?;
        all.insert(addr, figures);
    }
    let one = args.broker_addr.is_some();
    out.render(&all, |all| {
        let mut text = String::new();
        for (addr, figures) in all {
            for (key, value) in figures {
                if one {
                    text.push_str(&format!("{key:<32}: {value}\n"));
                } else {
                    text.push_str(&format!("{addr:<24} {key:<32}: {value}\n"));
                }
            }
        }
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::protocol::route::BrokerData;

    fn info() -> ClusterInfo {
        let mut info = ClusterInfo::default();
        info.cluster_addr_table
            .insert("C".into(), ["a".to_owned(), "b".to_owned()].into());
        info.broker_addr_table.insert(
            "a".into(),
            BrokerData {
                broker_addrs: [(MASTER_ID, "1:1".to_owned()), (1, "1:2".to_owned())].into(),
                broker_name: "a".into(),
                cluster: "C".into(),
                ..BrokerData::default()
            },
        );
        info.broker_addr_table.insert(
            "b".into(),
            BrokerData {
                broker_addrs: [(1, "2:2".to_owned())].into(),
                broker_name: "b".into(),
                cluster: "C".into(),
                ..BrokerData::default()
            },
        );
        info
    }

    #[test]
    fn masters_skip_slave_only_brokers() {
        let info = info();
        assert_eq!(
            cluster_masters(&info, "C").unwrap(),
            [("a".to_owned(), "1:1".to_owned())]
        );
        let err = cluster_masters(&info, "X").unwrap_err().to_string();
        assert_eq!(err, "cluster X is unknown to the name server (known: C)");
        assert_eq!(cluster_brokers(&info, "C").len(), 3);
    }

    #[test]
    fn lag_is_bytes_and_seconds_behind_the_master() {
        let kv = |max: i64, ts: i64| -> BTreeMap<String, String> {
            [
                ("commitLogMaxOffset".to_owned(), max.to_string()),
                ("commitLogMaxStoreTimestamp".to_owned(), ts.to_string()),
            ]
            .into()
        };
        assert_eq!(
            replication_lag(&kv(5000, 10_250), &kv(1000, 10_000)),
            Some((4000, 0.25))
        );
        assert_eq!(
            replication_lag(&kv(5000, 10_250), &kv(5000, 10_250)),
            Some((0, 0.0))
        );
        assert_eq!(replication_lag(&kv(5000, 1), &BTreeMap::new()), None);
        assert_eq!(replication_lag(&kv(5000, 1), &kv(0, 0)), None);
    }

    #[test]
    fn tps_takes_the_first_rate() {
        let t: BTreeMap<String, String> =
            [("putTps".to_owned(), "12.5 10.0 9.1".to_owned())].into();
        assert_eq!(first_figure(&t, "putTps"), "12.5");
        assert_eq!(first_figure(&t, "missing"), "");
    }
}
