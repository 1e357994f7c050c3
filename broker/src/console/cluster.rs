//! The cluster page's view of every broker the name servers know: the brokers of every
//! cluster (GET_BROKER_CLUSTER_INFO), each asked for its runtime info
//! (GET_BROKER_RUNTIME_INFO) as the signed-in account, through the console's bounded
//! client ([`super::remote::Remote`]), all at once and each within [`ASK_TIMEOUT`], so
//! that a dead broker shows as unreachable and never stalls the page.

use std::collections::BTreeMap;
use std::time::Duration;

use vostok_remoting::auth::SessionCredentials;
use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::route::ClusterInfo;
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::RemotingCommand;

use super::html::{esc, table};
use super::remote::Remote;
use crate::state::Broker;

/// How long the page waits for a name server or a broker.
pub(crate) const ASK_TIMEOUT: Duration = Duration::from_millis(800);

/// One broker of the cluster view.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) cluster: String,
    pub(crate) name: String,
    pub(crate) id: i64,
    pub(crate) addr: String,
    /// Its runtime info; `Err` says why it could not be read.
    pub(crate) info: Result<BTreeMap<String, String>, String>,
}

/// The brokers of every cluster, as the first name server that answers lists them
/// (GET_BROKER_CLUSTER_INFO), or why none could.
pub(crate) async fn cluster_info(b: &Broker) -> Result<ClusterInfo, String> {
    let mut why = "no name server configured".to_owned();
    for addr in &b.namesrv.addrs {
        let request = RemotingCommand::request(request_code::GET_BROKER_CLUSTER_INFO);
        match b
            .namesrv
            .client
            .invoke_sync(addr, request, ASK_TIMEOUT)
            .await
        {
            Ok(r) if r.code == response_code::SUCCESS => match ClusterInfo::decode(&r.body) {
                Ok(info) => return Ok(info),
                Err(e) => why = format!("{addr}: {e}"),
            },
            Ok(r) => why = format!("{addr}: code {} {}", r.code, r.remark()),
            Err(e) => why = format!("{addr}: {e}"),
        }
    }
    Err(why)
}

/// The brokers of every cluster, or why the name servers could not say.
pub(crate) async fn members(
    b: &Broker,
    remote: &Remote,
    who: Option<&SessionCredentials>,
) -> Result<Vec<Member>, String> {
    let info = cluster_info(b).await?;
    let asks = info.broker_addr_table.values().flat_map(|data| {
        data.broker_addrs.iter().map(move |(id, addr)| async move {
            Member {
                cluster: data.cluster.clone(),
                name: data.broker_name.clone(),
                id: *id,
                addr: addr.clone(),
                info: runtime_info(remote, who, addr).await,
            }
        })
    });
    Ok(futures_util::future::join_all(asks).await)
}

async fn runtime_info(
    remote: &Remote,
    who: Option<&SessionCredentials>,
    addr: &str,
) -> Result<BTreeMap<String, String>, String> {
    let request = RemotingCommand::request(request_code::GET_BROKER_RUNTIME_INFO);
    let r = remote
        .call(addr, request, who, ASK_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    if r.code != response_code::SUCCESS {
        return Err(format!("code {} {}", r.code, r.remark()));
    }
    json::from_slice::<KvTable>("runtime info", &r.body)
        .map(|kv| kv.table.into_iter().collect())
        .map_err(|e| e.to_string())
}

/// The table of every broker: cluster, name, id, role, address, disk use, state.
pub(crate) fn render(view: &Result<Vec<Member>, String>, own_addr: &str) -> String {
    let members = match view {
        Ok(m) => m,
        Err(why) => {
            return format!(
                "<p class=\"note\">The name servers could not be asked for the cluster: {}</p>",
                esc(why)
            )
        }
    };
    let rows: Vec<Vec<String>> = members
        .iter()
        .map(|m| {
            let get = |k: &str| m.info.as_ref().ok().and_then(|i| i.get(k).cloned());
            let role = get("brokerRole")
                .unwrap_or_else(|| if m.id == 0 { "master" } else { "slave" }.to_owned());
            let disk = get("commitLogDiskRatio")
                .and_then(|r| r.parse::<f64>().ok())
                .map_or("-".to_owned(), |r| format!("{:.1} %", r * 100.0));
            let state = match &m.info {
                Ok(_) if m.addr == own_addr => "this broker".to_owned(),
                Ok(_) => "reachable".to_owned(),
                Err(e) => format!("unreachable: {}", esc(e)),
            };
            vec![
                esc(&m.cluster),
                esc(&m.name),
                m.id.to_string(),
                esc(&role),
                esc(&m.addr),
                disk,
                state,
            ]
        })
        .collect();
    table(
        "members",
        &[
            "Cluster",
            "Broker",
            "Id",
            "Role",
            "Address",
            "Disk used",
            "State",
        ],
        &rows,
    )
}
