//! Start-up and shutdown: the top floor, which builds the shared state, binds the
//! listeners, starts the services and stops them again.
//!
//! Start-up order: validate the config, open (and recover) the store, load the tables,
//! bind the listeners (the HA listener of a master), start the embedded name server in
//! standalone mode, start replication (a master's HA service, a slave's client), fold in the
//! transaction outcomes recorded before a restart and the POP checkpoints, register with the name servers,
//! start the background services. Shutdown runs the reverse, unregistering first so
//! that clients stop routing here before the listeners close.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};
use vostok_namesrv::NameServer;
use vostok_remoting::protocol::message::id::UniqIdGenerator;
use vostok_remoting::protocol::topic::perm;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{ConnectionConfig, FrameLimits, RemotingServer, ServerConfig};
use vostok_store::MessageStore;

use crate::config::{BrokerConfig, BrokerRole};
use crate::error::BrokerError;
use crate::grpc::GrpcServer;
use crate::processor::BrokerProcessor;
use crate::service::{self, registration};
use crate::state::client_registry::ClientRegistry;
use crate::state::long_polling::LongPolling;
use crate::state::offset::ConsumerOffsetManager;
use crate::state::pop::PopState;
use crate::state::rebalance_lock::RebalanceLockManager;
use crate::state::schedule::DelayOffsetTable;
use crate::state::stats::BrokerStats;
use crate::state::subscription::SubscriptionGroupManager;
use crate::state::timer::TimerTable;
use crate::state::topic::TopicConfigManager;
use crate::state::transaction::TransactionState;
use crate::state::Broker;

mod bridges;
mod ops;
mod security;
mod side_runtime;

use bridges::{ArrivalBridge, ConsumedBridge};
use side_runtime::SideRuntime;

/// A running broker.
pub struct BrokerHandle {
    broker: Arc<Broker>,
    servers: Vec<RemotingServer>,
    grpc: Option<GrpcServer>,
    namesrv: Option<NameServer>,
    ops: ops::OpsServers,
    /// Declared last: the runtimes stop after what runs on them.
    runtimes: Vec<SideRuntime>,
}

/// Binds `addr`; `key` is the config key that sets its port, named in the error.
async fn bind(addr: SocketAddr, key: &'static str) -> Result<TcpListener, BrokerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| BrokerError::Bind {
            addr: addr.to_string(),
            key,
            source,
        })
}

impl Broker {
    /// Starts a broker with `config`.
    pub async fn start(mut config: BrokerConfig) -> Result<BrokerHandle, BrokerError> {
        config.apply_port_offset()?;
        config.resolve_addresses();
        config.validate()?;
        let (mut config, security) = tokio::task::spawn_blocking(move || {
            security::open(&mut config).map(|security| (config, security))
        })
        .await
        .map_err(|e| BrokerError::Config {
            key: "aclEnable".into(),
            reason: format!("security start-up panicked: {e}"),
        })??;
        config.store.ha.sync_master = config.broker_role == BrokerRole::SyncMaster;
        config.store.ha.replica = config.broker_role == BrokerRole::Slave;
        if config.controller.enable {
            // No role until the controller assigns one: refuse local puts.
            config.store.ha.controller_mode = true;
            config.store.ha.replica = true;
            config.store.ha.sync_master = false;
        }
        let store_config = config.store.clone();
        let store = tokio::task::spawn_blocking(move || MessageStore::open(store_config))
            .await
            .map_err(|e| BrokerError::Config {
                key: "storePathRootDir".into(),
                reason: format!("store start-up panicked: {e}"),
            })??;

        let configured_port = config.listen_port;
        let listener = bind(config.bind_addr(config.listen_port), "listenPort").await?;
        let bound_port = listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or(config.listen_port);
        config.listen_port = bound_port;
        // Bound before anything starts, so a taken port fails the start-up.
        let grpc_listener = if config.grpc.grpc_server_enable {
            Some(
                bind(
                    config.bind_addr(config.grpc.grpc_server_port),
                    "grpcServerPort",
                )
                .await?,
            )
        } else {
            None
        };
        let ha_listener = bind_ha(&mut config, configured_port).await?;
        let ops_listeners = ops::bind_ops(&config).await?;

        let memory = vostok_remoting::ServerLimits::budget(config.memory_ceiling());
        info!(
            ceiling = config.memory_ceiling(),
            limit = memory.limit(),
            soft_limit = memory.soft_limit(),
            "memory ceiling"
        );
        let side = |name: &str| {
            SideRuntime::start(name).map_err(|source| BrokerError::Config {
                key: "maxMemoryBytes".into(),
                reason: format!("cannot start the {name} thread: {source}"),
            })
        };
        let duties = side("broker-duties")?;
        let mut runtimes = Vec::new();
        let mut namesrv = None;
        if config.is_standalone() {
            let mut ns_config = config.embedded_namesrv_config();
            ns_config.acl_enable = config.security.is_on();
            ns_config.rocketmq_home = config.security.rocketmq_home.clone();
            ns_config.tls = config.security.tls.clone();
            ns_config.auth_users =
                security
                    .guard
                    .as_ref()
                    .and_then(|g| g.metadata())
                    .map(|metadata| vostok_namesrv::AuthUsers {
                        metadata: metadata.clone(),
                        time_window: config.security.time_window,
                    });
            ns_config.embedded_broker = security
                .credentials
                .clone()
                .map(|c| (config.broker_name.clone(), c));
            let ns_listener = bind(
                config.bind_addr(ns_config.listen_port),
                "embeddedNamesrvPort",
            )
            .await?;
            let ns_addr = ns_listener
                .local_addr()
                .map_err(|source| BrokerError::Bind {
                    addr: config.bind_addr(ns_config.listen_port).to_string(),
                    key: "embeddedNamesrvPort",
                    source,
                })?;
            // On a runtime of its own, sharing the broker's memory account: route
            // queries keep answering whatever the broker's requests do.
            let ns_runtime = side("namesrv")?;
            let ns_memory = memory.clone();
            let server = ns_runtime
                .handle()
                .spawn(NameServer::start_with_budget(
                    ns_config,
                    ns_listener,
                    ns_memory,
                ))
                .await
                .map_err(|e| BrokerError::Config {
                    key: "embeddedNamesrvPort".into(),
                    reason: format!("embedded name server start-up failed: {e}"),
                })??;
            runtimes.push(ns_runtime);
            info!(addr = %ns_addr, "embedded name server started (standalone mode)");
            let reachable = if ns_addr.ip().is_unspecified() {
                SocketAddr::from(([127, 0, 0, 1], ns_addr.port()))
            } else {
                ns_addr
            };
            config.namesrv_addr = Some(reachable.to_string());
            namesrv = Some(server);
        }

        let server_tls = security.server_tls.clone();
        let ha_tls = (security.server_tls.clone(), security.client_tls.clone());
        let grpc_tls = security.grpc_tls.clone();
        let broker = Arc::new(build_state(
            config,
            store,
            bound_port,
            security,
            memory,
            duties.handle().clone(),
        ));
        runtimes.push(duties);
        if let Some(guard) = &broker.guard {
            guard.watch(broker.life.shutdown.clone());
        }
        broker
            .storage
            .store
            .set_arrival_listener(Arc::new(ArrivalBridge(broker.clone())));
        broker
            .storage
            .store
            .set_consumed_offsets(Arc::new(ConsumedBridge(broker.clone())));
        // Outcomes recorded before a restart must be known to the first END_TRANSACTION.
        let b = broker.clone();
        let _ =
            tokio::task::spawn_blocking(move || b.deferred.transactions.catch_up(&b.storage.store))
                .await;
        // Checkpoints popped before a restart must be known to the first ack.
        broker.storage.topics.get_or_create(
            &broker.pop.revive_topic,
            broker.pop.revive_queue_num,
            perm::READ | perm::WRITE,
            0,
        );
        let b = broker.clone();
        let _ = tokio::task::spawn_blocking(move || {
            b.pop.replay(&b.storage.store, &b.consumers.offsets)
        })
        .await;
        // Messages removed before a restart stay removed.
        let b = broker.clone();
        let _ = tokio::task::spawn_blocking(move || {
            crate::state::removal::replay(&b.storage.removals, &b.storage.store)
        })
        .await;
        // Retries of sends answered before a restart must find their originals.
        let b = broker.clone();
        let _ = tokio::task::spawn_blocking(move || b.rebuild_duplication_window()).await;
        let servers = serve(&broker, listener, server_tls).await;
        start_replication(&broker, ha_listener, ha_tls);
        let grpc = match grpc_listener {
            Some(l) => Some(GrpcServer::start(&broker, l, grpc_tls)?),
            None => None,
        };

        service::spawn_all(&broker);
        let ops = ops::start_ops(&broker, ops_listeners);
        if broker.config.controller.enable {
            service::replicas_manager::spawn(&broker);
        }
        registration::register_now(&broker).await;
        info!(
            broker = %broker.config.broker_name,
            addr = %broker.broker_addr,
            namesrv = %broker.namesrv.addrs.join(";"),
            "broker started"
        );
        Ok(BrokerHandle {
            broker,
            servers,
            grpc,
            namesrv,
            ops,
            runtimes,
        })
    }
}

/// A master's HA listener on `haListenPort` (by default `listenPort + 1`; a broker
/// told to listen on port 0 takes any free HA port too). A SLAVE accepts no slaves.
/// When the port is taken, a SYNC_MASTER or an explicit `haListenPort` fails the
/// start; an ASYNC_MASTER goes on without slaves, and says so.
async fn bind_ha(
    config: &mut BrokerConfig,
    configured_port: u16,
) -> Result<Option<TcpListener>, BrokerError> {
    if !config.is_master() && !config.controller.enable {
        return Ok(None);
    }
    let explicit = config.ha_listen_port.is_some();
    let port = match config.ha_listen_port {
        Some(p) => p,
        None if configured_port == 0 => 0,
        None => config.listen_port.wrapping_add(1),
    };
    let key = if explicit {
        "haListenPort"
    } else {
        "haListenPort (by default listenPort + 1)"
    };
    match bind(config.bind_addr(port), key).await {
        Ok(l) => {
            if let Ok(a) = l.local_addr() {
                config.ha_listen_port = Some(a.port());
            }
            Ok(Some(l))
        }
        Err(e)
            if !explicit
                && !config.controller.enable
                && config.broker_role == BrokerRole::AsyncMaster =>
        {
            warn!(port, error = %e, "HA port unavailable: this master accepts no slaves");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// A master serves its slaves on the HA listener; a slave starts its replication
/// client (the master's HA address comes from `haMasterAddress` or registration).
/// TLS as on the remoting port: the listener follows `tls.server.mode`, the client
/// `tls.enable` and `tls.client.*` like the broker's other outgoing connections.
fn start_replication(
    broker: &Arc<Broker>,
    ha_listener: Option<TcpListener>,
    (server_tls, client_tls): (
        Option<Arc<vostok_remoting::tls::ServerTls>>,
        Option<Arc<vostok_remoting::tls::ClientTls>>,
    ),
) {
    if let Some(listener) = ha_listener {
        let addr = format!(
            "{}:{}",
            broker.config.broker_ip2,
            broker.config.ha_listen_port()
        );
        *broker.roles.ha_server_addr.write_locked() = addr;
        broker.life.tasks.spawn(vostok_store::ha::serve(
            broker.storage.store.clone(),
            listener,
            server_tls,
            broker.life.tasks.clone(),
            broker.life.shutdown.clone(),
        ));
    }
    if !broker.config.is_master() || broker.config.controller.enable {
        let client = vostok_store::ha::HaClient::start(
            broker.storage.store.clone(),
            client_tls,
            &broker.life.tasks,
            broker.life.shutdown.clone(),
        );
        let _ = broker.roles.ha_client.set(client);
    }
}

/// The shared state, with every table loaded.
fn build_state(
    config: BrokerConfig,
    store: Arc<MessageStore>,
    bound_port: u16,
    security: security::Security,
    memory: Arc<vostok_remoting::MemoryBudget>,
    duties: tokio::runtime::Handle,
) -> Broker {
    let broker_addr = config.broker_addr(bound_port);
    Broker {
        namesrv: crate::state::NameServers {
            client: security::outer_client(&security, &duties),
            addrs: config.namesrv_list(),
            registration: tokio::sync::Mutex::new(false),
        },
        guard: security.guard,
        roles: crate::state::Roles {
            master_addr: RwLock::new(None),
            master_changed: tokio::sync::Notify::new(),
            ha_server_addr: RwLock::new(String::new()),
            ha_client: std::sync::OnceLock::new(),
            replicas: crate::state::replicas::ReplicaState::new(vostok_store::ha::EpochFile::load(
                vostok_store::ha::epoch_file_path(&config.store.store_path_root_dir),
            )),
        },
        intake: crate::state::Intake {
            permits: Semaphore::new(config.send_thread_pool_queue_capacity.max(1)),
            ids: UniqIdGenerator::new(broker_addr.ip()),
            dedupe: crate::state::dedupe::DedupeWindow::new(config.duplication_window_max_entries),
        },
        storage: crate::state::Storage {
            topics: TopicConfigManager::load(&config),
            removals: Default::default(),
            store,
        },
        consumers: crate::state::Consumers {
            subscriptions: SubscriptionGroupManager::load(&config),
            request_modes: crate::state::request_mode::MessageRequestModeManager::load(&config),
            offsets: ConsumerOffsetManager::load(&config),
            clients: ClientRegistry::new(config.metadata.clone()),
            filters: Default::default(),
            locks: RebalanceLockManager::default(),
            long_polling: LongPolling::new(),
        },
        deferred: crate::state::Deferred {
            delay_offsets: DelayOffsetTable::load(&config),
            timers: TimerTable::load(&config),
            transactions: TransactionState::load(&config),
        },
        pop: PopState::new(&config),
        broker_addr,
        runtime: crate::state::runtime_config::RuntimeConfig::new(&config),
        observed: crate::state::Observed {
            stats: BrokerStats::default(),
            metrics: crate::state::metrics::BrokerMetrics::new(
                config.ops.metrics.is_prom() || config.ops.console_on(),
            ),
            windows: Default::default(),
            boot_timestamp: now_millis(),
        },
        memory,
        life: crate::state::Lifecycle {
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            duties,
        },
        config,
    }
}

/// Serves the broker protocol on `listener`, and on `listenPort - 2` for Java clients
/// up to 4.4, which send to that "VIP" port (`fastListenEnable`).
async fn serve(
    broker: &Arc<Broker>,
    listener: TcpListener,
    tls: Option<Arc<vostok_remoting::tls::ServerTls>>,
) -> Vec<RemotingServer> {
    let limits = &broker.config.limits;
    let server_config = ServerConfig {
        connection: limits.connection(
            ConnectionConfig {
                idle_timeout: broker.config.server_channel_max_idle,
                limits: FrameLimits {
                    max_frame: broker.config.max_frame_size,
                    ..Default::default()
                },
                ..ConnectionConfig::default()
            },
            broker.memory.clone(),
        ),
        max_connections: limits.connections_for(&broker.memory),
        tls,
        ..ServerConfig::default()
    };
    let processor = Arc::new(BrokerProcessor::new(broker.clone()));
    let mut servers = vec![RemotingServer::start(
        listener,
        processor.clone(),
        server_config.clone(),
        Vec::new(),
    )];
    let port = broker.config.listen_port;
    if broker.config.fast_listen_enable && port > 2 {
        let fast = broker.config.bind_addr(port - 2);
        match TcpListener::bind(fast).await {
            Ok(l) => servers.push(RemotingServer::start(
                l,
                processor,
                server_config,
                Vec::new(),
            )),
            Err(e) => {
                warn!(addr = %fast, error = %e, "fast listen port (listenPort - 2) unavailable; serving on listenPort only (fastListenEnable=false turns it off)")
            }
        }
    }
    servers
}

impl BrokerHandle {
    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// The address clients use (`brokerIP1:listenPort`).
    pub fn addr(&self) -> SocketAddr {
        self.broker.broker_addr
    }

    /// The gRPC endpoint's bound address, when it is enabled.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.grpc.as_ref().map(GrpcServer::local_addr)
    }

    /// Successful registrations with a name server since start.
    pub fn registrations(&self) -> u64 {
        self.broker
            .observed
            .stats
            .registrations
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The bound `/metrics` address, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.ops.metrics.as_ref().map(|s| s.local_addr())
    }

    /// The bound web console address, when it is on.
    pub fn console_addr(&self) -> Option<SocketAddr> {
        self.ops.console.as_ref().map(|s| s.local_addr())
    }

    /// Name servers the broker registers with (the embedded one in standalone mode).
    pub fn namesrv_addr(&self) -> String {
        self.broker.namesrv.addrs.join(";")
    }

    /// Unregisters, stops serving, persists state, closes the store.
    pub async fn shutdown(self) {
        let broker = self.broker;
        info!("broker shutting down");
        registration::unregister_all(&broker).await;
        broker.life.shutdown.cancel();
        broker.consumers.long_polling.wake_all();
        broker.pop.polling.wake_all();
        if let Some(grpc) = self.grpc {
            grpc.shutdown().await;
        }
        self.ops.shutdown().await;
        for server in &self.servers {
            server.shutdown().await;
        }
        broker.life.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(10), broker.life.tasks.wait()).await;
        broker.consumers.offsets.persist(true);
        broker.storage.topics.persist();
        broker.consumers.subscriptions.persist();
        broker.consumers.request_modes.persist();
        broker.deferred.delay_offsets.persist();
        broker.deferred.timers.persist();
        broker.deferred.transactions.persist();
        broker.namesrv.client.shutdown().await;
        if let Some(ns) = self.namesrv {
            ns.shutdown().await;
        }
        let store = broker.storage.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.shutdown()).await;
        drop(self.runtimes);
        info!("broker stopped");
    }
}
