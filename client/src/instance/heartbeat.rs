//! HEART_BEAT (Java `MQClientInstance.sendHeartbeatToAllBroker`): the producer and
//! consumer groups of this client, with the consumers' subscriptions, to every broker
//! known (only masters when there is no consumer). Brokers route pulls, rebalances and
//! transaction checks by what the last heartbeat said.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;
use tracing::debug;
use vostok_remoting::protocol::body::{HeartbeatData, ProducerData};
use vostok_remoting::protocol::topic::CLIENT_INNER_PRODUCER_GROUP;
use vostok_remoting::support::sync::MutexExt;

use super::ClientInstance;
use crate::api;

/// Heartbeat state of an instance.
pub(super) struct Heartbeat {
    /// One round at a time.
    lock: tokio::sync::Mutex<()>,
    /// broker address → the version it stamped on its last answer.
    broker_versions: Mutex<HashMap<String, i32>>,
    /// Wakes the heartbeat task when a route brings a broker not heart-beaten yet.
    now: Arc<Notify>,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Heartbeat {
            lock: tokio::sync::Mutex::new(()),
            broker_versions: Mutex::default(),
            now: Arc::new(Notify::new()),
        }
    }
}

impl Heartbeat {
    /// Asks the heartbeat task to run now.
    pub(super) fn wake(&self) {
        self.now.notify_one();
    }

    /// What the heartbeat timer also wakes on.
    pub(super) fn waker(&self) -> Arc<Notify> {
        self.now.clone()
    }
}

impl ClientInstance {
    fn heartbeat_data(&self) -> HeartbeatData {
        let mut producer_data_set: Vec<ProducerData> = self
            .registry
            .producers()
            .iter()
            .map(|p| ProducerData {
                group_name: p.group().to_owned(),
            })
            .collect();
        if !producer_data_set
            .iter()
            .any(|p| p.group_name == CLIENT_INNER_PRODUCER_GROUP)
        {
            producer_data_set.push(ProducerData {
                group_name: CLIENT_INNER_PRODUCER_GROUP.to_owned(),
            });
        }
        HeartbeatData {
            client_id: self.client_id.clone(),
            consumer_data_set: self
                .registry
                .consumers()
                .iter()
                .map(|c| c.consumer_data())
                .collect(),
            heartbeat_fingerprint: 0,
            producer_data_set,
            without_sub: false,
        }
    }

    /// HEART_BEAT to every broker known (only masters when there is no consumer).
    pub(crate) async fn send_heartbeat_to_all_brokers(&self) {
        let _guard = self.heartbeat.lock.lock().await;
        let data = self.heartbeat_data();
        let has_consumers = !data.consumer_data_set.is_empty();
        let body = api::encode_heartbeat(&data);
        let addrs = self.routes.all_broker_addrs(!has_consumers);
        let calls = addrs.iter().map(|addr| {
            let body: Bytes = body.clone();
            async move {
                match api::heartbeat(&self.remoting, addr, body, self.api_timeout()).await {
                    Ok(version) => {
                        self.heartbeat
                            .broker_versions
                            .locked()
                            .insert(addr.clone(), version);
                    }
                    Err(e) => debug!(broker = %addr, error = %e, "heartbeat failed"),
                }
            }
        });
        futures_util::future::join_all(calls).await;
    }

    /// The version each broker stamped on its last heartbeat answer (Java keeps it to
    /// refuse SQL92 subscriptions to brokers older than 4.1).
    pub fn broker_versions(&self) -> HashMap<String, i32> {
        self.heartbeat.broker_versions.locked().clone()
    }
}
