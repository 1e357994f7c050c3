//! The route table (`RouteInfoManager`): which brokers exist, which topics they serve, and
//! which of them are alive (docs/flows.md#name-server).
//!
//! ```text
//! cluster_addr_table   cluster name  → {broker name}
//! broker_addr_table    broker name   → BrokerData {cluster, broker id → address}
//! topic_queue_table    topic         → {broker name → QueueData}
//! broker_live_table    (cluster, address) → last update, timeout, DataVersion,
//!                                           HA address, connection
//! ```
//!
//! All four tables sit behind one `std::sync::RwLock`: every operation is a short,
//! non-async section, and a registration must change several tables atomically (a
//! lookup never sees a broker without its topics or a topic without its broker).
//! Lookups take the read lock only and copy out what they answer.
//!
//! Nothing here reads the clock: every operation that stamps or checks liveness takes
//! `now`, so expiry is tested by passing a later instant instead of waiting 120 s.
//! Liveness uses `Instant` (monotonic): a wall-clock jump must not expire every
//! broker at once.
//!
//! Operations live in `register.rs` (adding and refreshing) and `remove.rs` (unregister,
//! connection loss, expiry, topic deletion, permission changes).

mod register;
mod remove;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use vostok_remoting::protocol::body::{DataVersion, TopicConfigSerializeWrapper, TopicList};
use vostok_remoting::protocol::route::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
use vostok_remoting::protocol::topic::{perm, MASTER_ID};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::Channel;

pub use remove::ExpiredBroker;

/// Topics of the 5.x broker-member sync feature never get acting-master rewriting
/// (`TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX`).
const SYNC_BROKER_MEMBER_GROUP_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// `TopicSysFlag` bits.
const FLAG_UNIT: i32 = 0x1;
const FLAG_UNIT_SUB: i32 = 0x2;

/// Key of the live table (`BrokerAddrInfo`): 5.x keys by cluster and address, so two
/// clusters may reuse an address (e.g. containers on different hosts behind NAT).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerAddrInfo {
    pub cluster_name: String,
    pub broker_addr: String,
}

impl BrokerAddrInfo {
    pub fn new(cluster_name: impl Into<String>, broker_addr: impl Into<String>) -> Self {
        BrokerAddrInfo {
            cluster_name: cluster_name.into(),
            broker_addr: broker_addr.into(),
        }
    }
}

/// One live broker (`BrokerLiveInfo`).
#[derive(Debug, Clone)]
struct BrokerLiveInfo {
    broker_name: String,
    broker_id: i64,
    last_update: Instant,
    heartbeat_timeout: Duration,
    data_version: DataVersion,
    ha_server_addr: String,
    /// The connection the last registration came on: closing it drops the broker.
    /// `None` for registrations made in-process.
    channel: Option<Channel>,
}

impl BrokerLiveInfo {
    fn is_expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_update) > self.heartbeat_timeout
    }
}

/// A copy of one live-table entry, for operators and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub addr: BrokerAddrInfo,
    pub broker_name: String,
    pub broker_id: i64,
    pub last_update: Instant,
    pub heartbeat_timeout: Duration,
    pub data_version: DataVersion,
    pub ha_server_addr: String,
    /// Id of the connection the broker registered on.
    pub channel_id: Option<u64>,
}

/// A REGISTER_BROKER request, decoded.
#[derive(Debug, Clone, Default)]
pub struct BrokerRegistration {
    pub cluster_name: String,
    pub broker_addr: String,
    pub broker_name: String,
    /// 0 = master, ≥ 1 = slave.
    pub broker_id: i64,
    pub ha_server_addr: String,
    /// `__ZONE_NAME` (5.x).
    pub zone_name: Option<String>,
    /// `heartbeatTimeoutMillis` (5.x); `None` = the configured default.
    pub heartbeat_timeout: Option<Duration>,
    /// `enableActingMaster` (5.x); `None` marks a 4.x broker.
    pub enable_acting_master: Option<bool>,
    pub topic_config_wrapper: TopicConfigSerializeWrapper,
    pub channel: Option<Channel>,
}

/// What REGISTER_BROKER answers (`RegisterBrokerResult`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterBrokerResult {
    /// For a slave whose master is live: the master's address.
    pub master_addr: Option<String>,
    /// For a slave whose master is live: the master's HA address.
    pub ha_server_addr: Option<String>,
    /// The registration was ignored: another address holds this broker id with a
    /// newer `stateVersion`.
    pub stale: bool,
}

#[derive(Debug, Default)]
struct RouteTables {
    topic_queue_table: HashMap<String, BTreeMap<String, QueueData>>,
    broker_addr_table: HashMap<String, BrokerData>,
    cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
    broker_live_table: HashMap<BrokerAddrInfo, BrokerLiveInfo>,
}

/// Settings the route table needs from [`crate::NamesrvConfig`].
#[derive(Debug, Clone)]
pub struct RouteConfig {
    /// Expiry of brokers that did not register a timeout of their own.
    pub default_heartbeat_timeout: Duration,
    pub delete_topic_with_broker_registration: bool,
    pub support_acting_master: bool,
}

impl Default for RouteConfig {
    fn default() -> Self {
        RouteConfig {
            default_heartbeat_timeout: Duration::from_secs(120),
            delete_topic_with_broker_registration: false,
            support_acting_master: false,
        }
    }
}

impl From<&crate::NamesrvConfig> for RouteConfig {
    fn from(c: &crate::NamesrvConfig) -> Self {
        RouteConfig {
            default_heartbeat_timeout: c.broker_channel_expired_time,
            delete_topic_with_broker_registration: c.delete_topic_with_broker_registration,
            support_acting_master: c.support_acting_master,
        }
    }
}

/// The route table. Owned by the name server; its processor and housekeeping hold
/// `Arc`s to it.
#[derive(Debug, Default)]
pub struct RouteInfoManager {
    tables: RwLock<RouteTables>,
    config: RouteConfig,
}

impl RouteInfoManager {
    pub fn new(config: RouteConfig) -> Self {
        RouteInfoManager {
            tables: RwLock::new(RouteTables::default()),
            config,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, RouteTables> {
        // Writers finish every multi-table change before anything can panic (no
        // panicking calls inside), so a poisoned lock still guards consistent tables.
        self.tables.read_locked()
    }

    fn write(&self) -> RwLockWriteGuard<'_, RouteTables> {
        self.tables.write_locked()
    }

    /// The route of a topic (`pickupTopicRouteData`): its queues per broker name and
    /// every broker id of those names. `None` when no live broker serves it.
    pub fn pickup_topic_route_data(&self, topic: &str) -> Option<TopicRouteData> {
        let mut route = {
            let tables = self.read();
            let queues = tables.topic_queue_table.get(topic)?;
            let broker_datas: Vec<BrokerData> = queues
                .keys()
                .filter_map(|name| tables.broker_addr_table.get(name).cloned())
                .collect();
            if broker_datas.is_empty() {
                return None;
            }
            TopicRouteData {
                broker_datas,
                filter_server_table: BTreeMap::new(),
                order_topic_conf: None,
                queue_datas: queues.values().cloned().collect(),
            }
        };
        if self.config.support_acting_master && !topic.starts_with(SYNC_BROKER_MEMBER_GROUP_PREFIX)
        {
            apply_acting_master(&mut route);
        }
        Some(route)
    }

    /// GET_BROKER_CLUSTER_INFO.
    pub fn cluster_info(&self) -> ClusterInfo {
        let tables = self.read();
        ClusterInfo {
            broker_addr_table: tables
                .broker_addr_table
                .iter()
                .map(|(name, data)| (name.clone(), data.clone()))
                .collect(),
            cluster_addr_table: tables.cluster_addr_table.clone(),
        }
    }

    /// Every topic with a route.
    pub fn all_topic_list(&self) -> TopicList {
        let tables = self.read();
        TopicList {
            broker_addr: None,
            topic_list: tables.topic_queue_table.keys().cloned().collect(),
        }
    }

    /// Topics served by any broker name of `cluster`; empty for an unknown cluster.
    pub fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        let tables = self.read();
        let mut list = TopicList::default();
        if let Some(names) = tables.cluster_addr_table.get(cluster) {
            for (topic, queues) in &tables.topic_queue_table {
                if names.iter().any(|name| queues.contains_key(name)) {
                    list.topic_list.insert(topic.clone());
                }
            }
        }
        list
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and broker names (every broker
    /// auto-creates a topic of each), plus one broker address to ask for more.
    pub fn system_topic_list(&self) -> TopicList {
        let tables = self.read();
        let mut list = TopicList::default();
        for (cluster, names) in &tables.cluster_addr_table {
            list.topic_list.insert(cluster.clone());
            list.topic_list.extend(names.iter().cloned());
        }
        let mut names: Vec<&String> = tables.broker_addr_table.keys().collect();
        names.sort();
        list.broker_addr = names
            .into_iter()
            .filter_map(|name| tables.broker_addr_table.get(name))
            .find_map(|data| data.broker_addrs.values().next().cloned());
        list
    }

    /// Topics whose (first) queue data carries sys flags matching `pred`.
    fn topics_with_sys_flag(&self, pred: impl Fn(i32) -> bool) -> TopicList {
        let tables = self.read();
        TopicList {
            broker_addr: None,
            topic_list: tables
                .topic_queue_table
                .iter()
                .filter(|(_, queues)| {
                    queues
                        .values()
                        .next()
                        .is_some_and(|qd| pred(qd.topic_sys_flag))
                })
                .map(|(topic, _)| topic.clone())
                .collect(),
        }
    }

    /// GET_UNIT_TOPIC_LIST.
    pub fn unit_topics(&self) -> TopicList {
        self.topics_with_sys_flag(|f| f & FLAG_UNIT != 0)
    }

    /// GET_HAS_UNIT_SUB_TOPIC_LIST.
    pub fn has_unit_sub_topics(&self) -> TopicList {
        self.topics_with_sys_flag(|f| f & FLAG_UNIT_SUB != 0)
    }

    /// GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST.
    pub fn has_unit_sub_ununit_topics(&self) -> TopicList {
        self.topics_with_sys_flag(|f| f & FLAG_UNIT == 0 && f & FLAG_UNIT_SUB != 0)
    }

    /// The DataVersion last registered from a broker address.
    pub fn query_data_version(&self, cluster_name: &str, broker_addr: &str) -> Option<DataVersion> {
        let key = BrokerAddrInfo::new(cluster_name, broker_addr);
        self.read()
            .broker_live_table
            .get(&key)
            .map(|live| live.data_version.clone())
    }

    /// Whether a broker's topic table differs from what it registered last (or it
    /// never registered): the broker then sends a full registration.
    pub fn is_broker_topic_config_changed(
        &self,
        cluster_name: &str,
        broker_addr: &str,
        data_version: &DataVersion,
    ) -> bool {
        self.query_data_version(cluster_name, broker_addr)
            .is_none_or(|known| known != *data_version)
    }

    /// The broker data of one broker name.
    pub fn broker_data(&self, broker_name: &str) -> Option<BrokerData> {
        self.read().broker_addr_table.get(broker_name).cloned()
    }

    /// Every live broker, ordered by cluster and address.
    pub fn live_brokers(&self) -> Vec<LiveBroker> {
        let tables = self.read();
        let mut out: Vec<LiveBroker> = tables
            .broker_live_table
            .iter()
            .map(|(addr, live)| LiveBroker {
                addr: addr.clone(),
                broker_name: live.broker_name.clone(),
                broker_id: live.broker_id,
                last_update: live.last_update,
                heartbeat_timeout: live.heartbeat_timeout,
                data_version: live.data_version.clone(),
                ha_server_addr: live.ha_server_addr.clone(),
                channel_id: live.channel.as_ref().map(Channel::id),
            })
            .collect();
        out.sort_by(|a, b| a.addr.cmp(&b.addr));
        out
    }

    /// Number of topics with a route.
    pub fn topic_count(&self) -> usize {
        self.read().topic_queue_table.len()
    }
}

/// 5.x acting master: a broker name without a master whose queues lost write
/// permission shows its lowest slave as id 0, so consumers (which read from the
/// "master") keep consuming. Only for brokers that enabled it.
fn apply_acting_master(route: &mut TopicRouteData) {
    for broker in &mut route.broker_datas {
        if broker.broker_addrs.is_empty()
            || broker.broker_addrs.contains_key(&MASTER_ID)
            || !broker.enable_acting_master
        {
            continue;
        }
        let read_only = route
            .queue_datas
            .iter()
            .find(|qd| qd.broker_name == broker.broker_name)
            .is_some_and(|qd| !perm::is_writeable(qd.perm));
        if read_only {
            if let Some((_, addr)) = broker.broker_addrs.pop_first() {
                broker.broker_addrs.insert(MASTER_ID, addr);
            }
        }
    }
}
