//! CONTROLLER_ELECT_MASTER and the decision the scan service takes when a master's
//! heartbeats stop (docs/controller.md#election). The leader decides with its
//! heartbeat table and writes the decision with the epoch it was taken on.

use vostok_remoting::protocol::body::{BrokerMemberGroup, ElectMasterResponseBody};
use vostok_remoting::protocol::header::ElectMasterRequestHeader;
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::RemotingCommand;

use super::broker::{master_view, refused};
use super::{error, header};
use crate::node::ControllerNode;
use crate::replicas::{elect_policy, BrokerGroup, Command, Outcome};

/// Elects a new master of `group` (`designated`: an operator's choice) and writes
/// it; the outcome says whether it was taken. A new master is pushed to the group's
/// alive brokers (`notifyBrokerRoleChanged`), after the write, without waiting.
pub async fn elect_for(
    node: &ControllerNode,
    group: &BrokerGroup,
    designated: Option<i64>,
) -> Result<Outcome, RemotingCommand> {
    let name = group.broker_name.clone();
    let alive = |id: i64| node.live(&name, id);
    let new_master = elect_policy::elect(
        group,
        &alive,
        node.runtime.enable_elect_unclean_master(),
        designated,
    );
    let out = node
        .write(Command::ElectMaster {
            broker_name: group.broker_name.clone(),
            new_master,
            expected_epoch: group.master_epoch,
        })
        .await?;
    if out.code == response_code::SUCCESS && node.runtime.notify_broker_role_changed() {
        if let Some(elected) = &out.group {
            node.notifier.notify(elected);
        }
    }
    Ok(out)
}

fn answer(group: &BrokerGroup, code: i32, remark: Option<String>) -> RemotingCommand {
    let (header, sss) = master_view(group, true);
    let body = ElectMasterResponseBody {
        broker_member_group: Some(BrokerMemberGroup {
            cluster: group.cluster.clone(),
            broker_name: group.broker_name.clone(),
            broker_addrs: group
                .replicas
                .iter()
                .map(|(id, r)| (*id, r.addr.clone()))
                .collect(),
        }),
        sync_state_set: sss.sync_state_set,
    };
    RemotingCommand::response(code, remark)
        .with_header(&header)
        .with_body(json::to_vec(&body))
}

pub(super) async fn elect_master(
    node: &ControllerNode,
    request: &RemotingCommand,
) -> Result<RemotingCommand, RemotingCommand> {
    let h: ElectMasterRequestHeader = header(request)?;
    let Some(group) = node.group(&h.broker_name) else {
        return Err(error(
            response_code::CONTROLLER_BROKER_METADATA_NOT_EXIST,
            format!("no broker group {}", h.broker_name),
        ));
    };
    let designate = h.designate_elect.unwrap_or(false);
    if !designate {
        if let Some(m) = group
            .master
            .filter(|m| node.is_alive(&group.broker_name, *m))
        {
            return Ok(answer(
                &group,
                response_code::CONTROLLER_MASTER_STILL_EXIST,
                Some(format!("master {m} is alive")),
            ));
        }
    }
    // The first master of a group is the broker that asks (Apache
    // `isFirstTimeForElect`); later ones follow the policy.
    let designated = (designate || group.first_election()).then_some(h.broker_id);
    let out = elect_for(node, &group, designated).await?;
    refused(&out)?;
    let group = out.group.unwrap_or(group);
    tracing::info!(
        broker_name = %group.broker_name,
        master = ?group.master,
        epoch = group.master_epoch,
        "master elected on request"
    );
    Ok(answer(&group, response_code::SUCCESS, None))
}
