//! One TCP connection, used the same way by servers and clients.
//!
//! Each connection has a reader task and a writer task. The reader decodes frames:
//! responses complete the pending call with their opaque; requests run on their own
//! task through the [`RequestProcessor`], at most `max_inflight_requests` at a time
//! (beyond that the reader stops reading, so a flooding peer is slowed by TCP rather
//! than buffered). The writer drains a bounded queue of encoded frames and writes them
//! in batches. Either side may send requests: a [`Channel`] is the handle for both.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::codec::{Frame, FrameLimits, RemotingCodec};
use crate::command::{RemotingCommand, SerializeType};
use crate::error::{RemotingError, Result};
use crate::processor::{RequestProcessor, RpcHooks};
use crate::protocol::{request_code, response_code};
use crate::support::sync::MutexExt;
use crate::support::time::coarse_millis;
use crate::tls::Stream;
use crate::writer::WriteBatch;

mod detached;
pub use detached::DetachedReceiver;

/// Per-connection settings shared by servers and clients.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub limits: FrameLimits,
    /// Close a connection with no reads or writes for this long (RocketMQ's
    /// `serverChannelMaxIdleTimeSeconds`, 120 s). Zero disables it.
    pub idle_timeout: Duration,
    /// Encoded frames waiting for the socket; a full queue makes senders wait.
    pub write_queue_capacity: usize,
    /// Incoming requests processed at once on one connection.
    pub max_inflight_requests: usize,
    /// Header serialisation of everything this side sends. JSON by default, as the Java
    /// server does: the C++ client cannot parse binary headers.
    pub serialize_type: SerializeType,
    /// How long a closing connection waits for its requests in flight.
    pub drain_timeout: Duration,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            limits: FrameLimits::default(),
            idle_timeout: Duration::from_secs(120),
            write_queue_capacity: 4096,
            max_inflight_requests: 4096,
            serialize_type: SerializeType::Json,
            drain_timeout: Duration::from_secs(5),
        }
    }
}

static NEXT_CHANNEL_ID: AtomicU64 = AtomicU64::new(1);

type PendingTable = Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>;

struct Inner {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    codec: RemotingCodec,
    serialize_type: SerializeType,
    tx: mpsc::Sender<Frame>,
    pending: PendingTable,
    /// Cancelled when the connection is gone: no more reads, writer draining.
    closed: CancellationToken,
    /// Mirrors `closed` for the hot path (the token's check takes a lock).
    closed_flag: std::sync::atomic::AtomicBool,
    last_activity_ms: AtomicU64,
}

/// A handle to one connection: cheap to clone, usable from any task.
#[derive(Clone)]
pub struct Channel {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("id", &self.inner.id)
            .field("peer", &self.inner.peer)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl PartialEq for Channel {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}
impl Eq for Channel {}

impl std::hash::Hash for Channel {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.id.hash(state);
    }
}

/// What a connection needs besides its socket.
pub(crate) struct ChannelContext {
    pub config: ConnectionConfig,
    pub processor: Arc<dyn RequestProcessor>,
    pub hooks: RpcHooks,
    /// Tracks the connection's tasks, for graceful shutdown.
    pub tracker: TaskTracker,
    /// Cancelled to stop reading new requests (server shutdown).
    pub shutdown: CancellationToken,
}

impl Inner {
    fn mark_closed(&self) {
        self.closed_flag.store(true, Ordering::Release);
        self.closed.cancel();
    }
}

impl Channel {
    /// Starts the reader and writer tasks of a new connection, plain or TLS.
    pub(crate) fn spawn(stream: Stream, ctx: ChannelContext) -> Result<Channel> {
        let peer = stream.peer_addr()?;
        let local = stream.local_addr()?;
        // Request/response traffic: latency matters more than packet count.
        stream.tcp().set_nodelay(true)?;
        Ok(match stream {
            // The owned halves of a socket need no lock between reader and writer.
            Stream::Plain(tcp) => {
                let (rd, wr) = tcp.into_split();
                Self::start(rd, wr, peer, local, ctx)
            }
            tls => {
                let (rd, wr) = tokio::io::split(tls);
                Self::start(rd, wr, peer, local, ctx)
            }
        })
    }

    fn start<R, W>(
        rd: R,
        wr: W,
        peer: SocketAddr,
        local: SocketAddr,
        ctx: ChannelContext,
    ) -> Channel
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(ctx.config.write_queue_capacity.max(1));
        let channel = Channel {
            inner: Arc::new(Inner {
                id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
                peer,
                local,
                codec: RemotingCodec::new(ctx.config.limits),
                serialize_type: ctx.config.serialize_type,
                tx,
                pending: Mutex::new(HashMap::new()),
                closed: CancellationToken::new(),
                closed_flag: std::sync::atomic::AtomicBool::new(false),
                last_activity_ms: AtomicU64::new(coarse_millis()),
            }),
        };
        ctx.tracker.spawn(write_loop(wr, rx, channel.inner.clone()));
        let reader = channel.clone();
        ctx.processor.on_channel_connected(&channel);
        ctx.tracker.clone().spawn(async move {
            let framed =
                FramedRead::with_capacity(rd, RemotingCodec::new(ctx.config.limits), 64 * 1024);
            reader.read_loop(framed, ctx).await;
        });
        channel
    }

    /// Process-unique id of this connection.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    pub fn peer_addr(&self) -> SocketAddr {
        self.inner.peer
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed_flag.load(Ordering::Acquire)
    }

    /// Resolves once the connection is gone.
    pub async fn closed(&self) {
        self.inner.closed.cancelled().await
    }

    /// Closes the connection: reading stops at once, queued frames are still written.
    pub fn close(&self) {
        self.inner.mark_closed();
    }

    fn closed_error(&self) -> RemotingError {
        RemotingError::ConnectionClosed {
            peer: self.inner.peer,
        }
    }

    fn encode(&self, cmd: &mut RemotingCommand) -> Result<Frame> {
        cmd.serialize_type = self.inner.serialize_type;
        self.inner.codec.encode_frame(cmd)
    }

    async fn enqueue(&self, frame: Frame) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        match self.inner.tx.try_send(frame) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(self.closed_error()),
            Err(mpsc::error::TrySendError::Full(frame)) => self
                .inner
                .tx
                .send(frame)
                .await
                .map_err(|_| self.closed_error()),
        }
    }

    /// Sends a request and waits for its response.
    pub async fn invoke(&self, cmd: RemotingCommand, timeout: Duration) -> Result<RemotingCommand> {
        let deadline = tokio::time::Instant::now() + timeout;
        self.send_request(cmd, deadline).await?.wait().await
    }

    /// Queues a request and returns the pending response: the first await completes
    /// when the frame is queued, the returned [`PendingResponse`] when it is answered.
    pub async fn send_request(
        &self,
        mut cmd: RemotingCommand,
        deadline: tokio::time::Instant,
    ) -> Result<PendingResponse> {
        cmd.flag &= !(crate::command::FLAG_RESPONSE | crate::command::FLAG_ONEWAY);
        let frame = self.encode(&mut cmd)?;
        let (tx, rx) = oneshot::channel();
        let opaque = cmd.opaque;
        self.inner.pending.locked().insert(opaque, tx);
        let pending = PendingResponse {
            channel: self.clone(),
            rx,
            opaque,
            code: cmd.code,
            deadline,
            started: tokio::time::Instant::now(),
            done: false,
        };
        // The reader cancels `closed` before failing the table, so a call registered
        // after that sees the flag here.
        if self.is_closed() {
            return Err(self.closed_error());
        }
        // Only a full write queue makes this wait, so only then is a timer armed.
        match self.inner.tx.try_send(frame) {
            Ok(()) => Ok(pending),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(self.closed_error()),
            Err(mpsc::error::TrySendError::Full(frame)) => {
                match tokio::time::timeout_at(deadline, self.enqueue(frame)).await {
                    Ok(Ok(())) => Ok(pending),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(pending.timeout_error()),
                }
            }
        }
    }

    /// Sends a oneway request: no response is expected.
    pub async fn invoke_oneway(&self, mut cmd: RemotingCommand, timeout: Duration) -> Result<()> {
        cmd.mark_oneway();
        let frame = self.encode(&mut cmd)?;
        match tokio::time::timeout(timeout, self.enqueue(frame)).await {
            Ok(r) => r,
            Err(_) => Err(RemotingError::Timeout {
                peer: self.inner.peer,
                code: cmd.code,
                opaque: cmd.opaque,
                timeout,
            }),
        }
    }

    /// Queues a response to a request received on this channel: binary if it says so (the
    /// answer to a binary request, docs/wire.md#binary-header), else as the connection.
    pub async fn send_response(&self, mut response: RemotingCommand) -> Result<()> {
        response.mark_response();
        if response.serialize_type != SerializeType::RocketMq {
            response.serialize_type = self.inner.serialize_type;
        }
        let frame = match self.inner.codec.encode_frame(&response) {
            Ok(frame) => frame,
            Err(e) => {
                // The peer is owed an answer even when ours does not fit in a frame.
                warn!(peer = %self.inner.peer, opaque = response.opaque, error = %e, "response cannot be encoded");
                let mut fallback = RemotingCommand::response(
                    response_code::SYSTEM_ERROR,
                    format!("response not encodable: {e}"),
                );
                fallback.opaque = response.opaque;
                self.encode(&mut fallback)?
            }
        };
        self.enqueue(frame).await
    }

    fn complete(&self, response: RemotingCommand) {
        let waiter = self.inner.pending.locked().remove(&response.opaque);
        match waiter {
            Some(tx) => {
                let _ = tx.send(response);
            }
            None => {
                debug!(peer = %self.inner.peer, opaque = response.opaque, "response without a pending request (timed out?)")
            }
        }
    }

    fn forget(&self, opaque: i32) {
        self.inner.pending.locked().remove(&opaque);
    }

    fn touch(&self) {
        self.inner
            .last_activity_ms
            .store(coarse_millis(), Ordering::Relaxed);
    }

    async fn read_loop<R: AsyncRead + Unpin>(
        self,
        mut framed: FramedRead<R, RemotingCodec>,
        ctx: ChannelContext,
    ) {
        let permits = Arc::new(Semaphore::new(ctx.config.max_inflight_requests.max(1)));
        let idle = ctx.config.idle_timeout;
        let mut graceful = false;
        // Built once and polled in every round: a fresh future per frame would register
        // with the tokens and the timer wheel each time.
        let shutdown = ctx.shutdown.clone();
        let closed = self.inner.closed.clone();
        let shutdown = shutdown.cancelled();
        let closed = closed.cancelled();
        let idle_sleep = tokio::time::sleep(if idle.is_zero() {
            Duration::from_secs(86_400 * 365)
        } else {
            idle
        });
        tokio::pin!(shutdown, closed, idle_sleep);
        loop {
            tokio::select! {
                biased;
                _ = &mut shutdown => {
                    debug!(peer = %self.inner.peer, "stop reading: shutting down");
                    graceful = true;
                    break;
                }
                _ = &mut closed => break,
                frame = framed.next() => match frame {
                    Some(Ok(cmd)) => {
                        self.touch();
                        if cmd.is_response() {
                            self.complete(cmd);
                        } else {
                            let permit = match permits.clone().acquire_owned().await {
                                Ok(p) => p,
                                Err(_) => break,
                            };
                            self.dispatch(cmd, permit, &ctx).await;
                        }
                    }
                    Some(Err(RemotingError::Io(e))) => {
                        // A reset or a read error is the peer going away, not bad input.
                        debug!(peer = %self.inner.peer, error = %e, "connection lost");
                        break;
                    }
                    Some(Err(e)) => {
                        warn!(peer = %self.inner.peer, error = %e, "closing connection: bad frame");
                        break;
                    }
                    None => {
                        debug!(peer = %self.inner.peer, "connection closed by peer");
                        break;
                    }
                },
                _ = &mut idle_sleep, if !idle.is_zero() => {
                    let last = self.inner.last_activity_ms.load(Ordering::Relaxed);
                    let quiet = Duration::from_millis(coarse_millis().saturating_sub(last));
                    if quiet >= idle {
                        info!(peer = %self.inner.peer, idle_secs = idle.as_secs(), "closing idle connection");
                        break;
                    }
                    idle_sleep.as_mut().reset(tokio::time::Instant::now() + (idle - quiet));
                }
            }
        }
        if graceful {
            // Requests already read still get their answers, within the drain timeout.
            let max = ctx.config.max_inflight_requests.max(1) as u32;
            if tokio::time::timeout(ctx.config.drain_timeout, permits.acquire_many(max))
                .await
                .is_err()
            {
                warn!(peer = %self.inner.peer, "requests still in flight after the drain timeout");
            }
        }
        self.inner.mark_closed();
        let failed: Vec<_> = self.inner.pending.locked().drain().collect();
        drop(failed); // dropping the senders fails every waiting call at once
        ctx.processor.on_channel_closed(&self);
    }

    /// Runs one request. Its first poll happens right here on the reader: most requests
    /// (sends, offset updates) complete without waiting, and answering them inline saves
    /// a task spawn and a wake-up. A request that must wait continues on its own task.
    async fn dispatch(
        &self,
        mut request: RemotingCommand,
        permit: OwnedSemaphorePermit,
        ctx: &ChannelContext,
    ) {
        let channel = self.clone();
        let processor = ctx.processor.clone();
        let hooks = ctx.hooks.clone();
        let mut task: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
            let _permit = permit;
            let oneway = request.is_oneway();
            let opaque = request.opaque;
            // Answered in kind, as the Java server does.
            let binary = request.serialize_type == SerializeType::RocketMq;
            let code = request.code;
            let original = if hooks.is_empty() {
                None
            } else {
                hooks.before(&channel.inner.peer.to_string(), &mut request);
                Some(request.clone())
            };
            let outcome = AssertUnwindSafe(processor.process(&channel, request))
                .catch_unwind()
                .await;
            let response = match outcome {
                Ok(response) => response,
                Err(_) => {
                    warn!(peer = %channel.inner.peer, code, name = request_code::name(code), "request processor panicked");
                    Some(RemotingCommand::response(
                        response_code::SYSTEM_ERROR,
                        format!("internal error processing request code {code}"),
                    ))
                }
            };
            if oneway {
                return;
            }
            if let Some(mut response) = response {
                response.opaque = opaque;
                if binary {
                    response.serialize_type = SerializeType::RocketMq;
                }
                if let Some(original) = &original {
                    hooks.after(&channel.inner.peer.to_string(), original, &mut response);
                }
                if let Err(e) = channel.send_response(response).await {
                    debug!(peer = %channel.inner.peer, opaque, error = %e, "response not sent");
                }
            }
        });
        let done = std::future::poll_fn(|cx| Poll::Ready(task.as_mut().poll(cx).is_ready())).await;
        if !done {
            ctx.tracker.spawn(task);
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Frame>,
    inner: Arc<Inner>,
) {
    let mut batch = WriteBatch::default();
    let closed = inner.closed.clone();
    let closed = closed.cancelled();
    tokio::pin!(closed);
    loop {
        let first = tokio::select! {
            biased;
            frame = rx.recv() => match frame {
                Some(frame) => frame,
                None => break,
            },
            _ = &mut closed => {
                // Flush what is already queued (e.g. responses of drained requests).
                rx.close();
                while let Ok(frame) = rx.try_recv() {
                    batch.push(frame);
                }
                if !batch.is_empty() && batch.write_to(&mut wr).await.is_ok() {
                    let _ = wr.flush().await;
                }
                break;
            }
        };
        batch.push(first);
        while batch.has_room() {
            match rx.try_recv() {
                Ok(frame) => batch.push(frame),
                Err(_) => break,
            }
        }
        // TLS holds records back until flushed; a socket's flush does nothing.
        let result = match batch.write_to(&mut wr).await {
            Ok(()) => wr.flush().await,
            Err(e) => Err(e),
        };
        inner
            .last_activity_ms
            .store(coarse_millis(), Ordering::Relaxed);
        if let Err(e) = result {
            debug!(peer = %inner.peer, error = %e, "write failed; closing connection");
            inner.mark_closed();
            break;
        }
    }
    let _ = wr.shutdown().await;
}

/// A request on its way: await [`PendingResponse::wait`] for the answer.
pub struct PendingResponse {
    channel: Channel,
    rx: oneshot::Receiver<RemotingCommand>,
    opaque: i32,
    code: i32,
    deadline: tokio::time::Instant,
    started: tokio::time::Instant,
    done: bool,
}

impl PendingResponse {
    fn timeout_error(&self) -> RemotingError {
        RemotingError::Timeout {
            peer: self.channel.inner.peer,
            code: self.code,
            opaque: self.opaque,
            timeout: self.deadline.saturating_duration_since(self.started),
        }
    }

    /// The response, or a timeout / connection error. The pending slot is freed either way.
    pub async fn wait(mut self) -> Result<RemotingCommand> {
        let outcome = tokio::time::timeout_at(self.deadline, &mut self.rx).await;
        self.done = true;
        match outcome {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(self.channel.closed_error()),
            Err(_) => {
                self.channel.forget(self.opaque);
                Err(self.timeout_error())
            }
        }
    }
}

impl Drop for PendingResponse {
    fn drop(&mut self) {
        // A caller that gave up (dropped the future) must not leak its slot.
        if !self.done {
            self.channel.forget(self.opaque);
        }
    }
}
