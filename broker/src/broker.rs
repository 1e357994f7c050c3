//! The broker: its shared state, start-up and shutdown.
//!
//! Start-up order: validate the config, open (and recover) the store, load topic,
//! subscription-group and offset tables, bind the listeners, start the embedded name
//! server in standalone mode, register with the name servers, start the background
//! services. Shutdown runs the reverse, unregistering first so that clients stop
//! routing here before the listeners close.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};
use vostok_namesrv::NameServer;
use vostok_remoting::protocol::header::NotifyConsumerIdsChangedRequestHeader;
use vostok_remoting::protocol::message::id::UniqIdGenerator;
use vostok_remoting::protocol::request_code;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{
    Channel, ClientConfig, ConnectionConfig, RemotingClient, RemotingCommand, RemotingServer,
    ServerConfig,
};
use vostok_store::{ConsumedOffsets, MessageArrivingListener, MessageStore};

use crate::client_registry::ClientRegistry;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::long_polling::LongPolling;
use crate::offset::ConsumerOffsetManager;
use crate::processor::BrokerProcessor;
use crate::rebalance_lock::RebalanceLockManager;
use crate::registration;
use crate::stats::BrokerStats;
use crate::subscription::SubscriptionGroupManager;
use crate::topic::TopicConfigManager;

/// State shared by every request of one broker.
pub struct Broker {
    pub(crate) config: BrokerConfig,
    pub(crate) store: Arc<MessageStore>,
    pub(crate) topics: TopicConfigManager,
    pub(crate) subscriptions: SubscriptionGroupManager,
    pub(crate) offsets: ConsumerOffsetManager,
    pub(crate) clients: ClientRegistry,
    pub(crate) locks: RebalanceLockManager,
    pub(crate) long_polling: LongPolling,
    /// `brokerIP1:listenPort`: what clients connect to and what records carry as STOREHOST.
    pub(crate) broker_addr: SocketAddr,
    /// Sends in progress; beyond `sendThreadPoolQueueCapacity` senders get SYSTEM_BUSY.
    pub(crate) send_permits: Semaphore,
    pub(crate) stats: BrokerStats,
    pub(crate) uniq_ids: UniqIdGenerator,
    pub(crate) boot_timestamp: i64,
    /// Client for the name servers.
    pub(crate) outer: RemotingClient,
    pub(crate) namesrv_addrs: Vec<String>,
    /// For a slave: the master's address as the name server reported it.
    pub(crate) master_addr: RwLock<Option<String>>,
    /// Held while registering or unregistering; `true` once unregistered for shutdown,
    /// so that no registration in flight can land after the unregistration.
    pub(crate) registration: tokio::sync::Mutex<bool>,
    pub(crate) schedule: Arc<crate::schedule::ScheduleState>,
    pub(crate) timer: Arc<crate::timer::TimerService>,
    pub(crate) transactions: crate::transaction::state::TransactionState,
    pub(crate) shutdown: CancellationToken,
    pub(crate) tasks: TaskTracker,
}

/// Feeds store arrivals to long polling and the timer service.
struct ArrivalBridge(Arc<Broker>);

impl MessageArrivingListener for ArrivalBridge {
    /// `max_offset` is the queue's new max offset: the message's queue offset + 1.
    fn arriving(
        &self,
        topic: &str,
        queue_id: i32,
        max_offset: i64,
        tags_code: i64,
        _store_timestamp: i64,
        properties: &str,
    ) {
        if topic == vostok_remoting::protocol::topic::TIMER_TOPIC {
            // The consume queue keeps the TAGS hash; the delivery time is a property.
            let at = vostok_remoting::protocol::message::property::find(
                properties,
                vostok_remoting::protocol::message::property::TIMER_OUT_MS,
            )
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
            self.0.timer.on_arrival(max_offset - 1, at);
        }
        self.0
            .long_polling
            .notify(topic, queue_id, max_offset, tags_code);
    }
}

/// Lets the store's retention see what consumer groups committed, so that a forced
/// deletion never drops unconsumed messages unless `cleanFileForciblyEnable`.
struct ConsumedBridge(Arc<Broker>);

impl ConsumedOffsets for ConsumedBridge {
    fn min_committed_offset(&self, topic: &str, queue_id: i32) -> Option<i64> {
        self.0.offsets.min_committed(topic, queue_id)
    }
}

/// A running broker.
pub struct BrokerHandle {
    broker: Arc<Broker>,
    servers: Vec<RemotingServer>,
    namesrv: Option<NameServer>,
}

impl Broker {
    /// Starts a broker with `config`.
    pub async fn start(mut config: BrokerConfig) -> Result<BrokerHandle, BrokerError> {
        config.validate()?;
        let store_config = config.store.clone();
        let store = tokio::task::spawn_blocking(move || MessageStore::open(store_config))
            .await
            .map_err(|e| BrokerError::Config {
                key: "storePathRootDir".into(),
                reason: format!("store start-up panicked: {e}"),
            })??;

        let listen = format!("0.0.0.0:{}", config.listen_port);
        let listener = TcpListener::bind(&listen)
            .await
            .map_err(|source| BrokerError::Bind {
                addr: listen.clone(),
                source,
            })?;
        let bound_port = listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or(config.listen_port);
        config.listen_port = bound_port;

        let mut namesrv = None;
        if config.namesrv_addr.is_none() {
            let ns_config = config.embedded_namesrv_config();
            let addr = format!("0.0.0.0:{}", ns_config.listen_port);
            let ns_listener =
                TcpListener::bind(&addr)
                    .await
                    .map_err(|source| BrokerError::Bind {
                        addr: addr.clone(),
                        source,
                    })?;
            let ns_port = ns_listener
                .local_addr()
                .map(|a| a.port())
                .unwrap_or(ns_config.listen_port);
            let server = NameServer::start(ns_config, ns_listener).await?;
            info!(
                port = ns_port,
                "embedded name server started (standalone mode)"
            );
            config.namesrv_addr = Some(format!("127.0.0.1:{ns_port}"));
            namesrv = Some(server);
        }

        let broker_addr = config.broker_addr(bound_port);
        let topics = TopicConfigManager::load(&config);
        let subscriptions = SubscriptionGroupManager::load(&config);
        let offsets = ConsumerOffsetManager::load(&config);
        let schedule = Arc::new(crate::schedule::ScheduleState::load(&config));
        let timer = Arc::new(crate::timer::TimerService::load(&config));
        let outer = RemotingClient::new(ClientConfig::default(), None);
        let transactions = crate::transaction::state::TransactionState::load(&config);
        let broker = Arc::new(Broker {
            namesrv_addrs: config.namesrv_list(),
            send_permits: Semaphore::new(config.send_thread_pool_queue_capacity.max(1)),
            uniq_ids: UniqIdGenerator::new(broker_addr.ip()),
            config,
            store,
            topics,
            subscriptions,
            offsets,
            clients: ClientRegistry::new(),
            locks: RebalanceLockManager::default(),
            long_polling: LongPolling::new(),
            broker_addr,
            stats: BrokerStats::default(),
            boot_timestamp: now_millis(),
            outer,
            master_addr: RwLock::new(None),
            registration: tokio::sync::Mutex::new(false),
            schedule,
            timer,
            transactions,
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        broker
            .store
            .set_arrival_listener(Arc::new(ArrivalBridge(broker.clone())));
        broker
            .store
            .set_consumed_offsets(Arc::new(ConsumedBridge(broker.clone())));

        let server_config = ServerConfig {
            connection: ConnectionConfig {
                idle_timeout: broker.config.server_channel_max_idle,
                limits: vostok_remoting::FrameLimits {
                    max_frame: broker.config.max_frame_size,
                    ..Default::default()
                },
                ..ConnectionConfig::default()
            },
            ..ServerConfig::default()
        };
        let processor = Arc::new(BrokerProcessor::new(broker.clone()));
        let mut servers = vec![RemotingServer::start(
            listener,
            processor.clone(),
            server_config.clone(),
            Vec::new(),
        )];
        // Java clients up to 4.4 send to the "VIP" port, listenPort - 2.
        if broker.config.fast_listen_enable && bound_port > 2 {
            let fast = format!("0.0.0.0:{}", bound_port - 2);
            match TcpListener::bind(&fast).await {
                Ok(l) => servers.push(RemotingServer::start(
                    l,
                    processor,
                    server_config,
                    Vec::new(),
                )),
                Err(e) => {
                    warn!(addr = %fast, error = %e, "fast listen port unavailable; serving on listenPort only")
                }
            }
        }

        broker.spawn_services();
        registration::register_all(&broker).await;
        info!(
            broker = %broker.config.broker_name,
            addr = %broker.broker_addr,
            namesrv = %broker.namesrv_addrs.join(";"),
            "broker started"
        );
        Ok(BrokerHandle {
            broker,
            servers,
            namesrv,
        })
    }

    fn spawn_services(self: &Arc<Self>) {
        let b = self.clone();
        self.tasks.spawn(async move { registration::run(b).await });
        let b = self.clone();
        self.tasks.spawn(async move {
            let mut tick = tokio::time::interval(b.config.flush_consumer_offset_interval);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => b.offsets.persist(false),
                    _ = b.shutdown.cancelled() => break,
                }
            }
        });
        let b = self.clone();
        self.tasks.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(10));
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        let changed = b.clients.scan_expired(Instant::now(), b.config.channel_expired_timeout);
                        b.notify_consumer_ids_changed(changed);
                    }
                    _ = b.shutdown.cancelled() => break,
                }
            }
        });
        let b = self.clone();
        self.tasks.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = tick.tick() => b.stats.sample(),
                    _ = b.shutdown.cancelled() => break,
                }
            }
        });
        crate::schedule::spawn(self);
        crate::transaction::spawn(self);
        crate::timer::spawn(self);
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    pub fn store(&self) -> &Arc<MessageStore> {
        &self.store
    }

    pub fn broker_addr(&self) -> SocketAddr {
        self.broker_addr
    }

    pub(crate) fn on_channel_closed(&self, channel: &Channel) {
        let changed = self.clients.on_channel_closed(channel);
        if !changed.is_empty() {
            debug!(peer = %channel.peer_addr(), groups = ?changed, "client channel closed");
        }
        self.notify_consumer_ids_changed(changed);
    }

    /// Tells every consumer of each group to rebalance (oneway, best effort).
    pub(crate) fn notify_consumer_ids_changed(&self, groups: Vec<String>) {
        if !self.config.notify_consumer_ids_changed_enable || self.shutdown.is_cancelled() {
            return;
        }
        for group in groups {
            if let Some(sub) = self.subscriptions.get(&group) {
                if !sub.notify_consumer_ids_changed_enable {
                    continue;
                }
            }
            for channel in self.clients.consumer_channels(&group) {
                let header = NotifyConsumerIdsChangedRequestHeader {
                    consumer_group: group.clone(),
                };
                let request = RemotingCommand::request_with_header(
                    request_code::NOTIFY_CONSUMER_IDS_CHANGED,
                    &header,
                );
                tokio::spawn(async move {
                    if let Err(e) = channel.invoke_oneway(request, Duration::from_secs(3)).await {
                        debug!(peer = %channel.peer_addr(), error = %e, "notify consumer ids changed failed");
                    }
                });
            }
        }
    }

    /// Messages put since start (stats for runtime info).
    pub(crate) fn count_put(&self, n: u64) {
        self.stats.put.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn count_get(&self, n: u64) {
        self.stats.get.fetch_add(n, Ordering::Relaxed);
    }
}

impl BrokerHandle {
    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// The address clients use (`brokerIP1:listenPort`).
    pub fn addr(&self) -> SocketAddr {
        self.broker.broker_addr
    }

    /// Name servers the broker registers with (the embedded one in standalone mode).
    pub fn namesrv_addr(&self) -> String {
        self.broker.namesrv_addrs.join(";")
    }

    /// Unregisters, stops serving, persists state, closes the store.
    pub async fn shutdown(self) {
        let broker = self.broker;
        info!("broker shutting down");
        registration::unregister_all(&broker).await;
        broker.shutdown.cancel();
        broker.long_polling.wake_all();
        for server in &self.servers {
            server.shutdown().await;
        }
        broker.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(10), broker.tasks.wait()).await;
        broker.offsets.persist(true);
        broker.topics.persist();
        broker.subscriptions.persist();
        broker.schedule.persist();
        broker.timer.persist();
        broker.transactions.persist();
        broker.outer.shutdown().await;
        if let Some(ns) = self.namesrv {
            ns.shutdown().await;
        }
        let store = broker.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.shutdown()).await;
        info!("broker stopped");
    }
}
