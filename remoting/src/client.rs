//! The remoting client: one multiplexed connection per address.
//!
//! Connections are opened on first use and re-opened on the next use after they were
//! lost. Calls come in three forms, as in RocketMQ's `NettyRemotingClient`:
//! [`RemotingClient::invoke_sync`] (await the response), [`RemotingClient::invoke_async`]
//! (queue the request, get a future for the response; bounded by a semaphore) and
//! [`RemotingClient::invoke_oneway`] (no response; its own semaphore). Requests the
//! server sends are served by the processor given at construction.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::debug;

use crate::channel::{Channel, ChannelContext, ConnectionConfig, PendingResponse};
use crate::command::RemotingCommand;
use crate::error::{RemotingError, Result};
use crate::processor::{NotSupported, RequestProcessor, RpcHook, RpcHooks};
use crate::support::sync::{MutexExt, RwLockExt};
use crate::tls::{ClientTls, Stream};

/// Client settings (RocketMQ `NettyClientConfig` defaults).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub connection: ConnectionConfig,
    /// `connectTimeoutMillis`.
    pub connect_timeout: Duration,
    /// `clientAsyncSemaphoreValue`: async calls awaiting a response.
    pub async_permits: usize,
    /// `clientOnewaySemaphoreValue`: oneway calls not yet queued.
    pub oneway_permits: usize,
    /// Wrap every connection in TLS (`tls.enable`); `None` connects in plain TCP.
    pub tls: Option<Arc<ClientTls>>,
    /// The runtime every connection's tasks run on, whichever task connects; the
    /// caller's when `None`. A broker runs its name-server connections on its own
    /// small runtime, so that no request flood can hold up its registration.
    pub runtime: Option<tokio::runtime::Handle>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connection: ConnectionConfig::default(),
            connect_timeout: Duration::from_secs(3),
            async_permits: 65_535,
            oneway_permits: 65_535,
            tls: None,
            runtime: None,
        }
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<Channel>>>;

/// A client to any number of servers.
pub struct RemotingClient {
    config: ClientConfig,
    slots: Mutex<HashMap<String, Slot>>,
    /// Connected channels by address: the lock-free-ish fast path of every call.
    live: RwLock<HashMap<String, Channel>>,
    processor: Arc<dyn RequestProcessor>,
    hooks: RwLock<RpcHooks>,
    async_permits: Arc<Semaphore>,
    oneway_permits: Arc<Semaphore>,
    tracker: TaskTracker,
    shutdown: CancellationToken,
}

/// The response of an [`RemotingClient::invoke_async`] call: no box and no timer of
/// its own (the connection's sweeper fails it at its deadline).
pub struct ResponseFuture {
    pending: PendingResponse,
    /// The async permit, given back when the answer is in (or the future dropped).
    permit: Option<OwnedSemaphorePermit>,
    /// The hooks' view of the call, kept only when they want the response.
    after: Option<(RpcHooks, String, RemotingCommand)>,
}

impl Future for ResponseFuture {
    type Output = Result<RemotingCommand>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut response = match this.pending.poll_response(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(outcome) => outcome?,
        };
        this.permit = None;
        if let Some((hooks, addr, original)) = &this.after {
            hooks.after(addr, original, &mut response);
        }
        Poll::Ready(Ok(response))
    }
}

impl RemotingClient {
    /// A client whose connections serve server-initiated requests with `processor`
    /// (REQUEST_CODE_NOT_SUPPORTED for all when `None`).
    pub fn new(config: ClientConfig, processor: Option<Arc<dyn RequestProcessor>>) -> Self {
        RemotingClient {
            async_permits: Arc::new(Semaphore::new(config.async_permits)),
            oneway_permits: Arc::new(Semaphore::new(config.oneway_permits)),
            config,
            slots: Mutex::new(HashMap::new()),
            live: RwLock::new(HashMap::new()),
            processor: processor.unwrap_or_else(|| Arc::new(NotSupported)),
            hooks: RwLock::new(RpcHooks::default()),
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Adds a hook run around every call (`before_request` may add ext fields).
    pub fn register_rpc_hook(&self, hook: Arc<dyn RpcHook>) {
        self.hooks.write_locked().push(hook);
    }

    fn hooks(&self) -> RpcHooks {
        self.hooks.read_locked().clone()
    }

    /// The live connection to `addr`, connecting if there is none.
    pub async fn channel(&self, addr: &str) -> Result<Channel> {
        self.channel_with_timeout(addr, self.config.connect_timeout)
            .await
    }

    /// The open connection to `addr`, if there is one (no connect, no clock read).
    fn live_channel(&self, addr: &str) -> Option<Channel> {
        if self.shutdown.is_cancelled() {
            return None;
        }
        self.live
            .read_locked()
            .get(addr)
            .filter(|channel| !channel.is_closed())
            .cloned()
    }

    async fn channel_with_timeout(&self, addr: &str, timeout: Duration) -> Result<Channel> {
        if self.shutdown.is_cancelled() {
            return Err(RemotingError::Shutdown("client"));
        }
        if let Some(channel) = self.live_channel(addr) {
            return Ok(channel);
        }
        let slot = {
            let mut slots = self.slots.locked();
            slots.entry(addr.to_owned()).or_default().clone()
        };
        // One connect per address at a time; callers arriving meanwhile wait here.
        let mut guard = slot.lock().await;
        if let Some(channel) = guard.as_ref() {
            if !channel.is_closed() {
                return Ok(channel.clone());
            }
            debug!(addr, "connection lost earlier; reconnecting");
        }
        let connect_timeout = timeout.min(self.config.connect_timeout);
        let stream = match tokio::time::timeout(connect_timeout, self.connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => {
                return Err(RemotingError::Connect {
                    addr: addr.to_owned(),
                    source,
                })
            }
            Err(_) => {
                return Err(RemotingError::ConnectTimeout {
                    addr: addr.to_owned(),
                    timeout: connect_timeout,
                })
            }
        };
        let channel = Channel::spawn(
            stream,
            ChannelContext {
                config: self.config.connection.clone(),
                processor: self.processor.clone(),
                hooks: RpcHooks::default(),
                tracker: self.tracker.clone(),
                shutdown: self.shutdown.clone(),
                runtime: self.config.runtime.clone(),
                charge: None,
            },
        )?;
        debug!(addr, local = %channel.local_addr(), "connected");
        *guard = Some(channel.clone());
        self.live
            .write_locked()
            .insert(addr.to_owned(), channel.clone());
        Ok(channel)
    }

    /// A TCP connection to `addr`, with the TLS handshake when configured.
    async fn connect(&self, addr: &str) -> std::io::Result<Stream> {
        let tcp = TcpStream::connect(addr).await?;
        match &self.config.tls {
            None => Ok(Stream::Plain(tcp)),
            Some(tls) => tls.connect(addr, tcp).await,
        }
    }

    /// Requests sent to `addr` on the open connection whose answer has not come yet (0
    /// without a connection).
    pub fn awaiting_answers(&self, addr: &str) -> usize {
        self.live_channel(addr)
            .map_or(0, |channel| channel.awaiting_answers())
    }

    /// Closes the connection to `addr`, if any; the next call reconnects.
    pub fn close_channel(&self, addr: &str) {
        if let Some(channel) = self.live.write_locked().remove(addr) {
            channel.close();
        }
        let slot = self.slots.locked().remove(addr);
        if let Some(slot) = slot {
            if let Ok(guard) = slot.try_lock() {
                if let Some(channel) = guard.as_ref() {
                    channel.close();
                }
            }
        }
    }

    /// Sends `request` to `addr` and waits for the response, within `timeout` in all
    /// (connecting included).
    pub async fn invoke_sync(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let deadline = tokio::time::Instant::now() + timeout;
        let pending = self.start_call(addr, request, deadline, None).await?;
        pending.await
    }

    /// Queues `request` and returns a future for its response. At most `async_permits`
    /// such calls wait for responses at once; beyond that the call waits for a permit
    /// until `timeout` and then fails with `TooManyRequests`.
    pub async fn invoke_async(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<ResponseFuture> {
        let deadline = tokio::time::Instant::now() + timeout;
        let permit = self.async_permit(deadline).await?;
        self.start_call(addr, request, deadline, Some(permit)).await
    }

    /// An async call's permit, waiting for one until `deadline` when all are taken.
    async fn async_permit(&self, deadline: tokio::time::Instant) -> Result<OwnedSemaphorePermit> {
        // A free permit is taken without a timer; only a full window waits.
        match self.async_permits.clone().try_acquire_owned() {
            Ok(permit) => Ok(permit),
            Err(TryAcquireError::Closed) => Err(RemotingError::Shutdown("client")),
            Err(TryAcquireError::NoPermits) => {
                match tokio::time::timeout_at(deadline, self.async_permits.clone().acquire_owned())
                    .await
                {
                    Ok(Ok(permit)) => Ok(permit),
                    Ok(Err(_)) => Err(RemotingError::Shutdown("client")),
                    Err(_) => Err(RemotingError::TooManyRequests {
                        kind: "async",
                        limit: self.config.async_permits,
                    }),
                }
            }
        }
    }

    /// Queues `request` and gives its response or its error (not queued, timeout,
    /// connection lost) to `callback`, exactly once, with no task or timer of its own:
    /// on the connection's reader task when answered (keep it short), else where the
    /// error is found. At most `async_permits` such calls (and
    /// [`RemotingClient::invoke_async`]'s) wait for responses at once.
    pub async fn invoke_async_with_callback<F>(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
        callback: F,
    ) where
        F: FnOnce(Result<RemotingCommand>) + Send + 'static,
    {
        let deadline = tokio::time::Instant::now() + timeout;
        self.invoke_with_callback_by(addr, request, deadline, timeout, callback)
            .await
    }

    /// [`RemotingClient::invoke_async_with_callback`] with the deadline counted from
    /// `started`, when the caller's operation began (read by the caller already: the
    /// producer's send, one clock read fewer per message).
    pub async fn invoke_async_with_callback_since<F>(
        &self,
        addr: &str,
        request: RemotingCommand,
        started: std::time::Instant,
        timeout: Duration,
        callback: F,
    ) where
        F: FnOnce(Result<RemotingCommand>) + Send + 'static,
    {
        let deadline = tokio::time::Instant::from_std(started) + timeout;
        self.invoke_with_callback_by(addr, request, deadline, timeout, callback)
            .await
    }

    async fn invoke_with_callback_by<F>(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        deadline: tokio::time::Instant,
        timeout: Duration,
        callback: F,
    ) where
        F: FnOnce(Result<RemotingCommand>) + Send + 'static,
    {
        let permit = match self.async_permit(deadline).await {
            Ok(permit) => permit,
            Err(e) => return callback(Err(e)),
        };
        let channel = match self.call_channel(addr, deadline).await {
            Ok(channel) => channel,
            Err(e) => return callback(Err(e)),
        };
        let hooks = self.hooks();
        let after = if hooks.is_empty() {
            None
        } else {
            hooks.before(addr, &mut request);
            hooks
                .wants_response()
                .then(|| (hooks, addr.to_owned(), request.clone()))
        };
        let call: crate::channel::ResponseCallback = Box::new(move |outcome| {
            drop(permit);
            let outcome = outcome.map(|mut response| {
                if let Some((hooks, addr, original)) = &after {
                    hooks.after(addr, original, &mut response);
                }
                response
            });
            callback(outcome)
        });
        channel
            .send_request_with_callback(request, deadline, timeout, call)
            .await
    }

    /// The connection for a call to `addr`, connecting within `deadline` if needed.
    async fn call_channel(&self, addr: &str, deadline: tokio::time::Instant) -> Result<Channel> {
        match self.live_channel(addr) {
            Some(channel) => Ok(channel),
            None => {
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                self.channel_with_timeout(addr, remaining).await
            }
        }
    }

    async fn start_call(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        deadline: tokio::time::Instant,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Result<ResponseFuture> {
        let channel = self.call_channel(addr, deadline).await?;
        let hooks = self.hooks();
        let original = if hooks.is_empty() {
            None
        } else {
            hooks.before(addr, &mut request);
            hooks.wants_response().then(|| request.clone())
        };
        let pending = match channel.send_request(request, deadline).await {
            Ok(p) => p,
            Err(e) => {
                if e.is_transport() {
                    channel.close();
                }
                return Err(e);
            }
        };
        Ok(ResponseFuture {
            pending,
            permit,
            after: original.map(|original| (hooks, addr.to_owned(), original)),
        })
    }

    /// Sends `request` without expecting a response.
    pub async fn invoke_oneway(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        let _permit = match tokio::time::timeout_at(deadline, self.oneway_permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(RemotingError::Shutdown("client")),
            Err(_) => {
                return Err(RemotingError::TooManyRequests {
                    kind: "oneway",
                    limit: self.config.oneway_permits,
                })
            }
        };
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let channel = self.channel_with_timeout(addr, remaining).await?;
        self.hooks().before(addr, &mut request);
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        channel.invoke_oneway(request, remaining).await
    }

    /// Closes every connection and waits for their tasks.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.async_permits.close();
        self.oneway_permits.close();
        for (_, channel) in self.live.write_locked().drain() {
            channel.close();
        }
        let slots: Vec<Slot> = self.slots.locked().drain().map(|(_, slot)| slot).collect();
        for slot in slots {
            if let Some(channel) = slot.lock().await.as_ref() {
                channel.close();
            }
        }
        self.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.tracker.wait()).await;
    }
}

impl Drop for RemotingClient {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
