//! The remoting server: accepts connections and serves requests through one
//! [`RequestProcessor`].
//!
//! A server starts from a listener the caller bound (tests bind `127.0.0.1:0`), keeps
//! a table of live channels (the broker sends requests back over them), and shuts down
//! gracefully: it stops accepting and reading, lets requests in flight answer, then
//! closes every connection.
//!
//! Admission: each connection reserves [`CONNECTION_BYTES`] of the memory budget and
//! counts against `max_connections`. At the limit, a new connection makes room by
//! closing the connection idle the longest (one with nothing in flight or queued,
//! idle for at least a second and not protected, see [`Channel::protect`]); when no
//! connection qualifies, or the budget has no room, the new one is closed at once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::channel::{Channel, ChannelContext, ConnectionConfig};
use crate::limits::CONNECTION_BYTES;
use crate::processor::{BoxFuture, RequestProcessor, RpcHook, RpcHooks};
use crate::support::log_limit::LogLimit;
use crate::support::sync::MutexExt;
use crate::support::time::uptime_millis;
use crate::tls::{ServerTls, Stream};
use crate::RemotingCommand;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub connection: ConnectionConfig,
    /// Upper bound on a graceful shutdown.
    pub shutdown_timeout: Duration,
    /// TLS per `tls.server.mode`; `None` serves plain connections only.
    pub tls: Option<Arc<ServerTls>>,
    /// Connections served at once (`serverMaxConnections`).
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            connection: ConnectionConfig::default(),
            shutdown_timeout: Duration::from_secs(10),
            tls: None,
            max_connections: usize::MAX,
        }
    }
}

type ChannelTable = Arc<Mutex<HashMap<u64, Channel>>>;

/// A running server.
pub struct RemotingServer {
    local_addr: SocketAddr,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    channels: ChannelTable,
    shutdown_timeout: Duration,
}

/// Wraps the user's processor to keep the channel table current.
struct Tracking {
    inner: Arc<dyn RequestProcessor>,
    channels: ChannelTable,
}

impl RequestProcessor for Tracking {
    fn process<'a>(
        &'a self,
        channel: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        self.inner.process(channel, request)
    }

    fn on_channel_connected(&self, channel: &Channel) {
        self.channels.locked().insert(channel.id(), channel.clone());
        self.inner.on_channel_connected(channel);
    }

    fn on_channel_closed(&self, channel: &Channel) {
        self.channels.locked().remove(&channel.id());
        self.inner.on_channel_closed(channel);
    }
}

impl RemotingServer {
    /// Binds `addr` and starts serving.
    pub async fn bind(
        addr: &str,
        processor: Arc<dyn RequestProcessor>,
        config: ServerConfig,
    ) -> std::io::Result<RemotingServer> {
        let listener = TcpListener::bind(addr).await?;
        Ok(Self::start(listener, processor, config, Vec::new()))
    }

    /// Starts serving on a bound listener; `hooks` run around every request served.
    pub fn start(
        listener: TcpListener,
        processor: Arc<dyn RequestProcessor>,
        config: ServerConfig,
        hooks: Vec<Arc<dyn RpcHook>>,
    ) -> RemotingServer {
        let local_addr = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let channels: ChannelTable = Arc::default();
        let mut rpc_hooks = RpcHooks::default();
        for hook in hooks {
            rpc_hooks.push(hook);
        }
        let processor: Arc<dyn RequestProcessor> = Arc::new(Tracking {
            inner: processor,
            channels: channels.clone(),
        });
        let admission = Admission {
            channels: channels.clone(),
            max_connections: config.max_connections.max(1),
        };
        tracker.spawn(accept_loop(
            listener,
            processor,
            rpc_hooks,
            config.connection.clone(),
            config.tls.clone(),
            admission,
            tracker.clone(),
            shutdown.clone(),
        ));
        info!(addr = %local_addr, "remoting server listening");
        RemotingServer {
            local_addr,
            shutdown,
            tracker,
            channels,
            shutdown_timeout: config.shutdown_timeout,
        }
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The live connections.
    pub fn channels(&self) -> Vec<Channel> {
        self.channels.locked().values().cloned().collect()
    }

    /// A token cancelled when the server begins shutting down.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Stops accepting and reading, answers the requests in flight, closes connections.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tracker.close();
        if tokio::time::timeout(self.shutdown_timeout, self.tracker.wait())
            .await
            .is_err()
        {
            warn!(addr = %self.local_addr, "remoting server shutdown timed out; closing connections");
            for channel in self.channels() {
                channel.close();
            }
        }
        info!(addr = %self.local_addr, "remoting server stopped");
    }
}

impl Drop for RemotingServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Decides whether a new connection is served.
struct Admission {
    channels: ChannelTable,
    max_connections: usize,
}

/// A connection closed to make room must have been idle this long.
const MIN_IDLE_TO_EVICT_MS: u64 = 1000;

static REFUSED: LogLimit = LogLimit::new();
static EVICTED: LogLimit = LogLimit::new();

impl Admission {
    /// Makes room for one more connection if there is none; false when there is no
    /// connection to close for it.
    fn make_room(&self, peer: SocketAddr) -> bool {
        let channels = self.channels.locked();
        if channels.len() < self.max_connections {
            return true;
        }
        let live = channels.values().filter(|c| !c.is_closed()).count();
        if live < self.max_connections {
            return true; // the rest are closing
        }
        let now = uptime_millis();
        let victim = channels
            .values()
            .filter(|c| {
                !c.is_closed()
                    && !c.is_protected()
                    && c.requests_in_flight() == 0
                    && c.queued_bytes() == 0
                    && now.saturating_sub(c.last_activity_millis()) >= MIN_IDLE_TO_EVICT_MS
            })
            .min_by_key(|c| c.last_activity_millis());
        match victim {
            Some(victim) => {
                if let Some(suppressed) = EVICTED.allow() {
                    info!(%peer, closed = %victim.peer_addr(), idle_ms = now.saturating_sub(victim.last_activity_millis()), limit = self.max_connections, suppressed, "connection limit reached: closing the connection idle the longest");
                }
                victim.close();
                true
            }
            None => false,
        }
    }
}

fn refuse(peer: SocketAddr, reason: &'static str) {
    if let Some(suppressed) = REFUSED.allow() {
        warn!(%peer, reason, suppressed, "connection refused");
    }
}

#[allow(clippy::too_many_arguments)] // the server's parts, handed over once at start
async fn accept_loop(
    listener: TcpListener,
    processor: Arc<dyn RequestProcessor>,
    hooks: RpcHooks,
    config: ConnectionConfig,
    tls: Option<Arc<ServerTls>>,
    admission: Admission,
    tracker: TaskTracker,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                debug!(%peer, "connection accepted");
                let Some(charge) = config.budget.try_reserve(CONNECTION_BYTES) else {
                    refuse(peer, "memory ceiling reached");
                    continue;
                };
                if !admission.make_room(peer) {
                    refuse(
                        peer,
                        "connection limit reached and no idle connection to close",
                    );
                    continue;
                }
                let ctx = ChannelContext {
                    config: config.clone(),
                    processor: processor.clone(),
                    hooks: hooks.clone(),
                    tracker: tracker.clone(),
                    shutdown: shutdown.clone(),
                    runtime: None,
                    charge: Some(charge),
                };
                match &tls {
                    None => start_channel(Stream::Plain(stream), ctx),
                    // The first byte and the handshake are awaited off the accept loop.
                    Some(tls) => {
                        let tls = tls.clone();
                        tracker.spawn(async move {
                            if let Some(stream) = tls.accept(stream).await {
                                start_channel(stream, ctx);
                            }
                        });
                    }
                }
            }
            Err(e) => {
                // Out of file descriptors and similar: back off instead of spinning.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

fn start_channel(stream: Stream, ctx: ChannelContext) {
    let peer = stream.peer_addr().ok();
    if let Err(e) = Channel::spawn(stream, ctx) {
        warn!(?peer, error = %e, "could not set up connection");
    }
}
