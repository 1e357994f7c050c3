//! Controller mode role changes (RocketMQ `ReplicasManager.changeToMaster` /
//! `changeToSlave`, docs/controller.md#role-changes). A new master cuts a torn tail,
//! starts its epoch at its max offset and takes sends with its SyncStateSet; a new
//! slave stops replicating, cuts what its master does not have (the consistent
//! point of the two epoch histories) and follows the master. Each change
//! re-registers with the name servers (a master as brokerId 0).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::{error, info, warn};
use vostok_remoting::protocol::body::{EpochEntryCache, SyncStateSet};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;
use vostok_store::ha::consistent_point;

use super::{registration, sync_state_set};
use crate::state::replicas::{MasterInfo, ReplicaRole};
use crate::state::Broker;

/// Stops the replication client and waits (briefly) until its connection is gone.
async fn stop_replicating(broker: &Broker) {
    let Some(client) = broker.roles.ha_client.get() else {
        return;
    };
    client.clear_master();
    for _ in 0..100 {
        if !client.is_connected() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) async fn become_master(broker: &Arc<Broker>, id: i64, epoch: i32, sss: &SyncStateSet) {
    info!(broker_id = id, epoch, "controller mode: becoming master");
    broker.roles.replicas.set_role(ReplicaRole::None);
    broker.storage.store.set_role(true, false);
    stop_replicating(broker).await;
    // Not a master re-elected: its POP checkpoints are a slave's, stale.
    let reload_pop = !broker.roles.replicas.master_services.is_running();
    let store = broker.storage.store.clone();
    let b = broker.clone();
    let prepared = tokio::task::spawn_blocking(move || -> std::io::Result<i64> {
        // A record received only in part is cut.
        let max = store.max_phy_offset();
        if store.raw_write_end() > max {
            store.truncate_to(max).map_err(std::io::Error::other)?;
        }
        store.wait_for_dispatch(max, Duration::from_secs(10));
        if reload_pop {
            b.pop.reload(&store, &b.consumers.offsets);
        }
        let mut epochs = b.roles.replicas.epochs.locked();
        epochs.truncate_suffix(max)?;
        epochs.append(epoch, max)?;
        Ok(max)
    })
    .await;
    match prepared {
        Ok(Ok(max)) => info!(epoch, start = max, "epoch started"),
        Ok(Err(e)) => {
            error!(error = %e, "cannot start the epoch; staying without a role");
            return;
        }
        Err(e) => {
            error!(error = %e, "epoch start panicked");
            return;
        }
    }
    broker
        .roles
        .replicas
        .master_epoch
        .store(epoch, Ordering::Release);
    // A new master epoch fences every request of an earlier one.
    broker.roles.replicas.unanswered_joiners.locked().clear();
    sync_state_set::adopt(broker, sss);
    broker
        .roles
        .replicas
        .last_controller_ok_ms
        .store(now_millis(), Ordering::Release);
    *broker.roles.master_addr.write_locked() = None;
    broker
        .storage
        .store
        .set_role(false, broker.config.controller.all_ack_in_sync_state_set);
    broker.roles.replicas.set_role(ReplicaRole::Master);
    super::start_master_services(broker);
    registration::register_all(broker).await;
}

/// The master's epoch history (GET_BROKER_EPOCH_CACHE on its main port).
async fn master_epochs(broker: &Broker, master_addr: &str) -> Option<EpochEntryCache> {
    let req = RemotingCommand::request(request_code::GET_BROKER_EPOCH_CACHE);
    // Bounded by the poll period: an unreachable master must not hold up the poll
    // that will tell this broker about the next master.
    let timeout = broker
        .config
        .controller
        .sync_broker_metadata_period
        .clamp(Duration::from_millis(200), Duration::from_secs(3));
    match broker
        .namesrv
        .client
        .invoke_sync(master_addr, req, timeout)
        .await
    {
        Ok(r) if r.code == response_code::SUCCESS => json::from_slice("epochCache", &r.body).ok(),
        Ok(r) => {
            warn!(
                master = master_addr,
                code = r.code,
                "master refused its epoch cache"
            );
            None
        }
        Err(e) => {
            warn!(master = master_addr, error = %e, "cannot fetch the master's epoch cache");
            None
        }
    }
}

fn entries(cache: &EpochEntryCache) -> Vec<(i32, i64)> {
    cache
        .epoch_list
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect()
}

pub(crate) async fn become_slave(broker: &Arc<Broker>, master: i64, epoch: i32, info: &MasterInfo) {
    info!(master, epoch, "controller mode: becoming slave");
    broker.roles.replicas.set_role(ReplicaRole::Slave);
    broker.storage.store.set_role(true, false);
    // A demoted master stops what only a master runs (RocketMQ `changeToSlave`)
    // before its log may be cut.
    super::stop_master_services(broker).await;
    stop_replicating(broker).await;
    let (Some(addr), Some(ha)) = (info.addr.clone(), info.ha_addr.clone()) else {
        warn!(
            master,
            "the controller does not know the master's addresses yet"
        );
        return;
    };
    let Some(cache) = master_epochs(broker, &addr).await else {
        // Retried at the next metadata sync (the role is set, the epoch not yet).
        return;
    };
    let master_entries = entries(&cache);
    let store = broker.storage.store.clone();
    let b = broker.clone();
    let truncated = tokio::task::spawn_blocking(move || -> Result<i64, String> {
        let local = b.roles.replicas.epochs.locked().entries().to_vec();
        let local_max = store.max_phy_offset();
        let point = if local_max == 0
            || local.is_empty() && store.raw_write_end() == store.min_phy_offset()
        {
            local_max
        } else {
            consistent_point(&local, local_max, &master_entries, cache.max_offset).ok_or_else(
                || {
                    format!(
                    "no epoch shared with the master (local {local:?}, master {master_entries:?}): \
                     repair by hand"
                )
                },
            )?
        };
        if point < store.raw_write_end() {
            store.truncate_to(point).map_err(|e| e.to_string())?;
        }
        b.roles
            .replicas
            .epochs
            .locked()
            .adopt(&master_entries, point)
            .map_err(|e| e.to_string())?;
        Ok(point)
    })
    .await;
    match truncated {
        Ok(Ok(point)) => info!(master, offset = point, "following the new master from here"),
        Ok(Err(e)) => {
            error!(master, error = %e, "cannot follow the new master");
            return;
        }
        Err(e) => {
            error!(error = %e, "truncation panicked");
            return;
        }
    }
    broker
        .roles
        .replicas
        .master_epoch
        .store(epoch, Ordering::Release);
    *broker.roles.replicas.sync_state_set.write_locked() = (
        info.sync_state_set.sync_state_set.clone(),
        info.sync_state_set.sync_state_set_epoch,
    );
    *broker.roles.master_addr.write_locked() = Some(addr);
    broker.roles.master_changed.notify_waiters();
    if let Some(client) = broker.roles.ha_client.get() {
        client.update_master(&ha);
    }
    registration::register_all(broker).await;
}

/// A slave keeps its epoch history in step with what it received from its master.
pub(crate) async fn refresh_slave(broker: &Arc<Broker>, info: &MasterInfo) {
    let Some(addr) = info.addr.clone() else {
        return;
    };
    *broker.roles.replicas.sync_state_set.write_locked() = (
        info.sync_state_set.sync_state_set.clone(),
        info.sync_state_set.sync_state_set_epoch,
    );
    if broker.roles.master_addr.read_locked().as_deref() != Some(addr.as_str()) {
        // The earlier change did not finish (master unreachable then): finish it.
        become_slave(broker, info.id.unwrap_or(-1), info.epoch, info).await;
        return;
    }
    if let Some(cache) = master_epochs(broker, &addr).await {
        let max = broker.storage.store.max_phy_offset();
        if let Err(e) = broker
            .roles
            .replicas
            .epochs
            .locked()
            .adopt(&entries(&cache), max)
        {
            warn!(error = %e, "cannot update the epoch file");
        }
    }
}
