//! Controller-mode sub-commands (RocketMQ `getControllerMetaData`,
//! `getSyncStateSet`, `electMaster`, `getControllerConfig`, `updateControllerConfig`,
//! `cleanBrokerMetadata`; docs/controller.md#admin).

use std::collections::BTreeMap;

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{
    CLEAN_BROKER_DATA, CONTROLLER_ELECT_MASTER, CONTROLLER_GET_METADATA_INFO,
    CONTROLLER_GET_SYNC_STATE_DATA, GET_CONTROLLER_CONFIG, UPDATE_CONTROLLER_CONFIG,
};

use super::error::{during, AdminError};
use super::output::{render_applied, Applied, JsonFlag};
use super::table::Table;

#[derive(Args, Debug, Clone)]
pub struct ControllerArgs {
    /// A controller's address (any of the quorum).
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDR")]
    pub controller: String,
}

#[derive(Args, Debug, Clone)]
pub struct SyncStateSetArgs {
    /// A controller's address (any of the quorum).
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDR")]
    pub controller: String,
    /// Broker names, comma-separated; every group when absent.
    #[arg(short = 'b', long = "brokerName", value_name = "NAMES")]
    pub broker_names: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct ElectMasterArgs {
    /// A controller's address (any of the quorum).
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDR")]
    pub controller: String,
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: String,
    #[arg(short = 'b', long = "brokerName", value_name = "NAME")]
    pub broker_name: String,
    /// The controller-assigned id of the broker to elect.
    #[arg(short = 'i', long = "brokerId", value_name = "ID")]
    pub broker_id: i64,
}

#[derive(Args, Debug, Clone)]
pub struct GetControllerConfigArgs {
    /// Controller addresses, `ip:port;ip:port`: each answers for itself.
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDRS")]
    pub controllers: String,
}

#[derive(Args, Debug, Clone)]
pub struct UpdateControllerConfigArgs {
    /// Controller addresses, `ip:port;ip:port`: each is changed.
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDRS")]
    pub controllers: String,
    /// The key, as in the controller's config file.
    #[arg(short = 'k', long = "key")]
    pub key: String,
    /// Its new value.
    #[arg(short = 'v', long = "value")]
    pub value: String,
}

#[derive(Args, Debug, Clone)]
pub struct CleanBrokerMetadataArgs {
    /// A controller's address (any of the quorum).
    #[arg(short = 'a', long = "controllerAddress", value_name = "ADDR")]
    pub controller: String,
    /// The controller-assigned ids to forget, `1;2;3` (all of the group's when absent).
    #[arg(short = 'b', long = "brokerControllerIdsToClean", value_name = "IDS")]
    pub ids: Option<String>,
    /// The broker group (Apache's `-bn`).
    #[arg(long = "brokerName", visible_alias = "bn", value_name = "NAME")]
    pub broker_name: String,
    /// The group's cluster; required unless `-l`.
    #[arg(short = 'c', long = "clusterName", value_name = "CLUSTER")]
    pub cluster_name: Option<String>,
    /// Also forget brokers that are alive.
    #[arg(short = 'l', long = "cleanLivingBroker")]
    pub clean_living: bool,
}

/// `ip:port;ip:port` as a list.
fn addresses(list: &str) -> Result<Vec<String>, AdminError> {
    let addrs: Vec<String> = list
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    if addrs.is_empty() {
        return Err(AdminError::Invalid("-a names no controller".into()));
    }
    Ok(addrs)
}

/// GET_CONTROLLER_CONFIG of each controller given.
pub async fn get_controller_config(
    admin: &AdminClient,
    args: &GetControllerConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut all: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut text = String::new();
    for addr in addresses(&args.controllers)? {
        let config = admin
            .get_controller_config(&addr)
            .await
            .map_err(during(GET_CONTROLLER_CONFIG))?;
        text.push_str(&format!("============{addr}============\n"));
        for (k, v) in &config {
            text.push_str(&format!("{k:<50}=  {v}\n"));
        }
        all.insert(addr, config.into_iter().collect());
    }
    out.render(&all, |_| text)
}

/// UPDATE_CONTROLLER_CONFIG of each controller given: only keys a controller reads at
/// each election change (docs/controller.md#requests).
pub async fn update_controller_config(
    admin: &AdminClient,
    args: &UpdateControllerConfigArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let key = args.key.trim();
    if key.is_empty() {
        return Err(AdminError::Invalid("-k names no key".into()));
    }
    let change = [(key.to_owned(), args.value.trim().to_owned())];
    let mut applied = Vec::new();
    for addr in addresses(&args.controllers)? {
        admin
            .update_controller_config(&addr, &change)
            .await
            .map_err(during(UPDATE_CONTROLLER_CONFIG))?;
        let line = format!(
            "update controller config success! {addr}: {key} : {}",
            args.value.trim()
        );
        applied.push(Applied::new(addr, line));
    }
    render_applied(out, &applied)
}

/// CLEAN_BROKER_DATA through the Raft leader.
pub async fn clean_broker_metadata(
    admin: &AdminClient,
    args: &CleanBrokerMetadataArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    if let Some(ids) = &args.ids {
        if ids.split(';').any(|id| id.trim().parse::<i64>().is_err()) {
            return Err(AdminError::Invalid(format!(
                "-b {ids}: broker ids separated by ';', e.g. 1;2;3"
            )));
        }
    }
    let cluster = args
        .cluster_name
        .as_deref()
        .filter(|c| !c.trim().is_empty());
    if !args.clean_living && cluster.is_none() {
        return Err(AdminError::Invalid(
            "-c CLUSTER is required unless -l (clean living brokers too)".into(),
        ));
    }
    admin
        .clean_controller_broker_data(
            &args.controller,
            cluster,
            &args.broker_name,
            args.ids.as_deref(),
            args.clean_living,
        )
        .await
        .map_err(during(CLEAN_BROKER_DATA))?;
    let line = format!(
        "clear broker {} metadata from controller success!",
        args.broker_name
    );
    render_applied(out, &[Applied::new(args.controller.clone(), line)])
}

pub async fn metadata(
    admin: &AdminClient,
    args: &ControllerArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let m = admin
        .get_controller_metadata(&args.controller)
        .await
        .map_err(during(CONTROLLER_GET_METADATA_INFO))?;
    let doc = serde_json::json!({
        "group": m.group,
        "controllerLeaderId": m.controller_leader_id,
        "controllerLeaderAddress": m.controller_leader_address,
        "isLeader": m.is_leader,
        "peers": m.peers,
    });
    out.render(&doc, |_| {
        format!(
            "#ControllerGroup        : {}\n#ControllerLeaderId     : {}\n#ControllerLeaderAddress: {}\n#IsLeader               : {}\n#Peers                  : {}\n",
            m.group.clone().unwrap_or_default(),
            m.controller_leader_id.clone().unwrap_or_default(),
            m.controller_leader_address.clone().unwrap_or_default(),
            m.is_leader,
            m.peers.clone().unwrap_or_default(),
        )
    })
}

pub async fn sync_state_set(
    admin: &AdminClient,
    args: &SyncStateSetArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let names: Vec<String> = args
        .broker_names
        .as_deref()
        .map(|s| {
            s.split(',')
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let info = admin
        .get_sync_state_data(&args.controller, &names)
        .await
        .map_err(during(CONTROLLER_GET_SYNC_STATE_DATA))?;
    if out.json {
        return out.render(&info, |_| String::new());
    }
    let mut table = Table::new(&[
        "#BrokerName",
        "#MasterId",
        "#MasterAddr",
        "#MasterEpoch",
        "#SyncStateSetEpoch",
        "#SyncStateSet",
        "#NotInSync",
    ]);
    for (name, g) in &info.replicas_info_table {
        let list = |rs: &[vostok_remoting::protocol::body::ReplicaIdentity]| {
            rs.iter()
                .map(|r| format!("{}{}", r.broker_id, if r.alive { "" } else { "(dead)" }))
                .collect::<Vec<_>>()
                .join(",")
        };
        table.row(vec![
            name.clone(),
            g.master_broker_id.map_or("-".into(), |id| id.to_string()),
            g.master_address.clone().unwrap_or_else(|| "-".into()),
            g.master_epoch.to_string(),
            g.sync_state_set_epoch.to_string(),
            list(&g.in_sync_replicas),
            list(&g.not_in_sync_replicas),
        ]);
    }
    Ok(table.render())
}

pub async fn elect_master(
    admin: &AdminClient,
    args: &ElectMasterArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let (h, body) = admin
        .elect_master(
            &args.controller,
            &args.cluster_name,
            &args.broker_name,
            args.broker_id,
        )
        .await
        .map_err(during(CONTROLLER_ELECT_MASTER))?;
    let doc = serde_json::json!({
        "brokerName": args.broker_name,
        "masterBrokerId": h.master_broker_id,
        "masterAddress": h.master_address,
        "masterEpoch": h.master_epoch,
        "syncStateSetEpoch": h.sync_state_set_epoch,
        "syncStateSet": body.sync_state_set,
    });
    out.render(&doc, |_| {
        format!(
            "#BrokerName   : {}\n#MasterId     : {}\n#MasterAddress: {}\n#MasterEpoch  : {}\n#SyncStateSet : {:?}\n",
            args.broker_name,
            h.master_broker_id.map_or("-".into(), |id| id.to_string()),
            h.master_address.clone().unwrap_or_default(),
            h.master_epoch.unwrap_or_default(),
            body.sync_state_set,
        )
    })
}
