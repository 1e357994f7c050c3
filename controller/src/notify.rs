//! NOTIFY_BROKER_ROLE_CHANGED (RocketMQ `ControllerManager.notifyBrokerRoleChanged`,
//! docs/controller.md#election): once an election is applied, the leader tells every
//! alive broker of the group who the master is now, with both epochs and the
//! SyncStateSet, so that they change role at once rather than at their next poll
//! of CONTROLLER_GET_REPLICA_INFO.
//!
//! Best effort and bounded: the election hands the group to a queue of
//! [`QUEUE`] entries without waiting (a full queue drops the notice), and one task
//! sends each notice oneway to the group's brokers at once, each send bounded by
//! [`SEND_TIMEOUT`]. A broker that misses a notice learns the same at its next poll;
//! an older notice than what it knows is ignored there (epochs).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::body::SyncStateSet;
use vostok_remoting::protocol::header::NotifyBrokerRoleChangedRequestHeader;
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::{RemotingClient, RemotingCommand};

use crate::node::ControllerNode;
use crate::replicas::BrokerGroup;

/// Notices waiting to be sent; more are dropped (the brokers' polls cover them).
pub const QUEUE: usize = 64;
/// Longest one send (connect included) may take.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(3);

/// The election's end of the queue.
pub struct RoleNotifier {
    tx: mpsc::Sender<BrokerGroup>,
}

impl RoleNotifier {
    pub fn new() -> (RoleNotifier, mpsc::Receiver<BrokerGroup>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (RoleNotifier { tx }, rx)
    }

    /// Queues a notice of `group`'s new master; never waits.
    pub fn notify(&self, group: &BrokerGroup) {
        if let Err(mpsc::error::TrySendError::Full(g)) = self.tx.try_send(group.clone()) {
            warn!(
                broker_name = %g.broker_name,
                epoch = g.master_epoch,
                "role change notices queue full: the brokers will learn at their next poll"
            );
        }
    }
}

/// The request a broker of `group` receives (the master's HA address is a Vostok
/// extension field; Apache brokers ignore it).
pub fn request(group: &BrokerGroup) -> RemotingCommand {
    let header = NotifyBrokerRoleChangedRequestHeader {
        master_address: group.master_addr().map(str::to_owned),
        master_epoch: Some(group.master_epoch),
        sync_state_set_epoch: Some(group.sync_state_set_epoch),
        master_broker_id: group.master,
        master_ha_address: group.master_ha_addr().map(str::to_owned),
    };
    let body = SyncStateSet {
        sync_state_set: group.sync_state_set.clone(),
        sync_state_set_epoch: group.sync_state_set_epoch,
    };
    RemotingCommand::request_with_header(request_code::NOTIFY_BROKER_ROLE_CHANGED, &header)
        .with_body(json::to_vec(&body))
}

/// Sends the queued notices until `shutdown`.
pub async fn run(
    node: Arc<ControllerNode>,
    client: Arc<RemotingClient>,
    mut queue: mpsc::Receiver<BrokerGroup>,
    shutdown: CancellationToken,
) {
    loop {
        let group = tokio::select! {
            _ = shutdown.cancelled() => return,
            g = queue.recv() => match g {
                Some(g) => g,
                None => return,
            },
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = send(&node, &client, &group) => {}
        }
    }
}

async fn send(node: &ControllerNode, client: &Arc<RemotingClient>, group: &BrokerGroup) {
    if group.master.is_none() {
        return;
    }
    // Apache notifies the alive brokers only: a dead one learns when it polls again.
    let targets: Vec<(i64, String)> = group
        .replicas
        .iter()
        .filter(|(id, r)| !r.addr.is_empty() && node.is_alive(&group.broker_name, **id))
        .map(|(id, r)| (*id, r.addr.clone()))
        .collect();
    info!(
        broker_name = %group.broker_name,
        master = ?group.master,
        epoch = group.master_epoch,
        brokers = ?targets.iter().map(|(id, _)| id).collect::<Vec<_>>(),
        "notifying the brokers of their new roles"
    );
    let mut sends = JoinSet::new();
    for (id, addr) in targets {
        let (client, request) = (client.clone(), request(group));
        sends.spawn(async move {
            if let Err(e) = client.invoke_oneway(&addr, request, SEND_TIMEOUT).await {
                debug!(broker_id = id, addr = %addr, error = %e, "role change notice not sent");
            }
        });
    }
    while sends.join_next().await.is_some() {}
}
