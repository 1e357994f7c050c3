//! One TCP connection, used the same way by servers and clients.
//!
//! Each connection has a reader task and a writer task. The reader decodes frames
//! (`reader`): responses complete the pending call with their opaque; requests run
//! through the [`RequestProcessor`] on the reader (`read_loop`), at most
//! `max_inflight_requests` at a time (beyond that the reader stops reading, so a
//! flooding peer is slowed by TCP rather than buffered). The writer (`outbox`) drains
//! a queue bounded in bytes and writes its frames in batches; while that queue is past
//! its high-water mark the reader stops reading too, and a peer that reads nothing for
//! `write_stall_timeout` is disconnected. Every frame held, received or queued, is
//! reserved from the process's [`MemoryBudget`]. Either side may send requests: a
//! [`Channel`] is the handle for both.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::budget::{MemoryBudget, Reservation};
use crate::codec::{Frame, RemotingCodec};
use crate::command::{RemotingCommand, SerializeType};
use crate::error::{RemotingError, Result};
use crate::processor::{RequestProcessor, RpcHooks};
use crate::protocol::response_code;
use crate::support::log_limit::LogLimit;
use crate::support::sync::MutexExt;
use crate::support::time::uptime_millis;
use crate::tls::Stream;

mod config;
mod detached;
mod outbox;
mod pending;
mod read_loop;
mod reader;
pub use config::ConnectionConfig;
pub use detached::DetachedReceiver;
pub use pending::{PendingResponse, ResponseCallback};

use pending::{PendingTable, Sink};

use outbox::{Outbox, Queued, FRAME_OVERHEAD};
use reader::FrameReader;

static NEXT_CHANNEL_ID: AtomicU64 = AtomicU64::new(1);

struct Inner {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    codec: RemotingCodec,
    serialize_type: SerializeType,
    tx: mpsc::Sender<Queued>,
    outbox: Arc<Outbox>,
    budget: Arc<MemoryBudget>,
    pending: Mutex<PendingTable>,
    /// Wakes the pending table's sweeper for a deadline earlier than it knows of.
    sweep: Notify,
    /// Cancelled when the connection is gone: no more reads, writer draining.
    closed: CancellationToken,
    /// Cancelled when queued frames are to be dropped rather than written.
    aborted: CancellationToken,
    /// Mirrors `closed` for the hot path (the token's check takes a lock).
    closed_flag: std::sync::atomic::AtomicBool,
    last_activity_ms: AtomicU64,
    /// Requests received and not yet answered.
    inflight: AtomicUsize,
    /// Never closed to make room for another connection.
    protected: AtomicBool,
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
    /// The runtime the connection's tasks run on; the current one when `None`.
    pub runtime: Option<tokio::runtime::Handle>,
    /// The connection's own cost in the budget, held as long as it lives.
    pub charge: Option<Reservation>,
}

impl Inner {
    fn mark_closed(&self) {
        self.closed_flag.store(true, Ordering::Release);
        self.closed.cancel();
    }

    /// Closes and drops what is queued, a write in progress included.
    fn abort(&self) {
        self.mark_closed();
        self.aborted.cancel();
    }

    fn new(
        peer: SocketAddr,
        local: SocketAddr,
        config: &ConnectionConfig,
        tx: mpsc::Sender<Queued>,
    ) -> Inner {
        Inner {
            id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
            peer,
            local,
            codec: RemotingCodec::new(config.limits),
            serialize_type: config.serialize_type,
            tx,
            outbox: Outbox::new(config.write_high_water, config.write_low_water),
            budget: config.budget.clone(),
            pending: Mutex::new(PendingTable::default()),
            sweep: Notify::new(),
            closed: CancellationToken::new(),
            aborted: CancellationToken::new(),
            closed_flag: AtomicBool::new(false),
            last_activity_ms: AtomicU64::new(uptime_millis()),
            inflight: AtomicUsize::new(0),
            protected: AtomicBool::new(false),
        }
    }
}

/// How a frame waits for room in the write queue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Room {
    /// Until the queue is below its high-water mark (requests this side sends).
    Wait,
    /// Not at all: its memory is reserved and the reader has stopped (responses).
    Take,
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
            inner: Arc::new(Inner::new(peer, local, &ctx.config, tx)),
        };
        let tracker = ctx.tracker.clone();
        let runtime = ctx.runtime.clone();
        let writer = outbox::write_loop(wr, rx, channel.inner.clone());
        let sweeper = channel.clone().sweep_loop();
        let reader = channel.clone();
        ctx.processor.on_channel_connected(&channel);
        let frames = FrameReader::new(
            rd,
            RemotingCodec::new(ctx.config.limits),
            ctx.config.budget.clone(),
            ctx.config.frame_read_timeout,
        );
        // Each poll of the reader is a unit: what handling the frames of one read puts
        // off (a held pull's answer) runs before the reader waits for the socket again.
        let read = crate::support::defer::polled_as_units(reader.read_loop(frames, ctx));
        match runtime {
            Some(runtime) => {
                tracker.spawn_on(writer, &runtime);
                tracker.spawn_on(sweeper, &runtime);
                tracker.spawn_on(read, &runtime);
            }
            None => {
                tracker.spawn(writer);
                tracker.spawn(sweeper);
                tracker.spawn(read);
            }
        }
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

    /// A response keeps a binary header when its request had one (answered in kind, as
    /// the Java server does); otherwise it takes the connection's serialisation.
    fn encode_response(&self, cmd: &mut RemotingCommand) -> Result<Frame> {
        if cmd.serialize_type != SerializeType::RocketMq {
            cmd.serialize_type = self.inner.serialize_type;
        }
        self.inner.codec.encode_frame(cmd)
    }

    /// Queues a frame charged to `charge` (which must cover `frame.len()` plus
    /// [`FRAME_OVERHEAD`]).
    async fn enqueue(&self, frame: Frame, charge: Reservation, room: Room) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        let queued = match room {
            Room::Take => self.inner.outbox.admit(frame, charge),
            Room::Wait => tokio::select! {
                queued = self.inner.outbox.admit_when_room(frame, charge) => queued,
                _ = self.inner.closed.cancelled() => return Err(self.closed_error()),
            },
        };
        match self.inner.tx.try_send(queued) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(self.closed_error()),
            Err(mpsc::error::TrySendError::Full(queued)) => self
                .inner
                .tx
                .send(queued)
                .await
                .map_err(|_| self.closed_error()),
        }
    }

    /// The budget's bytes for a request this side sends.
    fn charge_request(&self, frame: &Frame) -> Result<Reservation> {
        let bytes = frame.len() + FRAME_OVERHEAD;
        self.inner
            .budget
            .try_reserve(bytes)
            .ok_or(RemotingError::NoMemory {
                what: "an outgoing request",
                bytes,
            })
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
        let charge = self.charge_request(&frame)?;
        let (tx, rx) = oneshot::channel();
        let opaque = cmd.opaque;
        // No timer per request: the connection's sweeper fails it at its deadline.
        self.register(opaque, Sink::Waiting(tx), deadline);
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
        // Only a full queue makes this wait, so only then is a timer armed.
        let queue = self.enqueue(frame, charge, Room::Wait);
        tokio::pin!(queue);
        if let Some(done) = queue.as_mut().now_or_never() {
            return done.map(|()| pending);
        }
        match tokio::time::timeout_at(deadline, queue).await {
            Ok(Ok(())) => Ok(pending),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(pending.timeout_error()),
        }
    }

    /// Queues a request whose answer (or error: not queued, timeout at `deadline`,
    /// connection lost) is given to `callback`, exactly once, with no task waiting for
    /// it: on the connection's reader when answered, else on the sweeper, the reader
    /// closing the connection, or here when the request could not be queued.
    pub async fn send_request_with_callback(
        &self,
        mut cmd: RemotingCommand,
        deadline: tokio::time::Instant,
        timeout: Duration,
        callback: ResponseCallback,
    ) {
        cmd.flag &= !(crate::command::FLAG_RESPONSE | crate::command::FLAG_ONEWAY);
        let queued = match self.encode(&mut cmd) {
            Ok(frame) => self.charge_request(&frame).map(|charge| (frame, charge)),
            Err(e) => Err(e),
        };
        let (frame, charge) = match queued {
            Ok(queued) => queued,
            Err(e) => return self.call_back(callback, Err(e)),
        };
        let opaque = cmd.opaque;
        let sink = Sink::Call {
            call: callback,
            code: cmd.code,
            timeout,
        };
        self.register(opaque, sink, deadline);
        // Not queued: the callback gets the error, unless the reader (closing) or the
        // sweeper took its slot first and has called it.
        let unqueued = |e: RemotingError| {
            let sink = self.inner.pending.locked().remove(opaque);
            if let Some(Sink::Call { call, .. }) = sink {
                self.call_back(call, Err(e));
            }
        };
        if self.is_closed() {
            return unqueued(self.closed_error());
        }
        let queue = self.enqueue(frame, charge, Room::Wait);
        tokio::pin!(queue);
        let queued = match queue.as_mut().now_or_never() {
            Some(done) => done,
            None => match tokio::time::timeout_at(deadline, queue).await {
                Ok(done) => done,
                Err(_) => Err(RemotingError::Timeout {
                    peer: self.inner.peer,
                    code: cmd.code,
                    opaque,
                    timeout,
                }),
            },
        };
        if let Err(e) = queued {
            if e.is_transport() {
                self.close();
            }
            unqueued(e);
        }
    }

    /// Sends a oneway request: no response is expected.
    pub async fn invoke_oneway(&self, mut cmd: RemotingCommand, timeout: Duration) -> Result<()> {
        cmd.mark_oneway();
        let frame = self.encode(&mut cmd)?;
        let charge = self.charge_request(&frame)?;
        match tokio::time::timeout(timeout, self.enqueue(frame, charge, Room::Wait)).await {
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
    pub async fn send_response(&self, response: RemotingCommand) -> Result<()> {
        self.respond(response, self.inner.budget.empty()).await
    }

    /// Queues a response, paid for from `allowance` (what its request reserved) and the
    /// budget. A response the budget cannot take is replaced by a SYSTEM_BUSY: the
    /// peer is owed an answer, and a small one always fits in the request's allowance.
    async fn respond(
        &self,
        mut response: RemotingCommand,
        mut allowance: Reservation,
    ) -> Result<()> {
        response.mark_response();
        let opaque = response.opaque;
        let frame = match self.encode_response(&mut response) {
            Ok(frame) => frame,
            Err(e) => {
                // The peer is owed an answer even when ours does not fit in a frame.
                warn!(peer = %self.inner.peer, opaque, error = %e, "response cannot be encoded");
                self.encode_fallback(
                    opaque,
                    response_code::SYSTEM_ERROR,
                    format!("response not encodable: {e}"),
                )?
            }
        };
        let bytes = frame.len() + FRAME_OVERHEAD;
        if bytes <= allowance.bytes() {
            let charge = allowance.split_off(bytes);
            return self.enqueue(frame, charge, Room::Take).await;
        }
        if let Some(more) = self.inner.budget.try_reserve(bytes - allowance.bytes()) {
            allowance.merge(more);
            return self.enqueue(frame, allowance, Room::Take).await;
        }
        if let Some(suppressed) = NO_MEMORY_FOR_RESPONSE.allow() {
            warn!(peer = %self.inner.peer, bytes, used = self.inner.budget.used(), suppressed, "memory ceiling reached: a response is replaced by SYSTEM_BUSY");
        }
        let busy = self.encode_fallback(
            opaque,
            response_code::SYSTEM_BUSY,
            "[MEMORY]broker busy: memory ceiling reached, try again later".to_owned(),
        )?;
        let bytes = busy.len() + FRAME_OVERHEAD;
        if allowance.bytes() < bytes {
            // Only a response sent without a request's allowance gets here.
            allowance.merge(
                self.inner
                    .budget
                    .reserve_unchecked(bytes - allowance.bytes()),
            );
        }
        self.enqueue(busy, allowance, Room::Take).await
    }

    fn encode_fallback(&self, opaque: i32, code: i32, remark: String) -> Result<Frame> {
        let mut fallback = RemotingCommand::response(code, remark);
        fallback.opaque = opaque;
        fallback.mark_response();
        self.encode(&mut fallback)
    }

    fn complete(&self, response: RemotingCommand) {
        let waiter = self.inner.pending.locked().remove(response.opaque);
        match waiter {
            Some(sink) => {
                sink.answer(self, response);
            }
            None => {
                debug!(peer = %self.inner.peer, opaque = response.opaque, "response without a pending request (timed out?)")
            }
        }
    }

    fn forget(&self, opaque: i32) {
        self.inner.pending.locked().remove(opaque);
    }

    fn touch(&self) {
        self.inner
            .last_activity_ms
            .store(uptime_millis(), Ordering::Relaxed);
    }

    /// When the connection last read or wrote, on [`uptime_millis`]'s clock.
    pub fn last_activity_millis(&self) -> u64 {
        self.inner.last_activity_ms.load(Ordering::Relaxed)
    }

    /// Requests sent on this connection whose answer has not come yet.
    pub fn awaiting_answers(&self) -> usize {
        self.inner.pending.locked().len()
    }

    /// Requests received on this connection and not yet answered.
    pub fn requests_in_flight(&self) -> usize {
        self.inner.inflight.load(Ordering::Relaxed)
    }

    /// Bytes queued for the socket.
    pub fn queued_bytes(&self) -> usize {
        self.inner.outbox.queued()
    }

    /// Keeps this connection when the server closes idle ones to make room (a name
    /// server's connection from a registered broker).
    pub fn protect(&self) {
        self.inner.protected.store(true, Ordering::Relaxed);
    }

    pub fn is_protected(&self) -> bool {
        self.inner.protected.load(Ordering::Relaxed)
    }
}

static NO_MEMORY_FOR_RESPONSE: LogLimit = LogLimit::new();
