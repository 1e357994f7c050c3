//! The client instance (Java `MQClientInstance`): one per client id and name-server
//! list, shared by every producer and consumer of a process that uses them.
//!
//! It owns the connections ([`RemotingClient`]), the topic route cache, the broker
//! address table and the background timers:
//!
//! | timer | default | what |
//! |---|---|---|
//! | route poll | 30 s (`pollNameServerInterval`) | GET_ROUTEINFO_BY_TOPIC for every topic in use |
//! | heartbeat | 30 s (`heartbeatBrokerInterval`) | HEART_BEAT to every broker (masters only without consumers) |
//! | offset persist | 5 s (`persistConsumerOffsetInterval`) | consumers' UPDATE_CONSUMER_OFFSET |
//! | rebalance | 20 s, and at once on NOTIFY_CONSUMER_IDS_CHANGED | consumers' queue allocation |
//!
//! Requests brokers send to the client (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED,
//! RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT, GET_CONSUMER_RUNNING_INFO,
//! CONSUME_MESSAGE_DIRECTLY, PUSH_REPLY_MESSAGE_TO_CLIENT) are served by the `processor`
//! module on the same connections.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::body::{ConsumerData, HeartbeatData, MessageQueue, ProducerData};
use vostok_remoting::protocol::header::{
    CheckTransactionStateRequestHeader, UnregisterClientRequestHeader,
};
use vostok_remoting::protocol::message::id::UniqIdGenerator;
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::route::TopicRouteData;
use vostok_remoting::protocol::topic::{
    AUTO_CREATE_TOPIC_KEY_TOPIC, CLIENT_INNER_PRODUCER_GROUP, MASTER_ID,
};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::{BoxFuture, RemotingClient, RpcHook};

use crate::api;
use crate::error::{ClientError, Result};
use crate::processor::ClientProcessor;
use crate::route::{subscribe_queues, TopicPublishInfo};

/// Settings shared by producers and consumers (Java `ClientConfig`).
#[derive(Clone)]
pub struct ClientConfig {
    /// Name server addresses (`namesrvAddr`, `host:port`); tried in turn on failure.
    pub namesrv_addr: Vec<String>,
    /// `instanceName`: `DEFAULT` is replaced by the process id, so that the producers
    /// and consumers of a process share one instance.
    pub instance_name: String,
    /// `clientIP`; detected from the default route when `None`.
    pub client_ip: Option<IpAddr>,
    pub unit_name: Option<String>,
    /// Namespace: every topic and group is used as `namespace%name`.
    pub namespace: String,
    /// `pollNameServerInterval`.
    pub poll_name_server_interval: Duration,
    /// `heartbeatBrokerInterval`.
    pub heartbeat_broker_interval: Duration,
    /// `persistConsumerOffsetInterval`.
    pub persist_consumer_offset_interval: Duration,
    /// `rocketmq.client.rebalance.waitInterval`.
    pub rebalance_interval: Duration,
    /// `mqClientApiTimeout`: timeout of route, heartbeat and offset calls.
    pub mq_client_api_timeout: Duration,
    /// Root of broadcasting consumers' offset files
    /// (`rocketmq.client.localOffsetStoreDir`, default `~/.rocketmq_offsets`).
    pub local_offset_store_dir: Option<PathBuf>,
    /// Adds ext fields to every request (ACL signatures and the like).
    pub rpc_hook: Option<Arc<dyn RpcHook>>,
    pub remoting: vostok_remoting::ClientConfig,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            namesrv_addr: std::env::var("NAMESRV_ADDR")
                .map(|s| parse_namesrv_addr(&s))
                .unwrap_or_default(),
            instance_name: "DEFAULT".into(),
            client_ip: None,
            unit_name: None,
            namespace: String::new(),
            poll_name_server_interval: Duration::from_secs(30),
            heartbeat_broker_interval: Duration::from_secs(30),
            persist_consumer_offset_interval: Duration::from_secs(5),
            rebalance_interval: Duration::from_secs(20),
            mq_client_api_timeout: Duration::from_secs(3),
            local_offset_store_dir: None,
            rpc_hook: None,
            remoting: vostok_remoting::ClientConfig::default(),
        }
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("namesrv_addr", &self.namesrv_addr)
            .field("instance_name", &self.instance_name)
            .field("client_ip", &self.client_ip)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Splits `host:port;host:port` (Java's `namesrvAddr` syntax).
pub fn parse_namesrv_addr(s: &str) -> Vec<String> {
    s.split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect()
}

impl ClientConfig {
    pub fn with_namesrv(addr: &str) -> Self {
        ClientConfig {
            namesrv_addr: parse_namesrv_addr(addr),
            ..Default::default()
        }
    }

    pub fn client_ip(&self) -> IpAddr {
        self.client_ip.unwrap_or_else(local_ip)
    }

    /// `clientIP@instanceName[@unitName]`.
    pub fn client_id(&self) -> String {
        let instance = if self.instance_name == "DEFAULT" {
            std::process::id().to_string()
        } else {
            self.instance_name.clone()
        };
        let mut id = format!("{}@{}", self.client_ip(), instance);
        if let Some(unit) = self.unit_name.as_deref().filter(|u| !u.is_empty()) {
            id.push('@');
            id.push_str(unit);
        }
        id
    }
}

/// The address of the interface the default route uses; no packet is sent.
pub fn local_ip() -> IpAddr {
    let probe = || -> std::io::Result<IpAddr> {
        let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
        socket.connect("10.254.254.254:1")?;
        Ok(socket.local_addr()?.ip())
    };
    match probe() {
        Ok(ip) if !ip.is_unspecified() => ip,
        _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

/// What the instance needs from a producer.
pub(crate) trait ProducerInner: Send + Sync {
    fn group(&self) -> &str;
    fn publish_topics(&self) -> Vec<String>;
    fn update_publish_info(&self, topic: &str, info: Arc<TopicPublishInfo>);
    /// CHECK_TRANSACTION_STATE from `broker_addr` about `msg`.
    fn check_transaction_state(
        &self,
        broker_addr: String,
        msg: MessageExt,
        header: CheckTransactionStateRequestHeader,
    );
}

/// What the instance needs from a consumer.
pub(crate) trait ConsumerInner: Send + Sync {
    fn group(&self) -> &str;
    fn consumer_data(&self) -> ConsumerData;
    fn subscribed_topics(&self) -> Vec<String>;
    fn update_subscribe_info(&self, topic: &str, queues: Vec<MessageQueue>);
    fn do_rebalance(&self) -> BoxFuture<'_, ()>;
    fn persist_offsets(&self) -> BoxFuture<'_, ()>;
    /// GET_CONSUMER_RUNNING_INFO body.
    fn running_info(&self) -> serde_json::Value;
    /// CONSUME_MESSAGE_DIRECTLY: runs the listener on `msg`, returns the result body.
    fn consume_message_directly(
        &self,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'_, serde_json::Value>;
    /// RESET_CONSUMER_CLIENT_OFFSET: restart the listed queues of `topic` (namespaced)
    /// from the given offsets.
    fn reset_offset(&self, topic: String, offsets: HashMap<MessageQueue, i64>)
        -> BoxFuture<'_, ()>;
    /// GET_CONSUMER_STATUS_FROM_CLIENT: the offsets held for `topic` (every topic when
    /// empty).
    fn offset_table(&self, topic: &str) -> BTreeMap<MessageQueue, i64>;
}

type Registry = Mutex<HashMap<String, Weak<ClientInstance>>>;

fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// See the module documentation.
pub struct ClientInstance {
    key: String,
    client_id: String,
    config: ClientConfig,
    remoting: RemotingClient,
    namesrv_index: AtomicUsize,
    routes: RwLock<HashMap<String, Arc<TopicRouteData>>>,
    /// broker name → broker id → address, from every route seen.
    brokers: RwLock<HashMap<String, BTreeMap<i64, String>>>,
    broker_versions: Mutex<HashMap<String, i32>>,
    producers: RwLock<HashMap<String, Arc<dyn ProducerInner>>>,
    consumers: RwLock<HashMap<String, Arc<dyn ConsumerInner>>>,
    route_update: tokio::sync::Mutex<()>,
    heartbeat_lock: tokio::sync::Mutex<()>,
    uniq: UniqIdGenerator,
    rebalance_now: Arc<Notify>,
    /// Wakes the heartbeat task when a route brings a broker not heart-beaten yet.
    heartbeat_now: Arc<Notify>,
    reply_waiters: Mutex<HashMap<String, oneshot::Sender<MessageExt>>>,
    started: AtomicBool,
    shutdown: CancellationToken,
    tracker: TaskTracker,
}

impl ClientInstance {
    /// The instance for this configuration's client id and name servers, created on
    /// first use.
    pub fn get_or_create(config: &ClientConfig) -> Result<Arc<ClientInstance>> {
        if config.namesrv_addr.is_empty() {
            return Err(ClientError::NoNameServer);
        }
        let client_id = config.client_id();
        let key = format!("{client_id}|{}", config.namesrv_addr.join(";"));
        let mut reg = registry().locked();
        if let Some(existing) = reg.get(&key).and_then(Weak::upgrade) {
            if !existing.shutdown.is_cancelled() {
                return Ok(existing);
            }
        }
        let instance = Arc::new_cyclic(|weak: &Weak<ClientInstance>| {
            let processor = Arc::new(ClientProcessor::new(weak.clone()));
            let remoting = RemotingClient::new(config.remoting.clone(), Some(processor));
            if let Some(hook) = &config.rpc_hook {
                remoting.register_rpc_hook(hook.clone());
            }
            ClientInstance {
                key: key.clone(),
                client_id: client_id.clone(),
                uniq: UniqIdGenerator::new(config.client_ip()),
                config: config.clone(),
                remoting,
                namesrv_index: AtomicUsize::new(rand::random::<u8>() as usize),
                routes: RwLock::default(),
                brokers: RwLock::default(),
                broker_versions: Mutex::default(),
                producers: RwLock::default(),
                consumers: RwLock::default(),
                route_update: tokio::sync::Mutex::new(()),
                heartbeat_lock: tokio::sync::Mutex::new(()),
                rebalance_now: Arc::new(Notify::new()),
                heartbeat_now: Arc::new(Notify::new()),
                reply_waiters: Mutex::default(),
                started: AtomicBool::new(false),
                shutdown: CancellationToken::new(),
                tracker: TaskTracker::new(),
            }
        });
        reg.insert(key, Arc::downgrade(&instance));
        Ok(instance)
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    pub(crate) fn remoting(&self) -> &RemotingClient {
        &self.remoting
    }

    pub(crate) fn api_timeout(&self) -> Duration {
        self.config.mq_client_api_timeout
    }

    pub(crate) fn next_uniq_id(&self) -> String {
        self.uniq.next_id()
    }

    pub(crate) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    /// Starts the timers once.
    pub(crate) fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        info!(client_id = %self.client_id, namesrv = ?self.config.namesrv_addr, "client instance starting");
        let weak = Arc::downgrade(self);
        self.spawn_timer(
            weak.clone(),
            self.config.poll_name_server_interval,
            None,
            |i| Box::pin(async move { i.update_all_routes().await }),
        );
        let heartbeat_now = Some(self.heartbeat_now.clone());
        self.spawn_timer(
            weak.clone(),
            self.config.heartbeat_broker_interval,
            heartbeat_now,
            |i| {
                Box::pin(async move {
                    i.clean_offline_brokers();
                    i.send_heartbeat_to_all_brokers().await;
                })
            },
        );
        self.spawn_timer(
            weak.clone(),
            self.config.persist_consumer_offset_interval,
            None,
            |i| Box::pin(async move { i.persist_all_consumer_offsets().await }),
        );
        // Rebalance: on its interval or at once when a broker says the group changed.
        let rebalance_now = Some(self.rebalance_now.clone());
        self.spawn_timer(weak, self.config.rebalance_interval, rebalance_now, |i| {
            Box::pin(async move { i.do_rebalance().await })
        });
    }

    /// Runs `tick` every `period`, and at once whenever `wake` is notified.
    fn spawn_timer(
        &self,
        weak: Weak<ClientInstance>,
        period: Duration,
        wake: Option<Arc<Notify>>,
        tick: impl Fn(Arc<ClientInstance>) -> BoxFuture<'static, ()> + Send + 'static,
    ) {
        let shutdown = self.shutdown.clone();
        let wake = wake.unwrap_or_default();
        self.tracker.spawn(async move {
            loop {
                let notified = wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(period) => {}
                    _ = &mut notified => {}
                }
                let Some(instance) = weak.upgrade() else {
                    return;
                };
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tick(instance) => {}
                }
            }
        });
    }

    /// Asks the rebalance task to run now.
    pub(crate) fn rebalance_immediately(&self) {
        self.rebalance_now.notify_one();
    }

    pub(crate) async fn do_rebalance(&self) {
        let consumers: Vec<_> = self.consumers_snapshot();
        for consumer in consumers {
            consumer.do_rebalance().await;
        }
    }

    async fn persist_all_consumer_offsets(&self) {
        for consumer in self.consumers_snapshot() {
            consumer.persist_offsets().await;
        }
    }

    fn consumers_snapshot(&self) -> Vec<Arc<dyn ConsumerInner>> {
        self.consumers.read_locked().values().cloned().collect()
    }

    fn producers_snapshot(&self) -> Vec<Arc<dyn ProducerInner>> {
        self.producers.read_locked().values().cloned().collect()
    }

    pub(crate) fn register_producer(&self, producer: Arc<dyn ProducerInner>) -> Result<()> {
        let mut producers = self.producers.write_locked();
        let group = producer.group().to_owned();
        if producers.contains_key(&group) {
            return Err(ClientError::DuplicateGroup(group));
        }
        producers.insert(group, producer);
        Ok(())
    }

    pub(crate) fn register_consumer(&self, consumer: Arc<dyn ConsumerInner>) -> Result<()> {
        let mut consumers = self.consumers.write_locked();
        let group = consumer.group().to_owned();
        if consumers.contains_key(&group) {
            return Err(ClientError::DuplicateGroup(group));
        }
        consumers.insert(group, consumer);
        Ok(())
    }

    pub(crate) fn find_producer(&self, group: &str) -> Option<Arc<dyn ProducerInner>> {
        self.producers.read_locked().get(group).cloned()
    }

    pub(crate) fn find_consumer(&self, group: &str) -> Option<Arc<dyn ConsumerInner>> {
        self.consumers.read_locked().get(group).cloned()
    }

    /// Removes a producer group, tells every broker, and shuts the instance down when
    /// nothing uses it any more.
    pub(crate) async fn unregister_producer(&self, group: &str) {
        let removed = self.producers.write_locked().remove(group).is_some();
        if removed {
            self.unregister_client(Some(group), None).await;
        }
        self.shutdown_if_unused().await;
    }

    pub(crate) async fn unregister_consumer(&self, group: &str) {
        let removed = self.consumers.write_locked().remove(group).is_some();
        if removed {
            self.unregister_client(None, Some(group)).await;
        }
        self.shutdown_if_unused().await;
    }

    async fn unregister_client(&self, producer_group: Option<&str>, consumer_group: Option<&str>) {
        let header = UnregisterClientRequestHeader {
            client_id: self.client_id.clone(),
            producer_group: producer_group.map(str::to_owned),
            consumer_group: consumer_group.map(str::to_owned),
        };
        for addr in self.all_broker_addrs(false) {
            if let Err(e) =
                api::unregister_client(&self.remoting, &addr, &header, self.api_timeout()).await
            {
                debug!(broker = %addr, error = %e, "unregister client failed");
            }
        }
    }

    async fn shutdown_if_unused(&self) {
        let unused = self
            .producers
            .read_locked()
            .keys()
            .all(|g| g == CLIENT_INNER_PRODUCER_GROUP)
            && self.consumers.read_locked().is_empty();
        if unused {
            self.shutdown().await;
        }
    }

    /// Stops the timers and closes every connection.
    pub(crate) async fn shutdown(&self) {
        if self.shutdown.is_cancelled() {
            return;
        }
        self.shutdown.cancel();
        {
            let mut reg = registry().locked();
            if reg
                .get(&self.key)
                .is_some_and(|w| w.upgrade().is_none_or(|i| i.shutdown.is_cancelled()))
            {
                reg.remove(&self.key);
            }
        }
        self.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.tracker.wait()).await;
        self.remoting.shutdown().await;
        info!(client_id = %self.client_id, "client instance shut down");
    }

    // ---- name server and routes ----

    /// Calls the name servers in turn, starting with the last one that answered.
    pub(crate) async fn invoke_namesrv<T, F>(&self, call: F) -> Result<T>
    where
        F: for<'a> Fn(&'a RemotingClient, &'a str) -> BoxFuture<'a, Result<T>>,
    {
        let addrs = &self.config.namesrv_addr;
        if addrs.is_empty() {
            return Err(ClientError::NoNameServer);
        }
        let start = self.namesrv_index.load(Ordering::Relaxed);
        let mut last_err = None;
        for i in 0..addrs.len() {
            let index = (start + i) % addrs.len();
            match call(&self.remoting, &addrs[index]).await {
                Err(e) if e.is_transport() => {
                    warn!(namesrv = %addrs[index], error = %e, "name server unreachable; trying the next one");
                    last_err = Some(e);
                }
                other => {
                    self.namesrv_index.store(index, Ordering::Relaxed);
                    return other;
                }
            }
        }
        Err(last_err.unwrap_or(ClientError::NoNameServer))
    }

    /// Fetches a topic's route; `None` when the name servers do not know the topic.
    pub(crate) async fn fetch_route(&self, topic: &str) -> Result<Option<TopicRouteData>> {
        let timeout = self.api_timeout();
        let topic = topic.to_owned();
        self.invoke_namesrv(|client, addr| {
            let topic = topic.clone();
            Box::pin(async move { api::get_topic_route(client, addr, &topic, timeout).await })
        })
        .await
    }

    /// Refreshes one topic's route and pushes the result to producers and consumers.
    /// Returns the route now cached, if any.
    pub(crate) async fn update_route(&self, topic: &str) -> Result<Option<Arc<TopicRouteData>>> {
        let _guard = self.route_update.lock().await;
        let Some(route) = self.fetch_route(topic).await? else {
            return Ok(None);
        };
        Ok(Some(self.apply_route(topic, route)))
    }

    /// Caches a topic's route and pushes it to producers and consumers. The route is
    /// cached before its brokers are remembered: the heartbeat task forgets brokers no
    /// cached route mentions (`clean_offline_brokers`), and must not see a broker whose
    /// route is not in the cache yet. An unchanged route still re-remembers its brokers,
    /// in case they were forgotten meanwhile.
    fn apply_route(&self, topic: &str, route: TopicRouteData) -> Arc<TopicRouteData> {
        let old = self.routes.read_locked().get(topic).cloned();
        if let Some(old) = old.filter(|old| **old == route) {
            if self.remember_brokers(&old) {
                self.heartbeat_now.notify_one();
            }
            return old;
        }
        debug!(topic, "topic route changed");
        let route = Arc::new(route);
        self.routes
            .write_locked()
            .insert(topic.to_owned(), route.clone());
        let new_broker = self.remember_brokers(&route);
        let info = Arc::new(TopicPublishInfo::new(topic, route.clone()));
        for producer in self.producers_snapshot() {
            producer.update_publish_info(topic, info.clone());
        }
        let queues = subscribe_queues(topic, &route);
        for consumer in self.consumers_snapshot() {
            consumer.update_subscribe_info(topic, queues.clone());
        }
        if new_broker {
            self.heartbeat_now.notify_one();
        }
        route
    }

    /// The publish info of an unknown topic built from `TBW102`'s route, so that the
    /// broker auto-creates the topic on the first send. As Java's
    /// `updateTopicRouteInfoFromNameServer(topic, true, producer)`, the template route
    /// (queue counts cut to `default_queue_nums`) is cached as the topic's own route
    /// until the name servers know the real one: the broker addresses it brings stay
    /// known (the heartbeat's `clean_offline_brokers` keeps brokers of cached routes
    /// only), and the route poll replaces it once the topic exists.
    pub(crate) async fn default_publish_info(
        &self,
        topic: &str,
        default_queue_nums: i32,
    ) -> Result<Option<TopicPublishInfo>> {
        let _guard = self.route_update.lock().await;
        let Some(template) = self.fetch_route(AUTO_CREATE_TOPIC_KEY_TOPIC).await? else {
            return Ok(None);
        };
        let info = TopicPublishInfo::for_auto_create(topic, Arc::new(template), default_queue_nums);
        let route = self.apply_route(topic, (*info.route).clone());
        Ok(Some(TopicPublishInfo::new(topic, route)))
    }

    /// Adds a route's broker addresses; true if one of them is new.
    fn remember_brokers(&self, route: &TopicRouteData) -> bool {
        let mut brokers = self.brokers.write_locked();
        let mut new = false;
        for bd in &route.broker_datas {
            let known = brokers.get(&bd.broker_name);
            new |= bd
                .broker_addrs
                .values()
                .any(|a| !known.is_some_and(|k| k.values().any(|x| x == a)));
            brokers.insert(bd.broker_name.clone(), bd.broker_addrs.clone());
        }
        new
    }

    pub(crate) fn cached_route(&self, topic: &str) -> Option<Arc<TopicRouteData>> {
        self.routes.read_locked().get(topic).cloned()
    }

    async fn update_all_routes(&self) {
        let mut topics: Vec<String> = Vec::new();
        for p in self.producers_snapshot() {
            topics.extend(p.publish_topics());
        }
        for c in self.consumers_snapshot() {
            topics.extend(c.subscribed_topics());
        }
        topics.sort();
        topics.dedup();
        for topic in topics {
            if let Err(e) = self.update_route(&topic).await {
                debug!(topic = %topic, error = %e, "route refresh failed");
            }
        }
    }

    /// Forgets brokers no cached route mentions any more.
    fn clean_offline_brokers(&self) {
        let routes = self.routes.read_locked();
        let mut brokers = self.brokers.write_locked();
        brokers.retain(|name, _| {
            routes
                .values()
                .any(|r| r.broker_datas.iter().any(|b| &b.broker_name == name))
        });
    }

    /// The master address of a broker name (where sends go).
    pub(crate) fn find_broker_addr_in_publish(&self, broker_name: &str) -> Option<String> {
        self.brokers
            .read_locked()
            .get(broker_name)
            .and_then(|addrs| addrs.get(&MASTER_ID).cloned())
    }

    /// Where to read from: the master, else any slave.
    pub(crate) fn find_broker_addr_in_subscribe(&self, broker_name: &str) -> Option<String> {
        let brokers = self.brokers.read_locked();
        let addrs = brokers.get(broker_name)?;
        addrs
            .get(&MASTER_ID)
            .or_else(|| addrs.values().next())
            .cloned()
    }

    /// A broker serving `topic` (random broker name, its master if it has one), as
    /// `findBrokerAddrByTopic` picks where to ask for the consumer list.
    pub(crate) fn find_broker_addr_by_topic(&self, topic: &str) -> Option<String> {
        let route = self.cached_route(topic)?;
        if route.broker_datas.is_empty() {
            return None;
        }
        let bd = &route.broker_datas[rand::random::<u32>() as usize % route.broker_datas.len()];
        bd.select_addr().map(str::to_owned)
    }

    fn all_broker_addrs(&self, masters_only: bool) -> Vec<String> {
        let brokers = self.brokers.read_locked();
        let mut out: Vec<String> = brokers
            .values()
            .flat_map(|addrs| {
                addrs
                    .iter()
                    .filter(|(id, _)| !masters_only || **id == MASTER_ID)
                    .map(|(_, a)| a.clone())
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Client ids of a consumer group as one broker of the topic sees them.
    pub(crate) async fn find_consumer_id_list(
        &self,
        topic: &str,
        group: &str,
    ) -> Result<Vec<String>> {
        let addr = match self.find_broker_addr_by_topic(topic) {
            Some(a) => a,
            None => {
                self.update_route(topic).await?;
                self.find_broker_addr_by_topic(topic)
                    .ok_or_else(|| ClientError::NoRoute {
                        topic: topic.to_owned(),
                    })?
            }
        };
        api::get_consumer_id_list(&self.remoting, &addr, group, self.api_timeout()).await
    }

    // ---- heartbeats ----

    fn heartbeat_data(&self) -> HeartbeatData {
        let mut producer_data_set: Vec<ProducerData> = self
            .producers_snapshot()
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
                .consumers_snapshot()
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
        let _guard = self.heartbeat_lock.lock().await;
        let data = self.heartbeat_data();
        let has_consumers = !data.consumer_data_set.is_empty();
        let body = api::encode_heartbeat(&data);
        let addrs = self.all_broker_addrs(!has_consumers);
        let calls = addrs.iter().map(|addr| {
            let body: Bytes = body.clone();
            async move {
                match api::heartbeat(&self.remoting, addr, body, self.api_timeout()).await {
                    Ok(version) => {
                        self.broker_versions.locked().insert(addr.clone(), version);
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
        self.broker_versions.locked().clone()
    }

    // ---- request/reply ----

    pub(crate) fn register_reply_waiter(
        &self,
        correlation_id: &str,
    ) -> oneshot::Receiver<MessageExt> {
        let (tx, rx) = oneshot::channel();
        self.reply_waiters
            .locked()
            .insert(correlation_id.to_owned(), tx);
        rx
    }

    pub(crate) fn remove_reply_waiter(&self, correlation_id: &str) {
        self.reply_waiters.locked().remove(correlation_id);
    }

    pub(crate) fn complete_reply(&self, msg: MessageExt) -> bool {
        let Some(id) = msg.property(property::CORRELATION_ID).map(str::to_owned) else {
            return false;
        };
        let waiter = self.reply_waiters.locked().remove(&id);
        match waiter {
            Some(tx) => tx.send(msg).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_ids_and_namesrv_lists() {
        assert_eq!(
            parse_namesrv_addr(" a:1;b:2 ;;"),
            vec!["a:1".to_owned(), "b:2".to_owned()]
        );
        let config = ClientConfig {
            client_ip: Some("10.0.0.5".parse().unwrap()),
            instance_name: "inst".into(),
            unit_name: Some("u".into()),
            ..ClientConfig::with_namesrv("a:1")
        };
        assert_eq!(config.client_id(), "10.0.0.5@inst@u");
        let default = ClientConfig {
            client_ip: Some("10.0.0.5".parse().unwrap()),
            ..ClientConfig::with_namesrv("a:1")
        };
        assert_eq!(
            default.client_id(),
            format!("10.0.0.5@{}", std::process::id())
        );
    }
}
