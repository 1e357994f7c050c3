//! The broker's calls to the controllers (RocketMQ `BrokerOuterAPI`'s controller
//! half, docs/controller.md#broker-lifecycle): find the leader
//! (CONTROLLER_GET_METADATA_INFO), ask it, and start over when it answers
//! CONTROLLER_NOT_LEADER; heartbeats go to every controller.

use std::time::Duration;

use futures_util::future::join_all;
use tracing::debug;
use vostok_remoting::protocol::header::{BrokerHeartbeatRequestHeader, GetMetaDataResponseHeader};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::RemotingCommand;

use crate::state::Broker;

const TIMEOUT: Duration = Duration::from_secs(3);

/// The leader this broker talks to, found again when it moves.
#[derive(Default)]
pub(crate) struct ControllerLink {
    leader: Option<String>,
}

impl ControllerLink {
    async fn find_leader(&mut self, broker: &Broker) -> Option<String> {
        for addr in &broker.config.controller.controller_addr {
            let req = RemotingCommand::request(request_code::CONTROLLER_GET_METADATA_INFO);
            let Ok(resp) = broker.namesrv.client.invoke_sync(addr, req, TIMEOUT).await else {
                continue;
            };
            let Ok(h) = resp.decode_header::<GetMetaDataResponseHeader>() else {
                continue;
            };
            if h.is_leader {
                self.leader = Some(addr.clone());
                return self.leader.clone();
            }
        }
        self.leader = None;
        None
    }

    /// Sends `request` to the leader (found first if unknown); a CONTROLLER_NOT_LEADER
    /// answer or a failed call forgets the leader and tries once more.
    pub(crate) async fn call(
        &mut self,
        broker: &Broker,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, String> {
        for _ in 0..2 {
            let leader = match self.leader.clone() {
                Some(l) => l,
                None => match self.find_leader(broker).await {
                    Some(l) => l,
                    None => return Err("no controller leader reachable".into()),
                },
            };
            let mut req = request.clone();
            req.opaque = vostok_remoting::command::next_opaque();
            match broker
                .namesrv
                .client
                .invoke_sync(&leader, req, TIMEOUT)
                .await
            {
                Ok(resp) if resp.code == response_code::CONTROLLER_NOT_LEADER => {
                    self.leader = None;
                }
                Ok(resp) => return Ok(resp),
                Err(e) => {
                    debug!(controller = %leader, error = %e, "controller call failed");
                    self.leader = None;
                }
            }
        }
        Err("the controllers did not answer".into())
    }
}

/// BROKER_HEARTBEAT to every controller; true when at least one took it.
pub(crate) async fn heartbeat_all(broker: &Broker, header: &BrokerHeartbeatRequestHeader) -> bool {
    // A heartbeat older than the next one is worth nothing: bounded by the interval.
    let timeout = broker
        .config
        .controller
        .broker_heartbeat_interval
        .clamp(Duration::from_secs(1), TIMEOUT);
    let calls = broker.config.controller.controller_addr.iter().map(|addr| {
        let req = RemotingCommand::request_with_header(request_code::BROKER_HEARTBEAT, header);
        async move { broker.namesrv.client.invoke_sync(addr, req, timeout).await }
    });
    join_all(calls)
        .await
        .iter()
        .any(|r| matches!(r, Ok(resp) if resp.code == response_code::SUCCESS))
}
