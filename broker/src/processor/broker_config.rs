//! UPDATE_BROKER_CONFIG (25, `mqadmin updateBrokerConfig`,
//! docs/commands.md#broker-configuration): the body is `.properties` text; the keys
//! that change at run time (`state::runtime_config`) are applied at once, all or none.
//! A change of `brokerPermission` re-registers the broker with the name servers, so
//! routes show it.

use vostok_remoting::support::properties;
use vostok_remoting::RemotingCommand;

use super::refused;
use crate::ops::broker_config as op;
use crate::state::Broker;

pub(crate) fn update_broker_config(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let text = String::from_utf8_lossy(&request.body);
    let changes = properties::parse(&text);
    match op::update_broker_config(
        &broker.config,
        &broker.runtime,
        &broker.consumers,
        &broker.storage,
        &changes,
    ) {
        Ok(()) => RemotingCommand::success(),
        Err(refusal) => refused(refusal),
    }
}
