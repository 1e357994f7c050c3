//! Requests operator tools send: topic listings and deletion, broker write permission, the
//! name server's config (docs/wire.md#request-codes,
//! docs/commands.md#name-server-commands).

use tracing::info;
use vostok_remoting::protocol::header::{
    AddWritePermOfBrokerResponseHeader, BrokerPermRequestHeader,
    DeleteTopicFromNamesrvRequestHeader, GetTopicsByClusterRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
};
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::{Channel, RemotingCommand};

use super::{error, header, json_body, Reply, Shared};

/// What Java answers when a listing is switched off by config.
fn disabled() -> RemotingCommand {
    error(response_code::SYSTEM_ERROR, "disable")
}

pub(super) fn get_all_topic_list(s: &Shared) -> Reply {
    if !s.config.enable_all_topic_list {
        return Err(disabled());
    }
    Ok(json_body(&s.route.all_topic_list()))
}

pub(super) fn get_topics_by_cluster(s: &Shared, request: &RemotingCommand) -> Reply {
    if !s.config.enable_topic_list {
        return Err(disabled());
    }
    let h: GetTopicsByClusterRequestHeader = header(request)?;
    Ok(json_body(&s.route.topics_by_cluster(&h.cluster)))
}

pub(super) fn get_system_topic_list(s: &Shared) -> Reply {
    Ok(json_body(&s.route.system_topic_list()))
}

pub(super) fn get_unit_topic_list(s: &Shared, request: &RemotingCommand) -> Reply {
    if !s.config.enable_topic_list {
        return Err(disabled());
    }
    let list = match request.code {
        code::GET_UNIT_TOPIC_LIST => s.route.unit_topics(),
        code::GET_HAS_UNIT_SUB_TOPIC_LIST => s.route.has_unit_sub_topics(),
        _ => s.route.has_unit_sub_ununit_topics(),
    };
    Ok(json_body(&list))
}

pub(super) fn delete_topic(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: DeleteTopicFromNamesrvRequestHeader = header(request)?;
    let cluster = h.cluster_name.as_deref().filter(|c| !c.is_empty());
    let removed = s.route.delete_topic(&h.topic, cluster);
    info!(topic = %h.topic, cluster = ?cluster, removed, "topic deleted from routes");
    Ok(RemotingCommand::success())
}

pub(super) fn wipe_write_perm(s: &Shared, channel: &Channel, request: &RemotingCommand) -> Reply {
    let h: BrokerPermRequestHeader = header(request)?;
    let count = s.route.wipe_write_perm_of_broker(&h.broker_name);
    info!(broker_name = %h.broker_name, client = %channel.peer_addr(), topics = count, "write permission of broker wiped");
    Ok(
        RemotingCommand::success().with_header(&WipeWritePermOfBrokerResponseHeader {
            wipe_topic_count: count,
        }),
    )
}

pub(super) fn add_write_perm(s: &Shared, channel: &Channel, request: &RemotingCommand) -> Reply {
    let h: BrokerPermRequestHeader = header(request)?;
    let count = s.route.add_write_perm_of_broker(&h.broker_name);
    info!(broker_name = %h.broker_name, client = %channel.peer_addr(), topics = count, "write permission of broker added");
    Ok(
        RemotingCommand::success().with_header(&AddWritePermOfBrokerResponseHeader {
            add_topic_count: count,
        }),
    )
}

/// The effective config as `.properties` text, as `mqadmin getNamesrvConfig` prints.
pub(super) fn get_namesrv_config(s: &Shared) -> Reply {
    Ok(RemotingCommand::success().with_body(s.config.to_properties_text().into_bytes()))
}
