//! NOTIFY_BROKER_ROLE_CHANGED (controller → broker, docs/controller.md#election): the
//! controller leader's notice, after an election, of the group's master, master epoch,
//! SyncStateSet and its epoch. The notice is handed to the replicas manager, which
//! applies it as it applies the answer of its own poll; a notice older than the
//! master epoch this broker knows is ignored. Accepted only in controller mode and
//! only from the host of one of `controllerAddr`'s controllers.

use std::net::IpAddr;

use tracing::{debug, warn};
use vostok_remoting::protocol::body::SyncStateSet;
use vostok_remoting::protocol::header::NotifyBrokerRoleChangedRequestHeader;
use vostok_remoting::protocol::{json, response_code};
use vostok_remoting::{Channel, RemotingCommand};

use super::error;
use crate::state::replicas::MasterInfo;
use crate::state::Broker;

/// Whether `peer` is the host of one of the configured controllers (a controller
/// named by host name cannot be checked and is trusted).
fn from_a_controller(broker: &Broker, peer: IpAddr) -> bool {
    broker.config.controller.controller_addr.iter().any(|addr| {
        let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
        host.trim_matches(['[', ']'])
            .parse::<IpAddr>()
            .map_or(true, |ip| ip == peer)
    })
}

pub(crate) fn notify_broker_role_changed(
    broker: &Broker,
    channel: &Channel,
    request: &RemotingCommand,
) -> RemotingCommand {
    if !broker.config.controller.enable {
        return error(
            response_code::REQUEST_CODE_NOT_SUPPORTED,
            "not in controller mode (enableControllerMode=false)",
        );
    }
    let peer = channel.peer_addr().ip();
    if !from_a_controller(broker, peer) {
        warn!(%peer, "role change notice from a host that is no controller; ignored");
        return error(
            response_code::NO_PERMISSION,
            format!("{peer} is not one of controllerAddr"),
        );
    }
    let h: NotifyBrokerRoleChangedRequestHeader = match request.decode_header() {
        Ok(h) => h,
        Err(e) => {
            return error(
                response_code::SYSTEM_ERROR,
                format!("bad role change notice: {e}"),
            )
        }
    };
    let (Some(master), Some(epoch)) = (h.master_broker_id, h.master_epoch) else {
        return error(
            response_code::SYSTEM_ERROR,
            "role change notice without masterBrokerId or masterEpoch",
        );
    };
    let sync_state_set = if request.body.is_empty() {
        SyncStateSet {
            sync_state_set_epoch: h.sync_state_set_epoch.unwrap_or(0),
            ..SyncStateSet::default()
        }
    } else {
        match json::from_slice::<SyncStateSet>("SyncStateSet", &request.body) {
            Ok(s) => s,
            Err(e) => {
                return error(
                    response_code::SYSTEM_ERROR,
                    format!("bad role change notice: {e}"),
                )
            }
        }
    };
    let info = MasterInfo {
        id: Some(master),
        addr: h.master_address,
        ha_addr: h.master_ha_address,
        epoch,
        sync_state_set,
    };
    if broker.roles.replicas.offer_notice(info) {
        debug!(master, epoch, "role change notice taken");
    } else {
        debug!(
            master,
            epoch,
            known = broker.roles.replicas.master_epoch(),
            "role change notice older than the known epoch; ignored"
        );
    }
    RemotingCommand::success()
}
