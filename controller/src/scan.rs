//! The leader's scan for dead masters (RocketMQ `scanNotActiveBroker` /
//! `scanInactiveMasterAndTriggerReelect`): every `scanNotActiveBrokerInterval`, a
//! group whose master's heartbeats stopped gets a new master from its alive
//! SyncStateSet, with the epoch bumped. A group where nobody qualifies keeps its
//! (dead) master and is looked at again on the next scan.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};
use vostok_remoting::protocol::response_code;

use crate::node::ControllerNode;
use crate::processor::elect_for;

pub async fn run(node: Arc<ControllerNode>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(node.config.scan_not_active_broker_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if node.is_leader() {
            scan_once(&node).await;
        }
    }
}

async fn scan_once(node: &ControllerNode) {
    let groups: Vec<_> = {
        let applied = match node.applied.read() {
            Ok(a) => a,
            Err(p) => p.into_inner(),
        };
        applied.info.groups.values().cloned().collect()
    };
    for group in groups {
        let Some(master) = group.master else { continue };
        if node.is_alive(&group.broker_name, master) {
            continue;
        }
        match elect_for(node, &group, None).await {
            Ok(out) if out.code == response_code::SUCCESS => {
                let g = out.group.unwrap_or_default();
                info!(
                    broker_name = %g.broker_name,
                    old_master = master,
                    new_master = ?g.master,
                    epoch = g.master_epoch,
                    "master's heartbeats stopped: new master elected"
                );
            }
            Ok(out) => warn!(
                broker_name = %group.broker_name,
                dead_master = master,
                code = out.code,
                remark = ?out.remark,
                "master's heartbeats stopped: no new master"
            ),
            Err(resp) => warn!(
                broker_name = %group.broker_name,
                code = resp.code,
                remark = ?resp.remark,
                "election write failed"
            ),
        }
    }
}
