//! Reads (GET_METADATA_INFO, GET_REPLICA_INFO, GET_SYNC_STATE_DATA) and the admin's
//! CLEAN_BROKER_DATA.

use std::collections::BTreeSet;

use vostok_remoting::protocol::body::{
    BrokerReplicasInfo, ReplicaIdentity, ReplicasInfo, SyncStateSet,
};
use vostok_remoting::protocol::header::{
    CleanControllerBrokerDataRequestHeader, GetMetaDataResponseHeader, GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::RemotingCommand;

use super::broker::refused;
use super::{error, header};
use crate::node::ControllerNode;
use crate::replicas::Command;

type Answer = Result<RemotingCommand, RemotingCommand>;

pub(super) fn metadata(node: &ControllerNode) -> RemotingCommand {
    let leader = node.leader();
    RemotingCommand::success().with_header(&GetMetaDataResponseHeader {
        group: Some(node.config.group.clone()),
        controller_leader_id: leader.as_ref().map(|(id, _)| format!("n{id}")),
        controller_leader_address: leader.map(|(_, a)| a),
        is_leader: node.is_leader(),
        peers: Some(node.config.peers_string()),
    })
}

pub(super) fn replica_info(node: &ControllerNode, request: &RemotingCommand) -> Answer {
    let h: GetReplicaInfoRequestHeader = header(request)?;
    let Some(group) = node.group(&h.broker_name) else {
        return Err(error(
            response_code::CONTROLLER_BROKER_METADATA_NOT_EXIST,
            format!("no broker group {}", h.broker_name),
        ));
    };
    let sss = SyncStateSet {
        sync_state_set: group.sync_state_set.clone(),
        sync_state_set_epoch: group.sync_state_set_epoch,
    };
    Ok(RemotingCommand::success()
        .with_header(&GetReplicaInfoResponseHeader {
            master_broker_id: group.master,
            master_address: group.master_addr().map(str::to_owned),
            master_epoch: Some(group.master_epoch),
            master_ha_address: group.master_ha_addr().map(str::to_owned),
        })
        .with_body(json::to_vec(&sss)))
}

pub(super) fn sync_state_data(node: &ControllerNode, request: &RemotingCommand) -> Answer {
    let names: Vec<String> = if request.body.is_empty() {
        Vec::new()
    } else {
        json::from_slice("broker names", &request.body)
            .map_err(|e| error(response_code::CONTROLLER_INVALID_REQUEST, e.to_string()))?
    };
    let applied = node
        .applied
        .read()
        .map_err(|_| error(response_code::SYSTEM_ERROR, "poisoned"))?;
    let mut table = BrokerReplicasInfo::default();
    for group in applied.info.groups.values() {
        if !names.is_empty() && !names.contains(&group.broker_name) {
            continue;
        }
        let identity = |id: &i64| ReplicaIdentity {
            broker_name: group.broker_name.clone(),
            broker_id: *id,
            broker_address: group
                .replicas
                .get(id)
                .map(|r| r.addr.clone())
                .unwrap_or_default(),
            alive: node.is_alive(&group.broker_name, *id),
        };
        table.replicas_info_table.insert(
            group.broker_name.clone(),
            ReplicasInfo {
                master_broker_id: group.master,
                master_address: group.master_addr().map(str::to_owned),
                master_epoch: group.master_epoch,
                sync_state_set_epoch: group.sync_state_set_epoch,
                in_sync_replicas: group.sync_state_set.iter().map(identity).collect(),
                not_in_sync_replicas: group
                    .replicas
                    .keys()
                    .filter(|id| !group.sync_state_set.contains(id))
                    .map(identity)
                    .collect(),
            },
        );
    }
    Ok(RemotingCommand::success().with_body(json::to_vec(&table)))
}

pub(super) async fn clean(node: &ControllerNode, request: &RemotingCommand) -> Answer {
    let h: CleanControllerBrokerDataRequestHeader = header(request)?;
    let ids: Option<BTreeSet<i64>> = match h.broker_controller_ids_to_clean.as_deref() {
        None | Some("") => None,
        Some(list) => Some(
            list.split(';')
                .map(|s| s.trim().parse::<i64>())
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    error(
                        response_code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                        format!("bad id list {list}"),
                    )
                })?,
        ),
    };
    if !h.is_clean_living_broker.unwrap_or(false) {
        let group = node.group(&h.broker_name);
        let living = group.iter().flat_map(|g| g.replicas.keys()).find(|id| {
            ids.as_ref().is_none_or(|ids| ids.contains(id)) && node.is_alive(&h.broker_name, **id)
        });
        if let Some(id) = living {
            return Err(error(
                response_code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                format!("broker {id} is alive"),
            ));
        }
    }
    let out = node
        .write(Command::CleanBrokerData {
            broker_name: h.broker_name.clone(),
            ids: ids.clone(),
        })
        .await?;
    refused(&out)?;
    let id_list: Option<Vec<i64>> = ids.map(|s| s.into_iter().collect());
    node.heartbeats.remove(&h.broker_name, id_list.as_deref());
    Ok(RemotingCommand::success())
}
