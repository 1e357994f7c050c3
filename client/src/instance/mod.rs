//! The client instance (Java `MQClientInstance`): one per client id and name-server
//! list, shared by every producer and consumer of a process that uses them.
//!
//! It owns the connections ([`RemotingClient`]): one to each broker and name server,
//! shared by every request as in Apache's client, and a second to each broker for the
//! long-polling reads (PULL_MESSAGE, POP_MESSAGE) while the shared one is busy (see
//! [`ClientInstance::long_polls`]). It also owns, one file each:
//!
//! * [`config`]: [`ClientConfig`], the settings every producer and consumer shares.
//! * `registry`: the producer and consumer groups it serves, and what it calls on them.
//! * `route_table`: topic routes from the name servers, broker addresses.
//! * `heartbeat`: HEART_BEAT to every broker.
//! * `timers`: the periodic tasks below.
//! * `reply`: requests waiting for their reply.
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

pub mod config;
mod heartbeat;
pub(crate) mod registry;
pub(crate) mod reply;
mod route_table;
mod timers;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::info;
use vostok_remoting::protocol::message::id::UniqIdGenerator;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::RemotingClient;

use crate::error::{ClientError, Result};
use crate::processor::ClientProcessor;
use heartbeat::Heartbeat;
use registry::Registry;
use reply::ReplyWaiters;
use route_table::RouteTable;

pub use config::{local_ip, parse_namesrv_addr, ClientConfig};

type Instances = Mutex<HashMap<String, Weak<ClientInstance>>>;

/// Every live instance of the process, by client id and name servers.
fn instances() -> &'static Instances {
    static INSTANCES: std::sync::OnceLock<Instances> = std::sync::OnceLock::new();
    INSTANCES.get_or_init(Default::default)
}

/// Requests waiting for their answer on a broker connection past which a long poll
/// takes the second connection: 64 sends ahead of it are ~0.3 ms of the broker's work,
/// about what the second connection's extra wake-ups cost.
const BUSY_CONNECTION: usize = 64;

/// See the module documentation.
pub struct ClientInstance {
    key: String,
    client_id: String,
    config: ClientConfig,
    remoting: RemotingClient,
    /// The second connections, for long polls (see [`ClientInstance::long_polls`]).
    polls: RemotingClient,
    uniq: UniqIdGenerator,
    routes: RouteTable,
    registry: Registry,
    heartbeat: Heartbeat,
    reply_waiters: ReplyWaiters,
    rebalance_now: Arc<Notify>,
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
        // Clients signing with different keys must not share connections.
        let access_key = config
            .credentials
            .as_ref()
            .map_or("", |c| c.access_key.as_str());
        let key = format!("{client_id}|{}|{access_key}", config.namesrv_addr.join(";"));
        let mut instances = instances().locked();
        if let Some(existing) = instances.get(&key).and_then(Weak::upgrade) {
            if !existing.shutdown.is_cancelled() {
                return Ok(existing);
            }
        }
        let instance = Arc::new_cyclic(|weak: &Weak<ClientInstance>| {
            let processor = Arc::new(ClientProcessor::new(weak.clone()));
            let remoting = RemotingClient::new(config.remoting.clone(), Some(processor.clone()));
            config.install_hooks(&remoting);
            let polls = RemotingClient::new(config.remoting.clone(), Some(processor));
            config.install_hooks(&polls);
            ClientInstance {
                key: key.clone(),
                client_id: client_id.clone(),
                uniq: UniqIdGenerator::new(config.client_ip()),
                config: config.clone(),
                remoting,
                polls,
                routes: RouteTable::default(),
                registry: Registry::default(),
                heartbeat: Heartbeat::default(),
                reply_waiters: ReplyWaiters::default(),
                rebalance_now: Arc::new(Notify::new()),
                started: AtomicBool::new(false),
                shutdown: CancellationToken::new(),
                tracker: TaskTracker::new(),
            }
        });
        instances.insert(key, Arc::downgrade(&instance));
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

    /// The connections a long poll to `addr` goes over: the shared ones, unless more
    /// than [`BUSY_CONNECTION`] requests on the shared connection to `addr` are waiting
    /// for their answer; then a second connection of its own. Behind a producer's window
    /// of sends a pull waited for all of them (with 1,024 async sends in flight, a push
    /// consumer in the same process fell seconds behind its producer); on a quiet
    /// connection its answer comes in the same read as the sends' answers, where a
    /// second connection costs each answer a wake-up of its own on both sides.
    pub(crate) fn long_polls(&self, addr: &str) -> &RemotingClient {
        if self.remoting.awaiting_answers(addr) > BUSY_CONNECTION {
            &self.polls
        } else {
            &self.remoting
        }
    }

    pub(crate) fn api_timeout(&self) -> Duration {
        self.config.mq_client_api_timeout
    }

    pub(crate) fn next_uniq_id(&self) -> String {
        self.uniq.next_id()
    }

    /// A new unique key, appended to `out`.
    pub(crate) fn push_uniq_id(&self, out: &mut String) {
        self.uniq.push_next_id(out)
    }

    pub(crate) fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    pub(crate) fn reply_waiters(&self) -> &ReplyWaiters {
        &self.reply_waiters
    }

    /// Stops the timers and closes every connection.
    pub(crate) async fn shutdown(&self) {
        if self.shutdown.is_cancelled() {
            return;
        }
        self.shutdown.cancel();
        {
            let mut instances = instances().locked();
            if instances
                .get(&self.key)
                .is_some_and(|w| w.upgrade().is_none_or(|i| i.shutdown.is_cancelled()))
            {
                instances.remove(&self.key);
            }
        }
        self.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.tracker.wait()).await;
        tokio::join!(self.remoting.shutdown(), self.polls.shutdown());
        info!(client_id = %self.client_id, "client instance shut down");
    }
}
