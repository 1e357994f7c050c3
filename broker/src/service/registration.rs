//! Registration with the name servers (`BrokerOuterAPI`,
//! docs/flows.md#broker-registration): with every name server in parallel, at start, every
//! `registerNameServerPeriod`, and at once when the topic table changes; unregistration on
//! clean shutdown. It runs on the duties runtime (`Broker::duties`), as do the
//! name-server connections, so no request flood can make it miss its period.

use std::sync::Arc;

use futures_util::future::join_all;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::body::RegisterBrokerBody;
use vostok_remoting::protocol::header::{
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, UnRegisterBrokerRequestHeader,
};
use vostok_remoting::protocol::message::record::crc32;
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::RemotingCommand;

use crate::state::Broker;

/// Starts the periodic registration (the first one is done by start-up, before
/// the broker reports itself started).
pub(crate) fn spawn(broker: &Arc<Broker>) {
    let b = broker.clone();
    broker
        .tasks
        .spawn_on(async move { run(b).await }, &broker.duties);
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
            _ = broker.topics.changed() => debug!("topic table changed; registering"),
            _ = broker.shutdown.cancelled() => break,
        }
        register_all(&broker).await;
    }
}

fn register_request(broker: &Broker) -> RemotingCommand {
    let config = &broker.config;
    let body = RegisterBrokerBody {
        filter_server_list: Vec::new(),
        topic_config_serialize_wrapper: broker.topics.wrapper(),
    };
    let bytes = if config.compressed_register {
        body.encode_compressed()
    } else {
        body.encode()
    };
    let header = RegisterBrokerRequestHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: broker.broker_addr.to_string(),
        cluster_name: config.broker_cluster_name.clone(),
        // `brokerIP2:haListenPort` while the HA listener runs (masters), else empty.
        ha_server_addr: broker.ha_server_addr.read_locked().clone(),
        broker_id: config.broker_id,
        heartbeat_timeout_millis: Some(config.channel_expired_timeout.as_millis() as i64),
        enable_acting_master: Some(false),
        compressed: Some(config.compressed_register),
        body_crc32: Some(crc32(&bytes) as i32),
    };
    RemotingCommand::request_with_header(request_code::REGISTER_BROKER, &header).with_body(bytes)
}

/// One registration round with every name server, run on the duties runtime.
pub(crate) async fn register_now(broker: &Arc<Broker>) {
    let b = broker.clone();
    let round = broker.duties.spawn(async move { register_all(&b).await });
    if let Err(e) = round.await {
        warn!(error = %e, "registration round did not finish");
    }
}

/// One registration round with every name server.
pub(crate) async fn register_all(broker: &Broker) {
    let unregistered = broker.registration.lock().await;
    if *unregistered {
        return;
    }
    let request = register_request(broker);
    let timeout = broker.config.register_broker_timeout;
    let calls = broker.namesrv_addrs.iter().map(|addr| {
        let mut request = request.clone();
        request.opaque = vostok_remoting::command::next_opaque();
        async move { (addr, broker.outer.invoke_sync(addr, request, timeout).await) }
    });
    for (addr, result) in join_all(calls).await {
        match result {
            Ok(response) if response.code == response_code::SUCCESS => {
                debug!(namesrv = %addr, "registered");
                broker
                    .stats
                    .registrations
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Ok(header) = response.decode_header::<RegisterBrokerResponseHeader>() {
                    learn_master(broker, header);
                }
            }
            Ok(response) => {
                warn!(namesrv = %addr, code = response.code, remark = response.remark(), "registration refused")
            }
            Err(e) => warn!(namesrv = %addr, error = %e, "registration failed"),
        }
    }
}

/// A slave learns where its master is from the name server's answer
/// (docs/replication.md): the main address for the
/// metadata sync, the HA address for the replication client.
fn learn_master(broker: &Broker, header: RegisterBrokerResponseHeader) {
    if broker.config.is_master() {
        return;
    }
    if let Some(master) = header.master_addr.filter(|m| !m.is_empty()) {
        let mut current = broker.master_addr.write_locked();
        if current.as_deref() != Some(master.as_str()) {
            info!(master = %master, "master address from name server");
            *current = Some(master);
            broker.master_changed.notify_waiters();
        }
    }
    if let (Some(ha), Some(client)) = (
        header.ha_server_addr.filter(|a| !a.is_empty()),
        broker.ha_client.get(),
    ) {
        client.update_master(&ha);
    }
}

/// Unregisters from every name server (clean shutdown); registration stops for good.
pub(crate) async fn unregister_all(broker: &Broker) {
    let mut unregistered = broker.registration.lock().await;
    *unregistered = true;
    let config = &broker.config;
    let header = UnRegisterBrokerRequestHeader {
        broker_name: config.broker_name.clone(),
        broker_addr: broker.broker_addr.to_string(),
        cluster_name: config.broker_cluster_name.clone(),
        broker_id: config.broker_id,
    };
    let calls = broker.namesrv_addrs.iter().map(|addr| {
        let request =
            RemotingCommand::request_with_header(request_code::UNREGISTER_BROKER, &header);
        async move {
            (
                addr,
                broker
                    .outer
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
