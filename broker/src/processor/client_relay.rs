//! Requests the broker passes on to one client of a consumer group and whose answer it
//! returns as is (Apache's `AdminBrokerProcessor.callConsumer`): GET_CONSUMER_RUNNING_INFO
//! (307, `mqadmin consumerStatus`), docs/commands.md#broker-to-client-requests.

use std::time::Duration;

use tracing::debug;
use vostok_remoting::protocol::header::GetConsumerRunningInfoRequestHeader;
use vostok_remoting::protocol::response_code;
use vostok_remoting::RemotingCommand;

use super::{decode_header, error};
use crate::state::Broker;

/// How long the client has to answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// GET_CONSUMER_RUNNING_INFO: asks client `clientId` of `consumerGroup` on its
/// connection to this broker; a client not connected here is SYSTEM_ERROR, one that
/// does not answer in time CONSUME_MSG_TIMEOUT.
pub(crate) async fn get_consumer_running_info(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, GetConsumerRunningInfoRequestHeader);
    let channel = broker
        .clients
        .consumer_group(&header.consumer_group)
        .and_then(|g| {
            g.channels
                .into_values()
                .find(|c| c.client_id == header.client_id)
        })
        .map(|c| c.channel);
    let Some(channel) = channel else {
        return error(
            response_code::SYSTEM_ERROR,
            format!(
                "The Consumer <{}> <{}> not online",
                header.consumer_group, header.client_id
            ),
        );
    };
    let relay = RemotingCommand::request_with_header(request.code, &header);
    match channel.invoke(relay, CLIENT_TIMEOUT).await {
        Ok(answer) => answer,
        Err(e) => {
            debug!(client = %header.client_id, error = %e, "consumer running info not answered");
            error(
                response_code::CONSUME_MSG_TIMEOUT,
                format!(
                    "consumer <{}> <{}> Timeout: {e}",
                    header.consumer_group, header.client_id
                ),
            )
        }
    }
}
