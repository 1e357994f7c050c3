//! Adding brokers and topics, and refreshing liveness (docs/flows.md#broker-registration).

use std::collections::BTreeMap;
use std::time::Instant;

use tracing::{debug, info, warn};
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::route::{BrokerData, QueueData};
use vostok_remoting::protocol::topic::{perm, MASTER_ID};

use super::{
    BrokerAddrInfo, BrokerLiveInfo, BrokerRegistration, RegisterBrokerResult, RouteInfoManager,
};

impl RouteInfoManager {
    /// REGISTER_BROKER (`RouteInfoManager.registerBroker`, 5.x semantics):
    ///
    /// 1. the broker name joins its cluster; its `BrokerData` gets this id → address,
    ///    after dropping any other id with the same address (a slave promoted to
    ///    master re-registers as id 0 from the same address);
    /// 2. a master (or, for 5.x brokers, the lowest id left when the master is gone)
    ///    has its topics read into the route table when it registers first, when its
    ///    DataVersion changed, or for each topic the table does not list under it yet;
    /// 3. the live entry is stamped with `now`;
    /// 4. a slave learns its master's address and HA address if the master is live.
    pub fn register_broker(&self, reg: BrokerRegistration, now: Instant) -> RegisterBrokerResult {
        let mut guard = self.write();
        let tables = &mut *guard;
        let addr_info = BrokerAddrInfo::new(&reg.cluster_name, &reg.broker_addr);
        let data_version = &reg.topic_config_wrapper.data_version;

        tables
            .cluster_addr_table
            .entry(reg.cluster_name.clone())
            .or_default()
            .insert(reg.broker_name.clone());

        let mut register_first = false;
        let broker_data = tables
            .broker_addr_table
            .entry(reg.broker_name.clone())
            .or_insert_with(|| {
                register_first = true;
                BrokerData {
                    broker_addrs: BTreeMap::new(),
                    broker_name: reg.broker_name.clone(),
                    cluster: reg.cluster_name.clone(),
                    enable_acting_master: false,
                    zone_name: None,
                }
            });
        if broker_data.cluster != reg.cluster_name {
            // A broker name belongs to one cluster: it moved (Java would leave it
            // listed under both).
            warn!(broker_name = %reg.broker_name, from = %broker_data.cluster, to = %reg.cluster_name, "broker name moved to another cluster");
            let old_cluster = std::mem::replace(&mut broker_data.cluster, reg.cluster_name.clone());
            if let Some(names) = tables.cluster_addr_table.get_mut(&old_cluster) {
                names.remove(&reg.broker_name);
                if names.is_empty() {
                    tables.cluster_addr_table.remove(&old_cluster);
                }
            }
        }
        let is_old_version_broker = reg.enable_acting_master.is_none();
        broker_data.enable_acting_master = reg.enable_acting_master.unwrap_or(false);
        broker_data.zone_name = reg.zone_name.clone();

        // One address holds one id.
        broker_data
            .broker_addrs
            .retain(|id, addr| *addr != reg.broker_addr || *id == reg.broker_id);

        // Two brokers claim the same id (a failover in progress): the one with the
        // newer stateVersion keeps it.
        if let Some(old_addr) = broker_data.broker_addrs.get(&reg.broker_id) {
            if *old_addr != reg.broker_addr {
                let old_key = BrokerAddrInfo::new(&reg.cluster_name, old_addr);
                if let Some(old) = tables.broker_live_table.get(&old_key) {
                    if old.data_version.state_version > data_version.state_version {
                        warn!(
                            cluster = %reg.cluster_name,
                            broker_name = %reg.broker_name,
                            broker_id = reg.broker_id,
                            old_addr = %old_addr,
                            old_state_version = old.data_version.state_version,
                            new_addr = %reg.broker_addr,
                            new_state_version = data_version.state_version,
                            "registration conflicts with a newer broker of the same id; ignored"
                        );
                        tables.broker_live_table.remove(&addr_info);
                        return RegisterBrokerResult {
                            stale: true,
                            ..Default::default()
                        };
                    }
                }
            }
        }

        let old_addr = broker_data
            .broker_addrs
            .insert(reg.broker_id, reg.broker_addr.clone());
        register_first |= old_addr.as_deref().is_none_or(str::is_empty);

        let is_master = reg.broker_id == MASTER_ID;
        let is_prime_slave = !is_old_version_broker
            && !is_master
            && broker_data.broker_addrs.keys().next() == Some(&reg.broker_id);
        let wipe_write = is_prime_slave && broker_data.enable_acting_master;

        if is_master || is_prime_slave {
            let topics = &reg.topic_config_wrapper.topic_config_table;
            if self.config.delete_topic_with_broker_registration {
                let broker_name = &reg.broker_name;
                tables.topic_queue_table.retain(|topic, queues| {
                    if !topics.contains_key(topic) && queues.remove(broker_name).is_some() {
                        info!(topic = %topic, broker_name = %broker_name, "topic no longer reported by its broker; removed");
                    }
                    !queues.is_empty()
                });
            }
            let version_changed = tables
                .broker_live_table
                .get(&addr_info)
                .is_none_or(|live| live.data_version != *data_version);
            for topic_config in topics.values() {
                if topic_config.topic_name.is_empty() {
                    warn!(broker_name = %reg.broker_name, "registered topic without a name ignored");
                    continue;
                }
                let listed = tables
                    .topic_queue_table
                    .get(&topic_config.topic_name)
                    .is_some_and(|queues| queues.contains_key(&reg.broker_name));
                if register_first || version_changed || !listed {
                    let mut queue_data = queue_data_of(&reg.broker_name, topic_config);
                    if wipe_write {
                        queue_data.perm &= !perm::WRITE;
                    }
                    put_queue_data(
                        &mut tables.topic_queue_table,
                        &topic_config.topic_name,
                        queue_data,
                    );
                }
            }
        }

        let heartbeat_timeout = reg
            .heartbeat_timeout
            .filter(|t| !t.is_zero())
            .unwrap_or(self.config.default_heartbeat_timeout);
        let previous = tables.broker_live_table.insert(
            addr_info.clone(),
            BrokerLiveInfo {
                broker_name: reg.broker_name.clone(),
                broker_id: reg.broker_id,
                last_update: now,
                heartbeat_timeout,
                data_version: data_version.clone(),
                ha_server_addr: reg.ha_server_addr.clone(),
                channel: reg.channel.clone(),
            },
        );
        if previous.is_none() {
            info!(
                cluster = %reg.cluster_name,
                broker_name = %reg.broker_name,
                broker_id = reg.broker_id,
                addr = %reg.broker_addr,
                ha_addr = %reg.ha_server_addr,
                topics = reg.topic_config_wrapper.topic_config_table.len(),
                "new broker registered"
            );
        }

        let mut result = RegisterBrokerResult::default();
        if !is_master {
            let master = tables
                .broker_addr_table
                .get(&reg.broker_name)
                .and_then(|data| data.broker_addrs.get(&MASTER_ID));
            if let Some(master_addr) = master {
                let key = BrokerAddrInfo::new(&reg.cluster_name, master_addr);
                if let Some(live) = tables.broker_live_table.get(&key) {
                    result.master_addr = Some(master_addr.clone());
                    result.ha_server_addr = Some(live.ha_server_addr.clone());
                }
            }
        }
        result
    }

    /// REGISTER_TOPIC_IN_NAMESRV (5.x `enableSingleTopicRegister`): adds or replaces
    /// queue data of one topic. Ignored when a queue names an unknown broker.
    pub fn register_topic(&self, topic: &str, queue_datas: Vec<QueueData>) -> bool {
        if topic.is_empty() || queue_datas.is_empty() {
            return false;
        }
        let mut tables = self.write();
        if let Some(unknown) = queue_datas
            .iter()
            .find(|qd| !tables.broker_addr_table.contains_key(&qd.broker_name))
        {
            warn!(topic, broker_name = %unknown.broker_name, "topic registration names an unknown broker; ignored");
            return false;
        }
        for queue_data in queue_datas {
            put_queue_data(&mut tables.topic_queue_table, topic, queue_data);
        }
        true
    }

    /// BROKER_HEARTBEAT and QUERY_DATA_VERSION: the broker is alive. `false` when it
    /// is not registered (it will register in full).
    pub fn update_broker_info_update_timestamp(
        &self,
        cluster_name: &str,
        broker_addr: &str,
        now: Instant,
    ) -> bool {
        let key = BrokerAddrInfo::new(cluster_name, broker_addr);
        match self.write().broker_live_table.get_mut(&key) {
            Some(live) => {
                live.last_update = now;
                true
            }
            None => false,
        }
    }
}

fn queue_data_of(broker_name: &str, topic: &TopicConfig) -> QueueData {
    QueueData {
        broker_name: broker_name.to_owned(),
        perm: topic.perm,
        read_queue_nums: topic.read_queue_nums,
        topic_sys_flag: topic.topic_sys_flag,
        write_queue_nums: topic.write_queue_nums,
    }
}

fn put_queue_data(
    table: &mut std::collections::HashMap<String, BTreeMap<String, QueueData>>,
    topic: &str,
    queue_data: QueueData,
) {
    let queues = match table.get_mut(topic) {
        Some(queues) => queues,
        None => {
            debug!(topic, broker_name = %queue_data.broker_name, "new topic registered");
            table.entry(topic.to_owned()).or_default()
        }
    };
    match queues.get(&queue_data.broker_name) {
        Some(existing) if *existing == queue_data => {}
        Some(existing) => {
            debug!(topic, old = ?existing, new = ?queue_data, "topic changed");
            queues.insert(queue_data.broker_name.clone(), queue_data);
        }
        None => {
            queues.insert(queue_data.broker_name.clone(), queue_data);
        }
    }
}
