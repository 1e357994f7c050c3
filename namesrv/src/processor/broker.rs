//! Requests brokers send: REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT,
//! QUERY_DATA_VERSION, REGISTER_TOPIC_IN_NAMESRV (docs/commands.md#name-server-commands,
//! docs/bodies.md#registerbrokerbody-and-topicconfig, docs/flows.md#broker-registration).

use std::time::Duration;

use tracing::{debug, warn};
use vostok_remoting::protocol::body::{
    DataVersion, KvTable, RegisterBrokerBody, TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::header::{
    BrokerHeartbeatRequestHeader, QueryDataVersionRequestHeader, QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, TopicRequestHeader,
    UnRegisterBrokerRequestHeader,
};
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::{json, response_code, version};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::monotonic;
use vostok_remoting::{Channel, RemotingCommand};

use super::{error, header, non_empty, Reply, Shared};
use crate::kv_config::NAMESPACE_ORDER_TOPIC_CONFIG;
use crate::route::BrokerRegistration;

/// Ext field of the 5.x zone (`MixAll.ZONE_NAME`), outside the typed header.
const ZONE_NAME: &str = "__ZONE_NAME";

/// First byte of a zlib stream with a 32 KiB window (every `Deflater`'s).
const ZLIB_CMF: u8 = 0x78;

/// `UtilAll.crc32`: CRC32 masked to a non-negative int.
fn body_crc32(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

pub(super) fn register_broker(s: &Shared, channel: &Channel, request: &RemotingCommand) -> Reply {
    let h: RegisterBrokerRequestHeader = header(request)?;
    non_empty(request, "clusterName", &h.cluster_name)?;
    non_empty(request, "brokerName", &h.broker_name)?;
    non_empty(request, "brokerAddr", &h.broker_addr)?;
    if let Some(expected) = h.body_crc32.filter(|&crc| crc != 0) {
        let actual = body_crc32(&request.body);
        if actual != expected {
            warn!(broker_addr = %h.broker_addr, expected, actual, "REGISTER_BROKER body crc32 mismatch");
            return Err(error(response_code::SYSTEM_ERROR, "crc32 not match"));
        }
    }
    // RocketMQ 5 brokers with `compressedRegister` send the zlib form but leave the
    // header's `compressed` false (its own name server then cannot read it): a JSON
    // body starts with `{`, a zlib stream with 0x78, so the body says which it is.
    let compressed = h.compressed.unwrap_or(false) || request.body.first() == Some(&ZLIB_CMF);
    let wrapper = if request.body.is_empty() {
        TopicConfigSerializeWrapper::default()
    } else if request.version >= version::V3_0_11 {
        RegisterBrokerBody::decode(&request.body, compressed)
            .map_err(|e| {
                warn!(broker_addr = %h.broker_addr, compressed, error = %e, "undecodable REGISTER_BROKER body");
                error(
                    response_code::SYSTEM_ERROR,
                    format!("Failed to decode RegisterBrokerBody: {e}"),
                )
            })?
            .topic_config_serialize_wrapper
    } else {
        // Brokers before 3.0.11 sent the topic table alone.
        json::from_slice("TopicConfigSerializeWrapper", &request.body).map_err(|e| {
            error(
                response_code::SYSTEM_ERROR,
                format!("Failed to decode TopicConfigSerializeWrapper: {e}"),
            )
        })?
    };
    debug!(
        cluster = %h.cluster_name,
        broker_name = %h.broker_name,
        broker_id = h.broker_id,
        addr = %h.broker_addr,
        topics = wrapper.topic_config_table.len(),
        data_version = ?wrapper.data_version,
        "register broker"
    );
    let registration = BrokerRegistration {
        zone_name: request
            .ext_fields
            .get(ZONE_NAME)
            .filter(|z| !z.is_empty())
            .map(str::to_owned),
        heartbeat_timeout: h
            .heartbeat_timeout_millis
            .and_then(|ms| u64::try_from(ms).ok())
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis),
        enable_acting_master: h.enable_acting_master,
        cluster_name: h.cluster_name,
        broker_addr: h.broker_addr,
        broker_name: h.broker_name,
        broker_id: h.broker_id,
        ha_server_addr: h.ha_server_addr,
        topic_config_wrapper: wrapper,
        channel: Some(channel.clone()),
    };
    let result = s.route.register_broker(registration, monotonic());
    // Closing it would drop the broker's routes: never chosen to make room for
    // another connection.
    channel.protect();
    if channel.is_closed() {
        // The connection closed while this registration was being applied, possibly
        // after its close was handled: drop the broker now rather than at expiry.
        s.route.on_channel_destroy(channel.id());
    }
    let mut response = RemotingCommand::success().with_header(&RegisterBrokerResponseHeader {
        ha_server_addr: result.ha_server_addr,
        master_addr: result.master_addr,
    });
    if s.live.read_locked().return_order_topic_config_to_broker {
        if let Some(table) = s.kv.list(NAMESPACE_ORDER_TOPIC_CONFIG) {
            response = response.with_body(json::to_vec(&KvTable { table }));
        }
    }
    Ok(response)
}

pub(super) fn unregister_broker(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: UnRegisterBrokerRequestHeader = header(request)?;
    s.route
        .unregister_broker(&h.cluster_name, &h.broker_addr, &h.broker_name);
    Ok(RemotingCommand::success())
}

pub(super) fn broker_heartbeat(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: BrokerHeartbeatRequestHeader = header(request)?;
    let known =
        s.route
            .update_broker_info_update_timestamp(&h.cluster_name, &h.broker_addr, monotonic());
    if !known {
        debug!(cluster = %h.cluster_name, addr = %h.broker_addr, "heartbeat from a broker that is not registered");
    }
    Ok(RemotingCommand::success())
}

/// The broker asks whether its topic table changed since its last registration
/// (it then registers in full); the answer also counts as a heartbeat.
pub(super) fn query_data_version(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: QueryDataVersionRequestHeader = header(request)?;
    let changed = if request.body.is_empty() {
        true
    } else {
        let version: DataVersion = json::from_slice("DataVersion", &request.body).map_err(|e| {
            error(
                response_code::SYSTEM_ERROR,
                format!("bad QUERY_DATA_VERSION body: {e}"),
            )
        })?;
        s.route
            .is_broker_topic_config_changed(&h.cluster_name, &h.broker_addr, &version)
    };
    s.route
        .update_broker_info_update_timestamp(&h.cluster_name, &h.broker_addr, monotonic());
    let mut response =
        RemotingCommand::success().with_header(&QueryDataVersionResponseHeader { changed });
    if let Some(known) = s.route.query_data_version(&h.cluster_name, &h.broker_addr) {
        response = response.with_body(json::to_vec(&known));
    }
    Ok(response)
}

/// REGISTER_TOPIC_IN_NAMESRV: one topic's queues, body a TopicRouteData.
pub(super) fn register_topic(s: &Shared, request: &RemotingCommand) -> Reply {
    let h: TopicRequestHeader = header(request)?;
    let route = TopicRouteData::decode(&request.body).map_err(|e| {
        error(
            response_code::SYSTEM_ERROR,
            format!("bad REGISTER_TOPIC_IN_NAMESRV body: {e}"),
        )
    })?;
    s.route.register_topic(&h.topic, route.queue_datas);
    Ok(RemotingCommand::success())
}
