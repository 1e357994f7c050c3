//! Removing brokers and topics, and changing permissions
//! (docs/flows.md#expiry-and-removal).
//!
//! A broker leaves by UNREGISTER_BROKER, by its connection closing, or by staying
//! silent past its heartbeat timeout; all three end in [`unregister_locked`]. When the
//! last address of a broker name goes, the name leaves its cluster and its queues
//! leave every topic; a topic left without queues disappears. When only the master
//! goes, the slaves keep the broker name and its queues (consumers can still read).

use std::time::{Duration, Instant};

use tracing::{debug, info, warn};
use vostok_remoting::protocol::topic::{perm, MASTER_ID};
use vostok_remoting::Channel;

use super::{BrokerAddrInfo, RouteInfoManager, RouteTables};

/// A broker dropped for silence: its connection is for the caller to close (outside
/// the table lock).
#[derive(Debug, Clone)]
pub struct ExpiredBroker {
    pub addr: BrokerAddrInfo,
    pub broker_name: String,
    pub silent_for: Duration,
    pub channel: Option<Channel>,
}

impl RouteInfoManager {
    /// UNREGISTER_BROKER: removes one broker address. `false` if it was not live.
    pub fn unregister_broker(
        &self,
        cluster_name: &str,
        broker_addr: &str,
        broker_name: &str,
    ) -> bool {
        let mut tables = self.write();
        unregister_locked(&mut tables, cluster_name, broker_addr, broker_name)
    }

    /// A connection closed: drops every broker that registered over it, at once.
    /// Returns what was removed. Cheap for connections of clients (no write lock).
    pub fn on_channel_destroy(&self, channel_id: u64) -> Vec<BrokerAddrInfo> {
        let registered_here = |tables: &RouteTables| -> Vec<BrokerAddrInfo> {
            tables
                .broker_live_table
                .iter()
                .filter(|(_, live)| live.channel.as_ref().map(Channel::id) == Some(channel_id))
                .map(|(addr, _)| addr.clone())
                .collect()
        };
        if registered_here(&self.read()).is_empty() {
            return Vec::new();
        }
        let mut tables = self.write();
        // Looked up again: the broker may have re-registered on a new connection
        // between the two locks, and then it stays.
        let found = registered_here(&tables);
        for addr in &found {
            let broker_name = tables
                .broker_live_table
                .get(addr)
                .map(|live| live.broker_name.clone())
                .unwrap_or_default();
            info!(cluster = %addr.cluster_name, addr = %addr.broker_addr, broker_name = %broker_name, "broker connection closed; removing its routes");
            unregister_locked(
                &mut tables,
                &addr.cluster_name,
                &addr.broker_addr,
                &broker_name,
            );
        }
        found
    }

    /// Drops every broker silent longer than its heartbeat timeout at `now`
    /// (`scanNotActiveBroker`). The caller closes the returned connections.
    pub fn scan_not_active_brokers(&self, now: Instant) -> Vec<ExpiredBroker> {
        let any_expired = self
            .read()
            .broker_live_table
            .values()
            .any(|live| live.is_expired(now));
        if !any_expired {
            return Vec::new();
        }
        let mut tables = self.write();
        let expired: Vec<BrokerAddrInfo> = tables
            .broker_live_table
            .iter()
            .filter(|(_, live)| live.is_expired(now))
            .map(|(addr, _)| addr.clone())
            .collect();
        let mut out = Vec::with_capacity(expired.len());
        for addr in expired {
            let Some(live) = tables.broker_live_table.get(&addr).cloned() else {
                continue;
            };
            let silent_for = now.saturating_duration_since(live.last_update);
            warn!(
                cluster = %addr.cluster_name,
                addr = %addr.broker_addr,
                broker_name = %live.broker_name,
                silent_ms = silent_for.as_millis() as u64,
                timeout_ms = live.heartbeat_timeout.as_millis() as u64,
                "broker expired"
            );
            unregister_locked(
                &mut tables,
                &addr.cluster_name,
                &addr.broker_addr,
                &live.broker_name,
            );
            out.push(ExpiredBroker {
                addr,
                broker_name: live.broker_name,
                silent_for,
                channel: live.channel,
            });
        }
        out
    }

    /// DELETE_TOPIC_IN_NAMESRV: the whole topic, or only its queues on the brokers of
    /// `cluster_name`. `false` if nothing was removed.
    pub fn delete_topic(&self, topic: &str, cluster_name: Option<&str>) -> bool {
        let mut guard = self.write();
        let tables = &mut *guard;
        let Some(cluster) = cluster_name else {
            return tables.topic_queue_table.remove(topic).is_some();
        };
        let Some(names) = tables.cluster_addr_table.get(cluster) else {
            return false;
        };
        let Some(queues) = tables.topic_queue_table.get_mut(topic) else {
            return false;
        };
        let before = queues.len();
        queues.retain(|name, _| !names.contains(name));
        let removed = queues.len() != before;
        if queues.is_empty() {
            tables.topic_queue_table.remove(topic);
        }
        removed
    }

    /// WIPE_WRITE_PERM_OF_BROKER: the broker name's queues become read-only in every
    /// topic (to drain a broker before maintenance). Returns the topics changed.
    pub fn wipe_write_perm_of_broker(&self, broker_name: &str) -> i32 {
        self.change_perm_of_broker(broker_name, |p| p & !perm::WRITE)
    }

    /// ADD_WRITE_PERM_OF_BROKER: the broker name's queues become read-write again.
    pub fn add_write_perm_of_broker(&self, broker_name: &str) -> i32 {
        // Java sets exactly READ|WRITE here, dropping other bits; kept for parity.
        self.change_perm_of_broker(broker_name, |_| perm::READ | perm::WRITE)
    }

    fn change_perm_of_broker(&self, broker_name: &str, change: impl Fn(i32) -> i32) -> i32 {
        let mut tables = self.write();
        let mut count = 0i32;
        for queues in tables.topic_queue_table.values_mut() {
            if let Some(qd) = queues.get_mut(broker_name) {
                qd.perm = change(qd.perm);
                count = count.saturating_add(1);
            }
        }
        count
    }
}

/// Removes one broker address from every table (`unRegisterBroker`). `false` if it
/// was not live.
pub(super) fn unregister_locked(
    tables: &mut RouteTables,
    cluster_name: &str,
    broker_addr: &str,
    broker_name: &str,
) -> bool {
    let was_live = tables
        .broker_live_table
        .remove(&BrokerAddrInfo::new(cluster_name, broker_addr))
        .is_some();
    let mut name_gone = None;
    let mut acting_master_without_master = false;
    if let Some(data) = tables.broker_addr_table.get_mut(broker_name) {
        data.broker_addrs.retain(|_, addr| addr != broker_addr);
        if data.broker_addrs.is_empty() {
            // The cluster the name is listed under, which is authoritative over
            // the one in the request.
            name_gone = tables
                .broker_addr_table
                .remove(broker_name)
                .map(|data| data.cluster);
        } else {
            acting_master_without_master =
                data.enable_acting_master && !data.broker_addrs.contains_key(&MASTER_ID);
        }
    }
    if let Some(cluster) = name_gone {
        if let Some(names) = tables.cluster_addr_table.get_mut(&cluster) {
            names.remove(broker_name);
            if names.is_empty() {
                tables.cluster_addr_table.remove(&cluster);
                info!(cluster = %cluster, "last broker of the cluster gone");
            }
        }
        let mut topics_gone = 0usize;
        tables.topic_queue_table.retain(|topic, queues| {
            queues.remove(broker_name);
            if queues.is_empty() {
                debug!(topic = %topic, "last broker of the topic gone; topic removed");
                topics_gone += 1;
            }
            !queues.is_empty()
        });
        info!(broker_name, cluster = %cluster, topics_gone, "broker name removed");
    } else if acting_master_without_master {
        // The master left and slaves act for it: nobody may write.
        for queues in tables.topic_queue_table.values_mut() {
            if let Some(qd) = queues.get_mut(broker_name) {
                qd.perm &= !perm::WRITE;
            }
        }
    }
    info!(
        cluster = cluster_name,
        addr = broker_addr,
        broker_name,
        was_live,
        "broker unregistered"
    );
    was_live
}
