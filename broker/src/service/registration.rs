//! Registration with the name servers (`BrokerOuterAPI`,
//! docs/flows.md#broker-registration): with every name server in parallel, at start, every
//! `registerNameServerPeriod`, and at once when the topic table changes; unregistration on
//! clean shutdown. It runs on the duties runtime (`Broker::duties`), as do the
//! name-server connections, so no request flood can make it miss its period.
//!
//! A topic table whose registration would not fit one frame (or has more than
//! `splitRegistrationSize` topics, with `enableSplitRegistration`) is registered in
//! parts, one request each: a broker stays registered whatever its topic count.

use std::sync::Arc;

use futures_util::future::join_all;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::body::RegisterBrokerBody;
use vostok_remoting::protocol::header::{
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, UnRegisterBrokerRequestHeader,
};
use vostok_remoting::protocol::message::record::crc32;
use vostok_remoting::protocol::topic::perm;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::RemotingCommand;

use crate::state::Broker;

/// Starts the periodic registration (the first one is done by start-up, before
/// the broker reports itself started).
pub(crate) fn spawn(broker: &Arc<Broker>) {
    let b = broker.clone();
    broker
        .life
        .tasks
        .spawn_on(async move { run(b).await }, &broker.life.duties);
}

/// Registers periodically and on topic changes until shutdown.
async fn run(broker: Arc<Broker>) {
    // Clamped like RocketMQ: between 10 s and 60 s.
    let period = broker.config.register_name_server_period.clamp(
        std::time::Duration::from_secs(10),
        std::time::Duration::from_secs(60),
    );
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = broker.storage.topics.changed() => debug!("topic table changed; registering"),
            _ = broker.life.shutdown.cancelled() => break,
        }
        register_all(&broker).await;
    }
}

/// Most bytes of one REGISTER_BROKER body: half the 16 MiB frame RocketMQ's name servers
/// (and Vostok's) accept by default, leaving room for the header. A larger topic table
/// is registered in parts.
const MAX_REGISTER_BODY: usize = 8 << 20;

/// The REGISTER_BROKER requests of one round: one, or one per part of the topic
/// table (`RegisterBrokerBody::encode_parts`), each a registration the name server
/// applies on its own, as it does RocketMQ's split registrations.
fn register_requests(broker: &Broker) -> Vec<RemotingCommand> {
    let config = &broker.config;
    let mut wrapper = broker.storage.topics.wrapper();
    // A broker without write (or read) permission registers its topics without it,
    // so that clients send (or pull) elsewhere, as RocketMQ's registerBrokerAll does.
    let permission = broker.runtime.broker_permission();
    if !perm::is_writeable(permission) || !perm::is_readable(permission) {
        for topic in wrapper.topic_config_table.values_mut() {
            topic.perm &= permission;
        }
    }
    let max_topics = if config.enable_split_registration {
        config.split_registration_size
    } else {
        usize::MAX
    };
    let parts = RegisterBrokerBody::encode_parts(
        &wrapper,
        max_topics,
        MAX_REGISTER_BODY,
        config.compressed_register,
    );
    let header = RegisterBrokerRequestHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: broker.broker_addr.to_string(),
        cluster_name: config.broker_cluster_name.clone(),
        // `brokerIP2:haListenPort` while the HA listener runs (masters), else empty.
        ha_server_addr: broker.roles.ha_server_addr.read_locked().clone(),
        broker_id: broker.registered_broker_id(),
        heartbeat_timeout_millis: Some(config.channel_expired_timeout.as_millis() as i64),
        enable_acting_master: Some(false),
        compressed: Some(config.compressed_register),
        body_crc32: None,
    };
    parts
        .into_iter()
        .map(|bytes| {
            let header = RegisterBrokerRequestHeader {
                body_crc32: Some(crc32(&bytes) as i32),
                ..header.clone()
            };
            RemotingCommand::request_with_header(request_code::REGISTER_BROKER, &header)
                .with_body(bytes)
        })
        .collect()
}

/// One registration round with every name server, run on the duties runtime.
pub(crate) async fn register_now(broker: &Arc<Broker>) {
    let b = broker.clone();
    let round = broker
        .life
        .duties
        .spawn(async move { register_all(&b).await });
    if let Err(e) = round.await {
        warn!(error = %e, "registration round did not finish");
    }
}

/// One registration round with every name server.
pub(crate) async fn register_all(broker: &Broker) {
    let unregistered = broker.namesrv.registration.lock().await;
    if *unregistered {
        return;
    }
    let requests = register_requests(broker);
    if requests.len() > 1 {
        debug!(
            parts = requests.len(),
            "registering the topic table in parts"
        );
    }
    let calls = broker
        .namesrv
        .addrs
        .iter()
        .map(|addr| register_with(broker, addr, &requests));
    join_all(calls).await;
}

/// Sends the round's requests to one name server, in order; a part refused does not
/// stop the others, a name server out of reach does.
async fn register_with(broker: &Broker, addr: &str, requests: &[RemotingCommand]) {
    let timeout = broker.config.register_broker_timeout;
    let parts = requests.len();
    let mut accepted = 0;
    for (part, request) in requests.iter().enumerate() {
        let mut request = request.clone();
        request.opaque = vostok_remoting::command::next_opaque();
        match broker
            .namesrv
            .client
            .invoke_sync(addr, request, timeout)
            .await
        {
            Ok(response) if response.code == response_code::SUCCESS => {
                accepted += 1;
                if accepted == 1 {
                    if let Ok(header) = response.decode_header::<RegisterBrokerResponseHeader>() {
                        learn_master(broker, header);
                    }
                }
            }
            Ok(response) => {
                warn!(namesrv = %addr, part, parts, code = response.code, remark = response.remark(), "registration refused")
            }
            Err(e) => {
                warn!(namesrv = %addr, part, parts, error = %e, "registration failed");
                return;
            }
        }
    }
    if accepted == parts {
        debug!(namesrv = %addr, parts, "registered");
        broker
            .observed
            .stats
            .registrations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A slave learns where its master is from the name server's answer
/// (docs/replication.md): the main address for the
/// metadata sync, the HA address for the replication client.
fn learn_master(broker: &Broker, header: RegisterBrokerResponseHeader) {
    // In controller mode the controllers say who the master is.
    if broker.is_master() || broker.config.controller.enable {
        return;
    }
    if let Some(master) = header.master_addr.filter(|m| !m.is_empty()) {
        let mut current = broker.roles.master_addr.write_locked();
        if current.as_deref() != Some(master.as_str()) {
            info!(master = %master, "master address from name server");
            *current = Some(master);
            broker.roles.master_changed.notify_waiters();
        }
    }
    if let (Some(ha), Some(client)) = (
        header.ha_server_addr.filter(|a| !a.is_empty()),
        broker.roles.ha_client.get(),
    ) {
        client.update_master(&ha);
    }
}

/// Unregisters from every name server (clean shutdown); registration stops for good.
pub(crate) async fn unregister_all(broker: &Broker) {
    let mut unregistered = broker.namesrv.registration.lock().await;
    *unregistered = true;
    let config = &broker.config;
    let header = UnRegisterBrokerRequestHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: broker.broker_addr.to_string(),
        cluster_name: config.broker_cluster_name.clone(),
        broker_id: broker.registered_broker_id(),
    };
    let calls = broker.namesrv.addrs.iter().map(|addr| {
        let request =
            RemotingCommand::request_with_header(request_code::UNREGISTER_BROKER, &header);
        async move {
            (
                addr,
                broker
                    .namesrv
                    .client
                    .invoke_sync(addr, request, std::time::Duration::from_secs(3))
                    .await,
            )
        }
    });
    for (addr, result) in join_all(calls).await {
        if let Err(e) = result {
            warn!(namesrv = %addr, error = %e, "unregistration failed");
        }
    }
}
