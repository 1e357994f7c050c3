//! Controller-mode sub-commands (RocketMQ `getControllerMetaData`,
//! `getSyncStateSet`, `electMaster`; docs/controller.md#admin).

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{
    CONTROLLER_ELECT_MASTER, CONTROLLER_GET_METADATA_INFO, CONTROLLER_GET_SYNC_STATE_DATA,
};

use super::error::{during, AdminError};
use super::output::JsonFlag;
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
