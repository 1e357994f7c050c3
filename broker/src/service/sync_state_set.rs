//! A controller-mode master's SyncStateSet upkeep (RocketMQ
//! `AutoSwitchHAService.maybeShrinkSyncStateSet` / `maybeExpandInSyncStateSet`,
//! docs/controller.md#syncstateset): every `checkSyncStateSetPeriod`, members that
//! are disconnected or have not caught up for `haMaxTimeSlaveNotCatchup` leave,
//! replicas that caught up with this master (and hold the start of its epoch) join.
//! The change is asked of the controller (ALTER_SYNC_STATE_SET) and used only once
//! it agreed, so the set a put waits for always covers the controller's: a new
//! master is elected from the controller's set and holds every acknowledged send.

use std::collections::BTreeSet;
use std::sync::Arc;

use tracing::{info, warn};
use vostok_remoting::protocol::body::SyncStateSet;
use vostok_remoting::protocol::header::{
    AlterSyncStateSetRequestHeader, AlterSyncStateSetResponseHeader,
};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;

use super::controller_client::ControllerLink;
use crate::state::replicas::ReplicaRole;
use crate::state::Broker;

/// Takes `sss` as this master's SyncStateSet.
pub(crate) fn adopt(broker: &Broker, sss: &SyncStateSet) {
    let members: Vec<i64> = sss.sync_state_set.iter().copied().collect();
    broker.store.set_sync_state_set(&members);
    *broker.replicas.sync_state_set.write_locked() =
        (sss.sync_state_set.clone(), sss.sync_state_set_epoch);
}

/// The set this master would have now.
fn wanted(broker: &Broker, id: i64, current: &BTreeSet<i64>) -> BTreeSet<i64> {
    let now = now_millis();
    let max_lag = broker
        .config
        .controller
        .ha_max_time_slave_not_catchup
        .as_millis() as i64;
    let epoch_start = broker
        .replicas
        .epochs
        .locked()
        .entries()
        .last()
        .map_or(0, |e| e.1);
    let mut set = BTreeSet::from([id]);
    for slave in broker.store.ha_slaves() {
        if slave.slave_id <= 0 || slave.caught_up_ms == 0 {
            continue;
        }
        let recent = now - slave.caught_up_ms < max_lag;
        let keep = current.contains(&slave.slave_id) && recent;
        let join = recent && slave.ack_offset >= epoch_start;
        if keep || join {
            set.insert(slave.slave_id);
        }
    }
    set
}

pub(crate) async fn check(broker: &Arc<Broker>, link: &mut ControllerLink, id: i64) {
    let (current, sss_epoch) = broker.replicas.sync_state_set();
    let new_set = wanted(broker, id, &current);
    if new_set == current {
        return;
    }
    let header = AlterSyncStateSetRequestHeader {
        broker_name: broker.config.broker_name.clone(),
        master_broker_id: id,
        master_epoch: broker.replicas.master_epoch(),
        invoke_time: Some(now_millis()),
    };
    let body = SyncStateSet {
        sync_state_set: new_set.clone(),
        sync_state_set_epoch: sss_epoch,
    };
    let req = RemotingCommand::request_with_header(
        request_code::CONTROLLER_ALTER_SYNC_STATE_SET,
        &header,
    )
    .with_body(json::to_vec(&body));
    match link.call(broker, req).await {
        Ok(r) if r.code == response_code::SUCCESS => {
            let epoch = r
                .decode_header::<AlterSyncStateSetResponseHeader>()
                .map(|h| h.new_sync_state_set_epoch)
                .unwrap_or(sss_epoch + 1);
            info!(from = ?current, to = ?new_set, epoch, "SyncStateSet changed");
            adopt(
                broker,
                &SyncStateSet {
                    sync_state_set: new_set,
                    sync_state_set_epoch: epoch,
                },
            );
        }
        Ok(r) if r.code == response_code::CONTROLLER_FENCED_MASTER_EPOCH => {
            // Another master was elected: stop taking sends now; the next metadata
            // sync makes this broker a slave.
            warn!(
                remark = r.remark(),
                "fenced by a newer master epoch: stepping down"
            );
            broker.replicas.set_role(ReplicaRole::None);
            broker.store.set_role(true, false);
        }
        Ok(r) => warn!(
            code = r.code,
            remark = r.remark(),
            "SyncStateSet change refused"
        ),
        Err(e) => warn!(error = %e, "SyncStateSet change not sent"),
    }
}
