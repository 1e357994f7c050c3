//! The remoting server: accepts connections and serves requests through one
//! [`RequestProcessor`].
//!
//! A server starts from a listener the caller bound (tests bind `127.0.0.1:0`), keeps
//! a table of live channels (the broker sends requests back over them), and shuts down
//! gracefully: it stops accepting and reading, lets requests in flight answer, then
//! closes every connection.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::channel::{Channel, ChannelContext, ConnectionConfig};
use crate::processor::{BoxFuture, RequestProcessor, RpcHook, RpcHooks};
use crate::support::sync::MutexExt;
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
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            connection: ConnectionConfig::default(),
            shutdown_timeout: Duration::from_secs(10),
            tls: None,
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
        tracker.spawn(accept_loop(
            listener,
            processor,
            rpc_hooks,
            config.connection.clone(),
            config.tls.clone(),
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

async fn accept_loop(
    listener: TcpListener,
    processor: Arc<dyn RequestProcessor>,
    hooks: RpcHooks,
    config: ConnectionConfig,
    tls: Option<Arc<ServerTls>>,
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
                let ctx = ChannelContext {
                    config: config.clone(),
                    processor: processor.clone(),
                    hooks: hooks.clone(),
                    tracker: tracker.clone(),
                    shutdown: shutdown.clone(),
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
