//! Vostok's controller (`mqcontroller`, or inside the name server with
//! `enableControllerInNamesrv`): RocketMQ 5's controller mode. A quorum of
//! controllers keeps, per broker group, the master, the master epoch and the
//! SyncStateSet (the replicas holding everything acknowledged), and elects a new
//! master from that set when the master's heartbeats stop (docs/controller.md).
//!
//! # Modules
//!
//! * [`replicas`]: the model without I/O: the replicated [`replicas::ReplicasInfo`]
//!   changed by [`replicas::Command`]s, the local heartbeat table, the election rule.
//! * [`raft`]: openraft with a durable log and snapshot under `controllerStorePath`
//!   and Raft messages on the remoting transport.
//! * `node`: one controller's shared state (Raft handle, applied metadata, heartbeats).
//! * `processor`: the request processor, one function per request code.
//! * `scan`: the leader's periodic look for dead masters.
//! * `notify`: tells a group's brokers their new roles after an election.
//! * [`config`], [`runtime_config`] (the keys UPDATE_CONTROLLER_CONFIG changes),
//!   [`mod@error`], [`cli`].
//!
//! # Request flow
//!
//! ```text
//! broker/admin ─▶ RemotingServer (peer port) ─▶ [ACL check] ─▶ processor
//!    heartbeat ─▶ heartbeat table (every controller)
//!    read      ─▶ applied metadata (leader only)
//!    write     ─▶ leader decides ─▶ Raft log (majority, fsync) ─▶ apply ─▶ outcome ─▶ answer
//! peers ─▶ RAFT_VOTE / RAFT_APPEND_ENTRIES / RAFT_INSTALL_SNAPSHOT ─▶ openraft
//! scan (leader, every scanNotActiveBrokerInterval) ─▶ dead master ─▶ election write
//! election applied ─▶ notify queue ─▶ NOTIFY_BROKER_ROLE_CHANGED (oneway) ─▶ alive brokers
//! ```

pub mod cli;
pub mod config;
pub mod error;
mod node;
mod notify;
mod processor;
pub mod raft;
pub mod replicas;
pub mod runtime_config;
mod scan;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use openraft::BasicNode;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};
use vostok_auth::{Guard, GuardConfig};
use vostok_remoting::auth::AclClientHook;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::{ClientConfig, RemotingClient, RemotingServer, ServerConfig};

pub use config::ControllerConfig;
pub use error::ControllerError;

use node::ControllerNode;
use processor::ControllerProcessor;
use raft::{LogStore, Network, Raft, StateMachine};
use replicas::BrokerHeartbeats;

/// The accounts of `plain_acl.yml` when `aclEnable` is on (read off the runtime).
async fn open_guard(config: &ControllerConfig) -> Result<Option<Arc<Guard>>, ControllerError> {
    if !config.acl_enable {
        return Ok(None);
    }
    let guard_config = GuardConfig {
        acl_enable: true,
        rocketmq_home: vostok_auth::plain_store::rocketmq_home_or(&config.rocketmq_home),
        ..GuardConfig::default()
    };
    let opened = tokio::task::spawn_blocking(move || Guard::open(&guard_config))
        .await
        .map_err(|e| ControllerError::Acl(e.to_string()))?;
    Ok(opened
        .map_err(|e| ControllerError::Acl(e.to_string()))?
        .map(Arc::new))
}

/// A running controller.
pub struct Controller {
    server: RemotingServer,
    node: Arc<ControllerNode>,
    client: Arc<RemotingClient>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl Controller {
    /// Serves on `listener` (bound by the caller to this controller's peer port).
    pub async fn start(
        config: ControllerConfig,
        listener: TcpListener,
    ) -> Result<Controller, ControllerError> {
        config.validate()?;
        let dir = config.store_path.join("raft");
        let io = |source| ControllerError::Io {
            action: "opening the Raft log in",
            path: dir.clone(),
            source,
        };
        let log = LogStore::open(&dir).map_err(io)?;
        let sm = StateMachine::open(&dir).map_err(io)?;
        let applied = sm.shared();
        let guard = open_guard(&config).await?;
        let client = Arc::new(RemotingClient::new(ClientConfig::default(), None));
        if let Some(credentials) = config.credentials() {
            client.register_rpc_hook(Arc::new(AclClientHook::new(credentials)));
        } else if config.acl_enable {
            warn!("aclEnable is on but accessKey is not set: the other controllers will refuse this one's Raft messages");
        }
        if config.acl_enable
            && config.credentials().is_some()
            && !config.raft_access_keys().contains(&config.access_key)
        {
            warn!(
                access_key = %config.access_key,
                "accessKey is not one of controllerAccessKeys: controllers with the same list \
                 will refuse this one's Raft messages"
            );
        }
        let raft_config = openraft::Config {
            cluster_name: config.group.clone(),
            heartbeat_interval: config.raft_heartbeat_interval.as_millis() as u64,
            election_timeout_min: config.raft_election_timeout.as_millis() as u64,
            election_timeout_max: config.raft_election_timeout.as_millis() as u64 * 2,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(1000),
            max_in_snapshot_log_to_keep: 100,
            ..openraft::Config::default()
        }
        .validate()
        .map_err(|e| ControllerError::Raft(e.to_string()))?;
        let node_id = config.self_node();
        let raft = Raft::new(
            node_id,
            Arc::new(raft_config),
            Network::new(client.clone()),
            log,
            sm,
        )
        .await
        .map_err(|e| ControllerError::Raft(e.to_string()))?;
        // Every controller proposes the same membership; only a pristine node takes it
        // (openraft allows initializing all nodes with the same config).
        let members: BTreeMap<u64, BasicNode> = config
            .peers
            .iter()
            .filter_map(|(id, addr)| Some((config::node_number(id)?, BasicNode::new(addr))))
            .collect();
        if let Err(e) = raft.initialize(members).await {
            info!(reason = %e, "Raft already initialized");
        }
        let heartbeats =
            BrokerHeartbeats::new(config.heartbeat_timeout.as_millis() as i64, now_millis());
        info!(node = node_id, "controller starting");
        let owned = |props: Vec<(&'static str, String)>| -> Vec<(String, String)> {
            props.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
        };
        vostok_remoting::support::process::log_configuration(
            &owned(config.to_properties()),
            &owned(ControllerConfig::default().to_properties()),
        );
        let (notifier, notices) = notify::RoleNotifier::new();
        let node = Arc::new(ControllerNode {
            metrics: raft.metrics(),
            runtime: runtime_config::RuntimeConfig::new(&config),
            config,
            node_id,
            raft,
            applied,
            heartbeats,
            notifier,
        });
        let server = RemotingServer::start(
            listener,
            Arc::new(ControllerProcessor {
                raft_access_keys: node.config.raft_access_keys(),
                node: node.clone(),
                guard: guard.clone(),
            }),
            ServerConfig::default(),
            Vec::new(),
        );
        let stop = CancellationToken::new();
        if let Some(guard) = &guard {
            guard.watch(stop.clone());
        }
        let tasks = TaskTracker::new();
        tasks.spawn(scan::run(node.clone(), stop.clone()));
        tasks.spawn(notify::run(
            node.clone(),
            client.clone(),
            notices,
            stop.clone(),
        ));
        Ok(Controller {
            server,
            node,
            client,
            stop,
            tasks,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    pub fn is_leader(&self) -> bool {
        self.node.is_leader()
    }

    /// Stops serving, the scan, the role change notices and Raft.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.server.shutdown().await;
        if let Err(e) = self.node.raft.shutdown().await {
            tracing::warn!(error = %e, "Raft did not stop cleanly");
        }
        self.client.shutdown().await;
    }
}
