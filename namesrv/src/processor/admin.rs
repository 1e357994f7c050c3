//! Requests operator tools send: topic listings and deletion, broker write permission, the
//! name server's config (docs/wire.md#request-codes,
//! docs/commands.md#name-server-commands).

use std::sync::LazyLock;

use tracing::info;
use vostok_remoting::protocol::header::{
    AddWritePermOfBrokerResponseHeader, BrokerPermRequestHeader,
    DeleteTopicFromNamesrvRequestHeader, GetTopicsByClusterRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
};
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::{Channel, RemotingCommand};

use super::{error, header, json_body, Reply, Shared};

/// What Java answers when a listing is switched off by config.
fn disabled() -> RemotingCommand {
    error(response_code::SYSTEM_ERROR, "disable")
}

pub(super) fn get_all_topic_list(s: &Shared) -> Reply {
    if !s.live.read_locked().enable_all_topic_list {
        return Err(disabled());
    }
    Ok(json_body(&s.route.all_topic_list()))
}

pub(super) fn get_topics_by_cluster(s: &Shared, request: &RemotingCommand) -> Reply {
    if !s.live.read_locked().enable_topic_list {
        return Err(disabled());
    }
    let h: GetTopicsByClusterRequestHeader = header(request)?;
    Ok(json_body(&s.route.topics_by_cluster(&h.cluster)))
}

pub(super) fn get_system_topic_list(s: &Shared) -> Reply {
    Ok(json_body(&s.route.system_topic_list()))
}

pub(super) fn get_unit_topic_list(s: &Shared, request: &RemotingCommand) -> Reply {
    if !s.live.read_locked().enable_topic_list {
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
    Ok(
        RemotingCommand::success()
            .with_body(s.live.read_locked().to_properties_text().into_bytes()),
    )
}

/// The keys UPDATE_NAMESRV_CONFIG changes at run time: those the name server's key
/// table (`config::KEYS`) marks `at_run_time`, which the request handlers read on each
/// request. The rest (ports, paths, ACL, TLS, housekeeping periods) are read once at
/// start. The embedded controller's run-time keys are not among them: they change
/// through UPDATE_CONTROLLER_CONFIG at the controller's address.
pub(super) static RUNTIME_KEYS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| crate::config::KEYS.run_time_names());

/// UPDATE_NAMESRV_CONFIG (318, docs/commands.md#name-server-configuration): the body
/// is `.properties` text; every key must be one of [`RUNTIME_KEYS`] with a valid
/// value, then all apply at once. Changes last until the name server stops.
pub(super) fn update_namesrv_config(s: &Shared, request: &RemotingCommand) -> Reply {
    let changes =
        vostok_remoting::support::properties::parse(&String::from_utf8_lossy(&request.body));
    if changes.is_empty() {
        return Err(error(
            response_code::SYSTEM_ERROR,
            "no config in the request body",
        ));
    }
    let mut live = s.live.write_locked();
    let mut next = live.clone();
    for (key, value) in &changes {
        if !RUNTIME_KEYS.contains(&key.as_str()) {
            return Err(error(
                response_code::INVALID_PARAMETER,
                format!(
                    "{key} is read at start only (set it in namesrv.conf and restart); keys that change at run time: {}",
                    RUNTIME_KEYS.join(", ")
                ),
            ));
        }
        if let Err(e) = next.apply_property(key, value) {
            return Err(error(response_code::INVALID_PARAMETER, e.to_string()));
        }
    }
    *live = next;
    info!(changes = ?changes, "name server config updated at run time");
    Ok(RemotingCommand::success())
}
