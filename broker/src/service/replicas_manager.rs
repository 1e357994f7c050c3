//! Controller mode on the broker (RocketMQ `ReplicasManager`,
//! docs/controller.md#broker-lifecycle): get an id from the controller (once, kept in
//! `<storePathRootDir>/brokerIdentity`), register, heartbeat every
//! `brokerHeartbeatInterval`, and every `syncBrokerMetadataPeriod` ask who the
//! group's master is; take that role when the master epoch moves. A controller's
//! NOTIFY_BROKER_ROLE_CHANGED (kept in [`crate::state::replicas`] by its processor)
//! wakes the loop and is applied the same way, at once. Without a master the broker
//! asks for an election. A master keeps its SyncStateSet current (`sync_state_set`),
//! at once when a replica joined it.
//! Role changes themselves are in `role_change`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};
use vostok_remoting::protocol::body::SyncStateSet;
use vostok_remoting::protocol::header::{
    ApplyBrokerIdRequestHeader, BrokerHeartbeatRequestHeader, ElectMasterRequestHeader,
    ElectMasterResponseHeader, GetNextBrokerIdRequestHeader, GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader, GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerRequestHeader,
};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;

use super::controller_client::{heartbeat_all, ControllerLink};
use super::{role_change, sync_state_set};
use crate::state::replicas::{MasterInfo, ReplicaRole};
use crate::state::Broker;

pub(crate) fn spawn(broker: &Arc<Broker>) {
    let b = broker.clone();
    broker.life.tasks.spawn(async move { run(b).await });
}

fn identity_path(broker: &Broker) -> std::path::PathBuf {
    broker
        .config
        .store
        .store_path_root_dir
        .join("brokerIdentity")
}

/// The id kept from an earlier run, if any.
fn load_identity(broker: &Broker) -> Option<i64> {
    let pairs = vostok_remoting::support::properties::load(&identity_path(broker)).ok()?;
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    if get("brokerName")? != broker.config.broker_name {
        return None;
    }
    get("brokerId")?.parse().ok()
}

fn save_identity(broker: &Broker, id: i64) -> std::io::Result<()> {
    let text = vostok_remoting::support::properties::render(&[
        (
            "clusterName".into(),
            broker.config.broker_cluster_name.clone(),
        ),
        ("brokerName".into(), broker.config.broker_name.clone()),
        ("brokerId".into(), id.to_string()),
    ]);
    vostok_remoting::support::config_file::persist(&identity_path(broker), text.as_bytes())
}

/// GET_NEXT_BROKER_ID then APPLY_BROKER_ID (RocketMQ 5.1+), until one sticks.
async fn obtain_id(broker: &Broker, link: &mut ControllerLink) -> Option<i64> {
    let next = GetNextBrokerIdRequestHeader {
        cluster_name: broker.config.broker_cluster_name.clone(),
        broker_name: broker.config.broker_name.clone(),
    };
    let req =
        RemotingCommand::request_with_header(request_code::CONTROLLER_GET_NEXT_BROKER_ID, &next);
    let resp = link.call(broker, req).await.ok()?;
    let id = resp
        .decode_header::<GetNextBrokerIdResponseHeader>()
        .ok()?
        .next_broker_id?;
    let apply = ApplyBrokerIdRequestHeader {
        cluster_name: broker.config.broker_cluster_name.clone(),
        broker_name: broker.config.broker_name.clone(),
        applied_broker_id: id,
        register_check_code: format!("{};{}", broker.broker_addr, now_millis()),
    };
    let req =
        RemotingCommand::request_with_header(request_code::CONTROLLER_APPLY_BROKER_ID, &apply);
    let resp = link.call(broker, req).await.ok()?;
    if resp.code != response_code::SUCCESS {
        warn!(
            id,
            code = resp.code,
            remark = resp.remark(),
            "broker id refused; asking again"
        );
        return None;
    }
    Some(id)
}

async fn register(broker: &Broker, link: &mut ControllerLink, id: i64) -> bool {
    let h = RegisterBrokerToControllerRequestHeader {
        cluster_name: broker.config.broker_cluster_name.clone(),
        broker_name: broker.config.broker_name.clone(),
        broker_id: id,
        broker_address: broker.broker_addr.to_string(),
        ha_address: Some(format!(
            "{}:{}",
            broker.config.broker_ip2,
            broker.config.ha_listen_port()
        )),
        invoke_time: Some(now_millis()),
    };
    let req = RemotingCommand::request_with_header(request_code::CONTROLLER_REGISTER_BROKER, &h);
    match link.call(broker, req).await {
        Ok(r) if r.code == response_code::SUCCESS => true,
        Ok(r) => {
            warn!(
                code = r.code,
                remark = r.remark(),
                "controller refused the registration"
            );
            false
        }
        Err(e) => {
            warn!(error = %e, "registration with the controller failed");
            false
        }
    }
}

pub(crate) async fn replica_info(broker: &Broker, link: &mut ControllerLink) -> Option<MasterInfo> {
    let h = GetReplicaInfoRequestHeader {
        broker_name: broker.config.broker_name.clone(),
    };
    let req = RemotingCommand::request_with_header(request_code::CONTROLLER_GET_REPLICA_INFO, &h);
    let resp = link.call(broker, req).await.ok()?;
    if resp.code != response_code::SUCCESS {
        return None;
    }
    let h: GetReplicaInfoResponseHeader = resp.decode_header().ok()?;
    let sss: SyncStateSet = json::from_slice("SyncStateSet", &resp.body).ok()?;
    Some(MasterInfo {
        id: h.master_broker_id,
        addr: h.master_address,
        ha_addr: h.master_ha_address,
        epoch: h.master_epoch.unwrap_or(0),
        sync_state_set: sss,
    })
}

async fn elect_self(broker: &Broker, link: &mut ControllerLink, id: i64) {
    let h = ElectMasterRequestHeader {
        cluster_name: broker.config.broker_cluster_name.clone(),
        broker_name: broker.config.broker_name.clone(),
        broker_id: id,
        designate_elect: Some(false),
        invoke_time: Some(now_millis()),
    };
    let req = RemotingCommand::request_with_header(request_code::CONTROLLER_ELECT_MASTER, &h);
    match link.call(broker, req).await {
        Ok(r) => {
            let h = r.decode_header::<ElectMasterResponseHeader>().ok();
            info!(
                code = r.code,
                master = ?h.and_then(|h| h.master_broker_id),
                "asked the controller for an election"
            );
        }
        Err(e) => warn!(error = %e, "election request failed"),
    }
}

fn heartbeat_header(broker: &Broker, id: i64) -> BrokerHeartbeatRequestHeader {
    let c = &broker.config.controller;
    let max = broker.storage.store.max_phy_offset();
    BrokerHeartbeatRequestHeader {
        cluster_name: broker.config.broker_cluster_name.clone(),
        broker_addr: broker.broker_addr.to_string(),
        broker_name: broker.config.broker_name.clone(),
        broker_id: Some(id),
        epoch: Some(broker.roles.replicas.epochs.locked().last_epoch()),
        max_offset: Some(max),
        confirm_offset: Some(max),
        heartbeat_timeout_mills: Some(c.controller_heartbeat_timeout.as_millis() as i64),
        election_priority: Some(c.broker_election_priority),
    }
}

async fn run(broker: Arc<Broker>) {
    let mut link = ControllerLink::default();
    let c = broker.config.controller.clone();
    let retry = Duration::from_secs(1);
    // 1. An id, kept across restarts.
    let id = loop {
        if let Some(id) = load_identity(&broker) {
            break id;
        }
        if let Some(id) = obtain_id(&broker, &mut link).await {
            if let Err(e) = save_identity(&broker, id) {
                warn!(error = %e, "cannot persist the broker id");
            }
            break id;
        }
        tokio::select! {
            _ = broker.life.shutdown.cancelled() => return,
            _ = tokio::time::sleep(retry) => {}
        }
    };
    broker.roles.replicas.broker_id.store(id, Ordering::Release);
    broker.storage.store.set_broker_id(id);
    info!(broker_id = id, "controller mode: broker id");
    // 2. Registered.
    while !register(&broker, &mut link, id).await {
        tokio::select! {
            _ = broker.life.shutdown.cancelled() => return,
            _ = tokio::time::sleep(retry) => {}
        }
    }
    // 3. Heartbeats, role and SyncStateSet upkeep.
    let tick = c
        .broker_heartbeat_interval
        .min(c.sync_broker_metadata_period);
    let mut last_sync = 0i64;
    let mut last_check = 0i64;
    // A replica joined the SyncStateSet: the controller is asked at once.
    let mut joined = false;
    loop {
        if !heartbeat_all(&broker, &heartbeat_header(&broker, id)).await {
            tracing::debug!("no controller took the heartbeat");
        }
        let now = now_millis();
        if now - last_sync >= c.sync_broker_metadata_period.as_millis() as i64
            || broker.roles.replicas.role() == ReplicaRole::None
        {
            last_sync = now;
            match replica_info(&broker, &mut link).await {
                Some(info) => apply_replica_info(&broker, &mut link, id, info).await,
                None => warn!("cannot reach the controller leader"),
            }
        }
        if broker.roles.replicas.role() == ReplicaRole::Master
            && (joined || now - last_check >= c.check_sync_state_set_period.as_millis() as i64)
        {
            last_check = now;
            sync_state_set::check(&broker, &mut link, id).await;
        }
        joined = false;
        tokio::select! {
            _ = broker.life.shutdown.cancelled() => return,
            _ = tokio::time::sleep(tick) => {}
            _ = broker.storage.store.sync_state_set_joined() => joined = true,
            _ = broker.roles.replicas.notice_arrived.notified() => {
                if let Some(info) = broker.roles.replicas.take_notice() {
                    info!(
                        master = ?info.id,
                        epoch = info.epoch,
                        "the controller notified a role change"
                    );
                    apply_replica_info(&broker, &mut link, id, info).await;
                }
            }
        }
    }
}

/// Acts on what the controller says (polled or notified): elect when there is no
/// master, change role when the epoch moved, renew the lease, follow SyncStateSet
/// changes. An epoch older than the known one is ignored.
async fn apply_replica_info(
    broker: &Arc<Broker>,
    link: &mut ControllerLink,
    id: i64,
    info: MasterInfo,
) {
    let Some(master) = info.id else {
        elect_self(broker, link, id).await;
        return;
    };
    let known = broker.roles.replicas.master_epoch();
    let role = broker.roles.replicas.role();
    if info.epoch < known {
        warn!(
            epoch = info.epoch,
            known, "controller answered an older epoch; ignored"
        );
        return;
    }
    if master == id {
        if info.epoch > known || role != ReplicaRole::Master {
            role_change::become_master(broker, id, info.epoch, &info.sync_state_set).await;
        }
        // The controller still knows this broker as master of this epoch: the lease.
        broker
            .roles
            .replicas
            .last_controller_ok_ms
            .store(now_millis(), Ordering::Release);
        let (_, local_epoch) = broker.roles.replicas.sync_state_set();
        if info.sync_state_set.sync_state_set_epoch > local_epoch {
            sync_state_set::adopt(broker, &info.sync_state_set);
        }
    } else if info.epoch > known || role != ReplicaRole::Slave {
        role_change::become_slave(broker, master, info.epoch, &info).await;
    } else {
        role_change::refresh_slave(broker, &info).await;
    }
    *broker.roles.replicas.master.write_locked() = Some((
        master,
        info.addr.clone().unwrap_or_default(),
        info.ha_addr.clone().unwrap_or_default(),
    ));
}
