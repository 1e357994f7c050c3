//! What brokers send (RocketMQ 5.1+ registration, docs/controller.md#broker-lifecycle):
//! BROKER_HEARTBEAT, GET_NEXT_BROKER_ID → APPLY_BROKER_ID → REGISTER_BROKER, and the
//! master's ALTER_SYNC_STATE_SET.

use std::collections::BTreeSet;

use vostok_remoting::protocol::body::SyncStateSet;
use vostok_remoting::protocol::header::{
    AlterSyncStateSetRequestHeader, AlterSyncStateSetResponseHeader, ApplyBrokerIdRequestHeader,
    ApplyBrokerIdResponseHeader, BrokerHeartbeatRequestHeader, ElectMasterResponseHeader,
    GetNextBrokerIdRequestHeader, GetNextBrokerIdResponseHeader,
    RegisterBrokerToControllerRequestHeader,
};
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;

use super::{error, header};
use crate::node::ControllerNode;
use crate::replicas::{BrokerGroup, Command, LiveInfo, Outcome};

type Answer = Result<RemotingCommand, RemotingCommand>;

pub(super) fn heartbeat(node: &ControllerNode, request: &RemotingCommand) -> RemotingCommand {
    let h: BrokerHeartbeatRequestHeader = match header(request) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let Some(id) = h.broker_id else {
        return error(response_code::CONTROLLER_INVALID_REQUEST, "no brokerId");
    };
    node.heartbeats.on_heartbeat(
        &h.broker_name,
        id,
        LiveInfo {
            addr: h.broker_addr,
            last_ms: now_millis(),
            timeout_ms: h.heartbeat_timeout_mills.unwrap_or(0),
            epoch: h.epoch.unwrap_or(0),
            max_offset: h.max_offset.unwrap_or(0),
            confirm_offset: h.confirm_offset.unwrap_or(0),
            priority: h.election_priority.unwrap_or(0),
        },
    );
    RemotingCommand::success()
}

pub(super) fn next_broker_id(node: &ControllerNode, request: &RemotingCommand) -> Answer {
    let h: GetNextBrokerIdRequestHeader = header(request)?;
    let next = node
        .applied
        .read_locked()
        .info
        .next_broker_id(&h.broker_name);
    Ok(
        RemotingCommand::success().with_header(&GetNextBrokerIdResponseHeader {
            cluster_name: Some(h.cluster_name),
            broker_name: Some(h.broker_name),
            next_broker_id: Some(next),
        }),
    )
}

pub(super) async fn apply_broker_id(node: &ControllerNode, request: &RemotingCommand) -> Answer {
    let h: ApplyBrokerIdRequestHeader = header(request)?;
    let out = node
        .write(Command::ApplyBrokerId {
            cluster: h.cluster_name.clone(),
            broker_name: h.broker_name.clone(),
            broker_id: h.applied_broker_id,
            check_code: h.register_check_code,
        })
        .await?;
    refused(&out)?;
    Ok(
        RemotingCommand::success().with_header(&ApplyBrokerIdResponseHeader {
            cluster_name: Some(h.cluster_name),
            broker_name: Some(h.broker_name),
        }),
    )
}

/// The error response of a refused outcome.
pub(super) fn refused(out: &Outcome) -> Result<(), RemotingCommand> {
    if out.code == response_code::SUCCESS {
        return Ok(());
    }
    Err(error(out.code, out.remark.clone().unwrap_or_default()))
}

/// Header and SyncStateSet body describing `group`'s master; the master fields are
/// left out when `with_master` is false (no master, or it is dead).
pub(super) fn master_view(
    group: &BrokerGroup,
    with_master: bool,
) -> (ElectMasterResponseHeader, SyncStateSet) {
    let header = ElectMasterResponseHeader {
        cluster_name: Some(group.cluster.clone()),
        broker_name: Some(group.broker_name.clone()),
        master_broker_id: group.master.filter(|_| with_master),
        master_address: group
            .master_addr()
            .filter(|_| with_master)
            .map(str::to_owned),
        master_epoch: Some(group.master_epoch),
        sync_state_set_epoch: Some(group.sync_state_set_epoch),
        master_ha_address: group
            .master_ha_addr()
            .filter(|_| with_master)
            .map(str::to_owned),
    };
    let sss = SyncStateSet {
        sync_state_set: group.sync_state_set.clone(),
        sync_state_set_epoch: group.sync_state_set_epoch,
    };
    (header, sss)
}

pub(super) async fn register(node: &ControllerNode, request: &RemotingCommand) -> Answer {
    let h: RegisterBrokerToControllerRequestHeader = header(request)?;
    let out = node
        .write(Command::RegisterBroker {
            broker_name: h.broker_name.clone(),
            broker_id: h.broker_id,
            addr: h.broker_address,
            ha_addr: h.ha_address,
        })
        .await?;
    refused(&out)?;
    let Some(group) = out.group else {
        return Err(error(
            response_code::SYSTEM_ERROR,
            "no group after registering",
        ));
    };
    // Apache answers the master only while it is alive; otherwise the broker asks
    // for an election.
    let alive = group
        .master
        .is_some_and(|m| node.is_alive(&group.broker_name, m));
    let (header, sss) = master_view(&group, alive);
    Ok(RemotingCommand::success()
        .with_header(&header)
        .with_body(json::to_vec(&sss)))
}

pub(super) async fn alter(node: &ControllerNode, request: &RemotingCommand) -> Answer {
    let h: AlterSyncStateSetRequestHeader = header(request)?;
    let body: SyncStateSet = json::from_slice("SyncStateSet", &request.body)
        .map_err(|e| error(response_code::CONTROLLER_INVALID_REQUEST, e.to_string()))?;
    // A replica joins only while alive (Apache checks the same before writing).
    let new_set: BTreeSet<i64> = body.sync_state_set;
    if let Some(dead) = new_set
        .iter()
        .find(|id| **id != h.master_broker_id && !node.is_alive(&h.broker_name, **id))
    {
        return Err(error(
            response_code::CONTROLLER_BROKER_NOT_ALIVE,
            format!("replica {dead} is not alive"),
        ));
    }
    let out = node
        .write(Command::AlterSyncStateSet {
            broker_name: h.broker_name,
            master_id: h.master_broker_id,
            master_epoch: h.master_epoch,
            sync_state_set_epoch: body.sync_state_set_epoch,
            new_set,
        })
        .await?;
    refused(&out)?;
    Ok(
        RemotingCommand::success().with_header(&AlterSyncStateSetResponseHeader {
            new_sync_state_set_epoch: out.new_sync_state_set_epoch.unwrap_or_default(),
        }),
    )
}
