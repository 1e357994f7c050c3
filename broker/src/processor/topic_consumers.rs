//! QUERY_TOPIC_CONSUME_BY_WHO (300, `mqadmin statsAll`, docs/commands.md#other-admin-requests):
//! the consumer groups of a topic here, those online subscribing to it and those with
//! offsets committed on it, as `{"groupList":[...]}`.

use std::collections::BTreeSet;

use serde::Serialize;
use vostok_remoting::protocol::header::TopicRequestHeader;
use vostok_remoting::protocol::json;
use vostok_remoting::RemotingCommand;

use super::decode_header;
use crate::state::Broker;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupList {
    group_list: BTreeSet<String>,
}

pub(crate) fn query_topic_consume_by_who(
    broker: &Broker,
    request: RemotingCommand,
) -> RemotingCommand {
    let header = decode_header!(request, TopicRequestHeader);
    let mut group_list: BTreeSet<String> = broker
        .consumers
        .clients
        .groups_subscribing(&header.topic)
        .into_iter()
        .collect();
    group_list.extend(broker.consumers.offsets.groups_of_topic(&header.topic));
    RemotingCommand::success().with_body(json::to_vec(&GroupList { group_list }))
}
