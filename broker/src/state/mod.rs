//! The broker's tables: the low floor every front end, operation and service reads.
//!
//! Each table is a module here that keeps one thing and knows nothing of the others
//! (its file opens with what it keeps); none of them answers a request. [`Broker`] holds
//! them in a few groups, so that code that needs one group takes only that group:
//! [`Storage`] (the store, the topic table, removed messages), [`Consumers`] (groups,
//! offsets, clients, filters, queue locks, held pulls), [`Deferred`] (delay levels,
//! timers, half messages), [`Roles`] (master, slave and controller-mode standing),
//! [`Intake`] (the bound on sends in progress, unique ids, the duplication window),
//! [`Observed`] (counters, request metrics and their windows, the start time),
//! [`NameServers`] (the client and the registration) and [`Lifecycle`] (the stop
//! signal, the tasks, the duties runtime), beside POP state and what belongs to the
//! broker as a whole (config and its run-time keys, the address, the ACL guard, the
//! memory account): RocketMQ's `BrokerController` fields without its start-up code.
//! An operation takes the groups it uses, not the [`Broker`]. [`Broker`]'s own methods keep
//! its tables (persist, rebuild) or read across them (the role, a topic's duplication
//! window, the slowest group on a topic); what acts on them (a consumer registered, its
//! group told to rebalance) is an operation. The operations (`ops`), front ends and
//! services sit above this floor; start-up (`startup`) builds it.

pub(crate) mod client_registry;
pub(crate) mod consumer_filter;
pub(crate) mod dedupe;
pub(crate) mod event_metrics;
pub(crate) mod long_polling;
pub(crate) mod master_services;
pub(crate) mod memory;
pub(crate) mod metrics;
pub(crate) mod offset;
pub(crate) mod pop;
pub(crate) mod rebalance_lock;
pub(crate) mod removal;
pub(crate) mod replicas;
pub(crate) mod request_mode;
pub(crate) mod runtime_config;
pub(crate) mod schedule;
pub(crate) mod stats;
pub(crate) mod stats_window;
pub(crate) mod subscription;
pub(crate) mod timer;
pub(crate) mod topic;
pub(crate) mod transaction;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::message::id::UniqIdGenerator;
use vostok_remoting::RemotingClient;
use vostok_store::MessageStore;

use crate::config::BrokerConfig;
use client_registry::ClientRegistry;
use consumer_filter::ConsumerFilterManager;
use dedupe::DedupeWindow;
use long_polling::LongPolling;
use metrics::BrokerMetrics;
use offset::ConsumerOffsetManager;
use pop::PopState;
use rebalance_lock::RebalanceLockManager;
use removal::RemovedMessages;
use runtime_config::RuntimeConfig;
use schedule::DelayOffsetTable;
use stats::BrokerStats;
use subscription::SubscriptionGroupManager;
use timer::TimerTable;
use topic::TopicConfigManager;
use transaction::TransactionState;

/// The messages and what says where they go: the store, the topic table, and the
/// messages an operator removed.
pub(crate) struct Storage {
    pub(crate) store: Arc<MessageStore>,
    pub(crate) topics: TopicConfigManager,
    /// Messages an operator removed: pulls and pops skip them.
    pub(crate) removals: RemovedMessages,
}

/// The broker's own tasks and how they stop.
pub(crate) struct Lifecycle {
    /// Cancelled when the broker stops: every task of the broker watches it.
    pub(crate) shutdown: CancellationToken,
    /// The broker's tasks, waited for when it stops.
    pub(crate) tasks: TaskTracker,
    /// The small runtime of the broker's duties (registration, client expiry, offset
    /// flushes): no request flood can hold them up.
    pub(crate) duties: tokio::runtime::Handle,
}

/// The name servers and the broker's registration with them.
pub(crate) struct NameServers {
    /// The client for the name servers (and for controllers and the master, which
    /// the broker calls the same way).
    pub(crate) client: RemotingClient,
    pub(crate) addrs: Vec<String>,
    /// Held while registering or unregistering; `true` once unregistered for shutdown,
    /// so that no registration in flight can land after the unregistration.
    pub(crate) registration: tokio::sync::Mutex<bool>,
}

/// What the broker knows of its consumers: groups, offsets, connected clients, their
/// filters, queue locks and held pulls.
pub(crate) struct Consumers {
    pub(crate) subscriptions: SubscriptionGroupManager,
    /// Pull or POP per topic and group (QUERY_ASSIGNMENT).
    pub(crate) request_modes: request_mode::MessageRequestModeManager,
    pub(crate) offsets: ConsumerOffsetManager,
    pub(crate) clients: ClientRegistry,
    /// Compiled SQL92 subscriptions.
    pub(crate) filters: ConsumerFilterManager,
    pub(crate) locks: RebalanceLockManager,
    pub(crate) long_polling: LongPolling,
}

/// Messages stored for later: delay levels, timers, half (transaction) messages.
pub(crate) struct Deferred {
    pub(crate) delay_offsets: DelayOffsetTable,
    pub(crate) timers: TimerTable,
    pub(crate) transactions: TransactionState,
}

/// What admits and stamps sends before they are stored: the bound on sends in
/// progress, the unique ids given to messages that carry none, and the duplication
/// window that answers a producer's retry without storing it twice.
pub(crate) struct Intake {
    /// Sends in progress; beyond `sendThreadPoolQueueCapacity` senders get SYSTEM_BUSY.
    pub(crate) permits: Semaphore,
    /// Unique ids (`UNIQ_KEY`) for messages whose producer set none.
    pub(crate) ids: UniqIdGenerator,
    /// Unique ids of recent sends, for answering retries without storing twice.
    pub(crate) dedupe: DedupeWindow,
}

/// What the broker observes of its own work, for runtime info, the exporter and the
/// console: message counters and rates, the request metrics, their windows, and when
/// the broker started.
pub(crate) struct Observed {
    /// Messages put and got since start, their per-second rates, registrations
    /// (GET_BROKER_RUNTIME_INFO).
    pub(crate) stats: BrokerStats,
    /// RocketMQ 5's request metrics (Prometheus and the console).
    pub(crate) metrics: BrokerMetrics,
    /// The last minute, hour and day of the metrics' counters (VIEW_BROKER_STATS_DATA).
    pub(crate) windows: stats_window::StatsWindows,
    /// When the broker started, in epoch milliseconds (`bootTimestamp`, the uptime).
    pub(crate) boot_timestamp: i64,
}

impl Observed {
    /// Counts `n` messages stored (runtime info's put counter).
    pub(crate) fn count_put(&self, n: u64) {
        self.stats.put.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` messages handed to consumers (runtime info's get counter).
    pub(crate) fn count_get(&self, n: u64) {
        self.stats.get.fetch_add(n, Ordering::Relaxed);
    }
}

/// Why a group or topic was not created on first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotCreated {
    /// Creation on first use is off, or the name or template does not allow it.
    NotAllowed(String),
    /// A bound was reached (docs/limits.md#groups-and-topics).
    OverLimit(String),
}

impl std::fmt::Display for NotCreated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotCreated::NotAllowed(reason) | NotCreated::OverLimit(reason) => f.write_str(reason),
        }
    }
}

/// Where this broker stands among its replicas: its master (for a slave), the address
/// it offers slaves, a slave's replication client, and controller mode's role and
/// epochs.
pub(crate) struct Roles {
    /// For a slave: the master's address as the name server reported it.
    pub(crate) master_addr: RwLock<Option<String>>,
    /// Signalled when `master_addr` changes (the slave synchronises at once).
    pub(crate) master_changed: tokio::sync::Notify,
    /// `brokerIP2:haListenPort` when this master accepts slaves, registered as
    /// `haServerAddr`; empty otherwise.
    pub(crate) ha_server_addr: RwLock<String>,
    /// A slave's replication client (set at start-up).
    pub(crate) ha_client: std::sync::OnceLock<Arc<vostok_store::ha::HaClient>>,
    /// Controller mode: id, role, epochs (docs/controller.md).
    pub(crate) replicas: replicas::ReplicaState,
}

impl Roles {
    /// [`Broker::is_master`], from the config and this standing.
    pub(crate) fn is_master(&self, config: &BrokerConfig) -> bool {
        if !config.controller.enable {
            return config.is_master();
        }
        self.replicas.role() == replicas::ReplicaRole::Master
    }

    /// Outside controller mode, always; in it, a master that heard from a controller
    /// within `controllerHeartBeatTimeoutMills` (its lease).
    pub(crate) fn holds_lease(&self, config: &BrokerConfig) -> bool {
        if !config.controller.enable {
            return true;
        }
        let last = self.replicas.last_controller_ok_ms.load(Ordering::Acquire);
        let lease = config.controller.controller_heartbeat_timeout.as_millis() as i64;
        vostok_remoting::support::time::now_millis() - last < lease
    }
}

/// State shared by every request of one broker: a few groups of tables, each handed
/// alone to what needs only it, and what belongs to the broker as a whole.
pub struct Broker {
    pub(crate) config: BrokerConfig,
    pub(crate) storage: Storage,
    pub(crate) consumers: Consumers,
    pub(crate) deferred: Deferred,
    pub(crate) roles: Roles,
    /// The keys that change at run time (UPDATE_BROKER_CONFIG).
    pub(crate) runtime: RuntimeConfig,
    pub(crate) intake: Intake,
    pub(crate) observed: Observed,
    /// `brokerIP1:listenPort`: what clients connect to and what records carry as STOREHOST.
    pub(crate) broker_addr: SocketAddr,
    pub(crate) namesrv: NameServers,
    /// POP consumption: checkpoints, FIFO order info, held POP requests.
    pub(crate) pop: PopState,
    /// ACL (1.0 or 2.0) when switched on: every request passes it first.
    pub(crate) guard: Option<vostok_auth::Guard>,
    /// The process's memory account (docs/limits.md): frames and queues reserve from
    /// it, the tables report to it ([`memory`]); producers get SYSTEM_BUSY when it is
    /// pressed.
    pub(crate) memory: Arc<vostok_remoting::MemoryBudget>,
    pub(crate) life: Lifecycle,
}

impl Broker {
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    pub fn store(&self) -> &Arc<MessageStore> {
        &self.storage.store
    }

    pub fn broker_addr(&self) -> SocketAddr {
        self.broker_addr
    }

    /// The process's memory account.
    pub fn memory(&self) -> &Arc<vostok_remoting::MemoryBudget> {
        &self.memory
    }

    /// Takes sends and writes its own commitlog: the configured role, or in
    /// controller mode the role the controller assigned. A controller-mode master
    /// whose lease ran out (no controller answered for
    /// `controllerHeartBeatTimeoutMills`) stops taking sends.
    pub fn is_master(&self) -> bool {
        self.roles.is_master(&self.config)
    }

    /// The id this broker registers with the name servers under: 0 for a master.
    pub fn registered_broker_id(&self) -> i64 {
        if !self.config.controller.enable {
            return self.config.broker_id;
        }
        if self.is_master() {
            0
        } else {
            self.roles.replicas.broker_id().max(1)
        }
    }

    pub fn replicas(&self) -> &replicas::ReplicaState {
        &self.roles.replicas
    }

    /// Writes the topic and subscription-group files if they changed, off the async
    /// runtime; resolves once they are on disk.
    pub(crate) async fn persist_configs(self: &Arc<Self>) {
        let b = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            b.storage.topics.persist();
            b.consumers.subscriptions.persist();
        })
        .await;
    }

    /// A topic's duplication window (`duplication.window.seconds`, else
    /// `duplicationWindowSeconds`); zero when off.
    pub(crate) fn duplication_window(&self, topic: &TopicConfig) -> Duration {
        dedupe::window_for(self.config.duplication_window, topic)
    }

    /// Refills the duplication window from the commitlog (start-up, before serving).
    pub(crate) fn rebuild_duplication_window(&self) {
        let longest = self
            .storage
            .topics
            .topic_names()
            .iter()
            .filter_map(|t| self.storage.topics.get(t))
            .map(|t| self.duplication_window(&t))
            .max()
            .unwrap_or_default()
            .max(self.config.duplication_window);
        if longest.is_zero() {
            return;
        }
        dedupe::rebuild::rebuild(&self.intake.dedupe, &self.storage.store, longest, |topic| {
            self.storage
                .topics
                .get(topic)
                .map_or(self.config.duplication_window, |t| {
                    self.duplication_window(&t)
                })
        });
    }

    /// Where the slowest consumer group of `topic` stands on each queue, for the
    /// store's retention (`vostok_store::ConsumedOffsets`): the groups with offsets or
    /// noted here and the online clustering subscribers count; one that has not
    /// committed on a queue is at its start, whatever its `consumeFromWhere`, since
    /// the broker cannot tell where it will begin.
    pub(crate) fn min_committed_offsets(&self, topic: &str) -> std::collections::HashMap<i32, i64> {
        let online = self.consumers.clients.clustering_groups_subscribing(topic);
        self.consumers.offsets.min_committed_offsets(topic, &online)
    }
}
