//! Requests clients send: GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO
//! (docs/commands.md#name-server-commands, docs/bodies.md#topicroutedata, #clusterinfo,
//! docs/flows.md#route-lookup).

use std::time::Duration;

use tracing::warn;
use vostok_remoting::protocol::header::GetRouteInfoRequestHeader;
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::monotonic;
use vostok_remoting::RemotingCommand;

use super::{error, header, json_body, Reply, Shared};
use crate::kv_config::NAMESPACE_ORDER_TOPIC_CONFIG;

/// The route of one topic. The body is always standard, compact JSON (quoted map
/// keys, no spaces), whatever the caller's version: Java, C++ and Go clients all
/// parse it, and the Go client's text splitting needs the absence of spaces.
pub(super) fn get_route_info_by_topic(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: GetRouteInfoRequestHeader = header(request)?;
    if s.live.read_locked().need_wait_for_service
        && monotonic().saturating_duration_since(s.started)
            < Duration::from_secs(s.live.read_locked().wait_seconds_for_service)
    {
        warn!(topic = %h.topic, "route requested before the wait for brokers ended");
        return Err(error(response_code::SYSTEM_ERROR, "name server not ready"));
    }
    let Some(mut route) = s.route.pickup_topic_route_data(&h.topic) else {
        return Err(error(
            response_code::TOPIC_NOT_EXIST,
            format!(
                "No topic route info in name server for the topic: {}",
                h.topic
            ),
        ));
    };
    if s.live.read_locked().order_message_enable {
        route.order_topic_conf = s.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, &h.topic);
    }
    Ok(json_body(&route))
}

pub(super) fn get_broker_cluster_info(s: &Shared) -> Reply {
    Ok(json_body(&s.route.cluster_info()))
}
