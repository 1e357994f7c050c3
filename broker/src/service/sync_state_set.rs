//! A controller-mode master's SyncStateSet upkeep (RocketMQ
//! `AutoSwitchHAService.maybeShrinkSyncStateSet` / `maybeExpandInSyncStateSet`,
//! docs/controller.md#syncstateset).
//!
//! A replica **joins** in the store, on the report that shows it holds every
//! acknowledged message (the confirm offset, `vostok_store::ha` `in_sync`): from
//! that moment puts wait for it, and the store wakes this check, which asks the
//! controller (ALTER_SYNC_STATE_SET) at once. Every `checkSyncStateSetPeriod` the
//! check also drops members that are disconnected or have not caught up for
//! `haMaxTimeSlaveNotCatchup`; a member leaves the set puts wait for only once the
//! controller agreed. So while a change is in flight puts wait for a superset of the
//! old and the proposed set: whoever the controller elects from either holds every
//! acknowledged send.
//!
//! A joining replica that falls behind before the controller agreed is forgotten
//! (puts stop waiting for it) only when the controller cannot hold it: no request
//! naming it went unanswered at a SyncStateSet epoch the controller may still be at,
//! or the controller since agreed to a set without it.

use std::collections::{BTreeMap, BTreeSet};
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
    broker.storage.store.set_sync_state_set(&members);
    *broker.roles.replicas.sync_state_set.write_locked() =
        (sss.sync_state_set.clone(), sss.sync_state_set_epoch);
}

/// The connected replicas that caught up within `haMaxTimeSlaveNotCatchup`.
fn caught_up(broker: &Broker) -> BTreeSet<i64> {
    let now = now_millis();
    let max_lag = broker
        .config
        .controller
        .ha_max_time_slave_not_catchup
        .as_millis() as i64;
    broker
        .storage
        .store
        .ha_slaves()
        .into_iter()
        .filter(|s| s.slave_id > 0 && s.caught_up_ms > 0 && now - s.caught_up_ms < max_lag)
        .map(|s| s.slave_id)
        .collect()
}

/// What one check decides.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    /// The set to ask the controller for, when it differs from the current one.
    proposal: Option<BTreeSet<i64>>,
    /// Joining replicas puts may stop waiting for now: fallen behind, and no
    /// unanswered request named them at an epoch the controller may still be at.
    forget_now: Vec<i64>,
}

/// Master `id` with SyncStateSet `current` (epoch `epoch`) and replicas `joining`
/// keeps the members and joiners that are `caught_up`. `unanswered`: joiners named
/// in a request that got no answer, with the SyncStateSet epoch it carried.
fn plan(
    id: i64,
    (current, epoch): (&BTreeSet<i64>, i32),
    joining: &[i64],
    caught_up: &BTreeSet<i64>,
    unanswered: &BTreeMap<i64, i32>,
) -> Plan {
    let mut wanted = BTreeSet::from([id]);
    wanted.extend(
        current
            .iter()
            .chain(joining)
            .filter(|r| caught_up.contains(r)),
    );
    let forget_now = joining
        .iter()
        .filter(|r| !wanted.contains(r))
        .filter(|r| unanswered.get(r).is_none_or(|sent_at| epoch > *sent_at))
        .copied()
        .collect();
    Plan {
        proposal: (wanted != *current).then_some(wanted),
        forget_now,
    }
}

pub(crate) async fn check(broker: &Arc<Broker>, link: &mut ControllerLink, id: i64) {
    let (current, sss_epoch) = broker.roles.replicas.sync_state_set();
    let joining = broker.storage.store.sync_state_set_joining();
    let plan = {
        let unanswered = broker.roles.replicas.unanswered_joiners.locked();
        plan(
            id,
            (&current, sss_epoch),
            &joining,
            &caught_up(broker),
            &unanswered,
        )
    };
    if !plan.forget_now.is_empty() {
        info!(
            replicas = ?plan.forget_now,
            "replicas fell behind before the controller took them into the SyncStateSet: \
             sends stop waiting for them"
        );
        broker
            .storage
            .store
            .forget_sync_state_set_joining(&plan.forget_now);
    }
    let Some(new_set) = plan.proposal else {
        return;
    };
    let header = AlterSyncStateSetRequestHeader {
        broker_name: broker.config.broker_name.clone(),
        master_broker_id: id,
        master_epoch: broker.roles.replicas.master_epoch(),
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
                    sync_state_set: new_set.clone(),
                    sync_state_set_epoch: epoch,
                },
            );
            // The controller moved past every epoch an unanswered request carried,
            // and holds exactly `new_set`: joiners left out are not in it.
            broker.roles.replicas.unanswered_joiners.locked().clear();
            let left_out: Vec<i64> = joining
                .into_iter()
                .filter(|r| !new_set.contains(r))
                .collect();
            if !left_out.is_empty() {
                broker
                    .storage
                    .store
                    .forget_sync_state_set_joining(&left_out);
            }
        }
        Ok(r) if r.code == response_code::CONTROLLER_FENCED_MASTER_EPOCH => {
            // Another master was elected: stop taking sends now; the next metadata
            // sync makes this broker a slave.
            warn!(
                remark = r.remark(),
                "fenced by a newer master epoch: stepping down"
            );
            broker.roles.replicas.set_role(ReplicaRole::None);
            broker.storage.store.set_role(true, false);
        }
        Ok(r) => warn!(
            code = r.code,
            remark = r.remark(),
            "SyncStateSet change refused"
        ),
        Err(e) => {
            warn!(error = %e, "SyncStateSet change not answered");
            // The controller may yet apply it: its new members stay waited for.
            let mut unanswered = broker.roles.replicas.unanswered_joiners.locked();
            for r in new_set.difference(&current) {
                let sent_at = unanswered.entry(*r).or_insert(sss_epoch);
                *sent_at = (*sent_at).max(sss_epoch);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[i64]) -> BTreeSet<i64> {
        ids.iter().copied().collect()
    }

    #[test]
    fn joiners_are_proposed_with_the_members_that_kept_up() {
        let none = BTreeMap::new();
        // 2 joined here and is caught up; member 3 fell behind.
        let p = plan(1, (&set(&[1, 3]), 4), &[2], &set(&[2]), &none);
        assert_eq!(p.proposal, Some(set(&[1, 2])));
        assert!(p.forget_now.is_empty());
        // Nothing to change.
        let p = plan(1, (&set(&[1, 3]), 4), &[], &set(&[3]), &none);
        assert_eq!(p.proposal, None);
    }

    #[test]
    fn a_joiner_that_fell_behind_is_forgotten_only_when_the_controller_cannot_hold_it() {
        // Never named in an unanswered request: the controller never took it.
        let p = plan(1, (&set(&[1]), 4), &[2], &set(&[]), &BTreeMap::new());
        assert_eq!(p.proposal, None);
        assert_eq!(p.forget_now, vec![2]);
        // A request naming it at epoch 4 went unanswered and the controller is still
        // at 4 as far as this master knows: it may apply it yet.
        let unanswered = BTreeMap::from([(2, 4)]);
        let p = plan(1, (&set(&[1]), 4), &[2], &set(&[]), &unanswered);
        assert!(p.forget_now.is_empty());
        // The controller moved on to epoch 5 without it: that request is fenced.
        let p = plan(1, (&set(&[1]), 5), &[2], &set(&[]), &unanswered);
        assert_eq!(p.forget_now, vec![2]);
    }
}
