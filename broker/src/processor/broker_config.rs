//! UPDATE_BROKER_CONFIG (25, `mqadmin updateBrokerConfig`,
//! docs/commands.md#broker-configuration): the body is `.properties` text; the keys
//! that change at run time (`state::runtime_config`) are applied at once, all or none.
//! A change of `brokerPermission` re-registers the broker with the name servers, so
//! routes show it.

use tracing::info;
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::properties;
use vostok_remoting::RemotingCommand;

use super::error;
use crate::state::Broker;

pub(crate) fn update_broker_config(broker: &Broker, request: RemotingCommand) -> RemotingCommand {
    let text = String::from_utf8_lossy(&request.body);
    let changes = properties::parse(&text);
    if changes.is_empty() {
        return error(response_code::SYSTEM_ERROR, "no config in the request body");
    }
    let before = broker.runtime.broker_permission();
    if let Err(reason) = broker.runtime.apply(&broker.config, &changes) {
        return error(response_code::INVALID_PARAMETER, reason);
    }
    info!(changes = ?changes, "broker config updated at run time");
    broker
        .consumers
        .subscriptions
        .set_auto_create(broker.runtime.auto_create_subscription_group());
    if broker.runtime.broker_permission() != before {
        broker.storage.topics.bump_version();
    }
    RemotingCommand::success()
}
