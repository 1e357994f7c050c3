//! Vostok's name server (`mqnamesrv`): the registry where RocketMQ brokers announce
//! themselves and their topics, and where producers, consumers and tools look up
//! which broker serves which topic. Speaks Apache RocketMQ's name-server requests,
//! so RocketMQ 4.x/5.x clients and brokers use it unchanged.
//!
//! Several name servers run side by side with no coordination between them: every
//! broker registers with all of them, every client asks any of them. A name server
//! keeps no route state on disk; after a restart the routes come back with the next
//! broker registrations (every 30 s). Only the KV store is persisted.
//!
//! # Modules
//!
//! * [`route`]: the route table (`RouteInfoManager`): clusters, brokers, topics and
//!   live brokers, behind one `RwLock`; pure operations that take `now`.
//! * [`housekeeping`]: the periodic expiry sweep.
//! * [`kv_config`]: the KV store and its file `kvConfig.json`, written atomically
//!   with a `.bak` of the previous version (`vostok_remoting::support::config_file`).
//! * `processor` (private): the request processor, one function per request code.
//! * `security` (private): the ACL guard and TLS of the listener, from the config.
//! * [`config`]: [`NamesrvConfig`], with RocketMQ's key names and defaults, read
//!   from `.properties` files (`vostok_remoting::support::properties`).
//! * [`mod@error`]: the crate's error type, [`NamesrvError`].
//! * [`cli`]: the `mqnamesrv` command line (settings from defaults, a `.properties`
//!   file and flags).
//!
//! # Request flow
//!
//! ```text
//! TCP ─▶ vostok_remoting::RemotingServer ─▶ processor: match request code
//!          │                                   ├─ broker:  REGISTER_BROKER ... ─▶ route (write lock)
//!          │                                   ├─ client:  GET_ROUTEINFO_BY_TOPIC ─▶ route (read lock) ─▶ JSON
//!          │                                   ├─ admin:   topic lists, permissions, config
//!          │                                   └─ kv:      KV store ─▶ kvConfig.json (blocking pool)
//!          └─ connection closed ─▶ route: drop the brokers registered over it
//! housekeeping (every 5 s) ─▶ route: drop brokers silent for 120 s, close their connections
//! ```
//!
//! # Embedding
//!
//! ```no_run
//! # async fn run() -> Result<(), vostok_namesrv::NamesrvError> {
//! use vostok_namesrv::{NameServer, NamesrvConfig};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
//! let config = NamesrvConfig { kv_config_path: "/tmp/ns/kvConfig.json".into(), ..Default::default() };
//! let namesrv = NameServer::start(config, listener).await?;
//! println!("name server at {}", namesrv.local_addr());
//! namesrv.shutdown().await;
//! # Ok(()) }
//! ```

pub mod cli;
pub mod config;
pub mod error;
pub mod housekeeping;
pub mod kv_config;
mod metrics;
mod processor;
pub mod route;
mod security;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info};
use vostok_remoting::{ConnectionConfig, MemoryBudget, RemotingServer, ServerConfig, ServerLimits};

pub use config::NamesrvConfig;
pub use error::NamesrvError;
pub use kv_config::KvConfigManager;
pub use route::RouteInfoManager;
pub use security::AuthUsers;

use processor::{NamesrvProcessor, Shared};

/// A running name server.
pub struct NameServer {
    server: RemotingServer,
    /// `enableControllerInNamesrv`: the controller running beside it.
    controller: Option<vostok_controller::Controller>,
    shared: Arc<Shared>,
    /// Stops the housekeeping task.
    stop: CancellationToken,
    tasks: TaskTracker,
    /// `/metrics`, when `metricsExporterType=PROM`.
    metrics: Option<vostok_observe::HttpServer>,
}

impl NameServer {
    /// Serves on an already bound listener (tests and an embedding broker bind
    /// `127.0.0.1:0` or `:9876` themselves). Loads the KV store first; a corrupt
    /// `kvConfig.json` without a usable backup is an error.
    pub async fn start(
        config: NamesrvConfig,
        listener: TcpListener,
    ) -> Result<NameServer, NamesrvError> {
        config.validate()?;
        let budget = ServerLimits::budget(config.memory_ceiling());
        Self::start_with_budget(config, listener, budget).await
    }

    /// Like [`NameServer::start`], with the memory account of an embedding process
    /// (a standalone broker shares its own) instead of one sized from the config.
    pub async fn start_with_budget(
        config: NamesrvConfig,
        listener: TcpListener,
        budget: Arc<MemoryBudget>,
    ) -> Result<NameServer, NamesrvError> {
        config.validate()?;
        let local_addr = listener.local_addr().map_err(NamesrvError::Listener)?;
        let kv_path = config.kv_config_path.clone();
        let kv = tokio::task::spawn_blocking(move || KvConfigManager::load(kv_path))
            .await
            .map_err(|source| NamesrvError::Task {
                what: "loading the KV config",
                source,
            })??;
        let route = Arc::new(RouteInfoManager::new((&config).into()));
        let (guard, tls) = security::open(&config).await?;
        let followed = config.auth_users.is_none();
        let mut config = config;
        config.auth_users = security::open_users(&config).await?;
        let server_config = ServerConfig {
            connection: config.limits.connection(
                ConnectionConfig {
                    idle_timeout: Duration::from_secs(config.server_channel_max_idle_time_seconds),
                    ..ConnectionConfig::default()
                },
                budget.clone(),
            ),
            max_connections: config.limits.connections_for(&budget),
            tls,
            ..ServerConfig::default()
        };
        let scan_interval = config.scan_not_active_broker_interval;
        let rpc = vostok_observe::RpcMetrics::default();
        let metrics = metrics::start(&config, local_addr, &rpc, route.clone()).await?;
        info!(addr = %local_addr, "name server starting");
        vostok_remoting::support::process::log_configuration(
            &config.to_properties(),
            &NamesrvConfig::default().to_properties(),
        );
        let shared = Arc::new(Shared {
            live: std::sync::RwLock::new(config.clone()),
            config,
            route: route.clone(),
            kv: Arc::new(kv),
            started: vostok_remoting::support::time::monotonic(),
            connections: AtomicUsize::new(0),
            guard,
            rpc: metrics.is_some().then_some(rpc),
        });
        let server = RemotingServer::start(
            listener,
            Arc::new(NamesrvProcessor::new(shared.clone())),
            server_config,
            Vec::new(),
        );
        let stop = CancellationToken::new();
        let tasks = TaskTracker::new();
        if let Some(guard) = &shared.guard {
            guard.watch(stop.clone());
        }
        tasks.spawn(housekeeping::run(route, scan_interval, stop.clone()));
        if let Some(users) = shared.config.auth_users.clone().filter(|_| followed) {
            tasks.spawn(security::follow_users(users, stop.clone()));
        }
        tasks.close();
        let controller = if shared.config.enable_controller_in_namesrv {
            let c = shared.config.controller.clone();
            let listener = vostok_controller::cli::bind(&c).await?;
            let controller = vostok_controller::Controller::start(c, listener).await?;
            info!(addr = %controller.local_addr(), "controller started in the name server");
            Some(controller)
        } else {
            None
        };
        info!(addr = %local_addr, "name server started");
        Ok(NameServer {
            controller,
            server,
            shared,
            stop,
            tasks,
            metrics,
        })
    }

    /// The address the server listens on (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The bound `/metrics` address, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().map(|m| m.local_addr())
    }

    pub fn config(&self) -> &NamesrvConfig {
        &self.shared.config
    }

    /// The route table, for an embedding broker, operators and tests.
    pub fn route_info(&self) -> &Arc<RouteInfoManager> {
        &self.shared.route
    }

    pub fn kv_config(&self) -> &Arc<KvConfigManager> {
        &self.shared.kv
    }

    /// Open connections (brokers, clients, tools). A connection that closed stops
    /// counting only once the brokers registered over it are out of the routes.
    pub fn connection_count(&self) -> usize {
        self.shared.connections.load(Ordering::Acquire)
    }

    /// Runs the expiry sweep once at `now`, as the periodic task does; returns how
    /// many brokers were dropped. Lets tests expire brokers without waiting.
    pub fn scan_not_active_brokers(&self, now: Instant) -> usize {
        housekeeping::sweep(&self.shared.route, now).len()
    }

    /// Stops the server: no new connections or requests, requests in flight are
    /// answered, connections closed; then a KV change not yet on disk is written.
    /// Calling it again does nothing more.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tasks.wait().await;
        self.server.shutdown().await;
        if let Some(m) = &self.metrics {
            m.shutdown().await;
        }
        if let Some(c) = &self.controller {
            c.shutdown().await;
        }
        let kv = self.shared.kv.clone();
        match tokio::task::spawn_blocking(move || kv.persist_if_dirty()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => error!(error = %e, "KV config not persisted at shutdown"),
            Err(e) => error!(error = %e, "KV config persist task failed at shutdown"),
        }
        info!(addr = %self.local_addr(), "name server stopped");
    }
}

impl Drop for NameServer {
    fn drop(&mut self) {
        // The remoting server stops itself on drop; the sweep must stop with it.
        self.stop.cancel();
    }
}
