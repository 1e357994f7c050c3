//! The reader task of a connection: frames to the pending calls and the processor,
//! and the reasons a connection stops being read or is closed.
//!
//! Reading stops, the socket left unread so that TCP slows the peer down, while
//! `max_inflight_requests` requests are in flight or while the write queue is past
//! its high-water mark. The connection is closed when, reading stopped either way,
//! its peer reads nothing of what is queued for `write_stall_timeout`, leaves a
//! frame unfinished past its deadline, sends garbage, or stays silent for
//! `idle_timeout`; each reason is logged (at most once a second for the reasons a
//! flood repeats).
//!
//! A request that cannot be answered at its first poll (a send waiting for the disk or
//! a slave) stays with the reader, in a set it polls between reads, rather than on a
//! task of its own: when one group commit releases dozens of sends, one wake-up of the
//! reader answers them all and the writer sends the answers in one write (SYNC_FLUSH,
//! 64 sync senders: 0.78 `send` calls per message when each went on its own task).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use tokio::io::AsyncRead;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::{debug, info, warn};

use super::reader::FrameReader;
use super::{Channel, ChannelContext};
use crate::budget::Reservation;
use crate::command::{RemotingCommand, SerializeType};
use crate::error::RemotingError;
use crate::protocol::{request_code, response_code};
use crate::support::log_limit::LogLimit;
use crate::support::sync::MutexExt;
use crate::support::time::uptime_millis;

static STALLED: LogLimit = LogLimit::new();
static UNFINISHED: LogLimit = LogLimit::new();
static NO_MEMORY: LogLimit = LogLimit::new();

/// Far enough to never fire: a timer armed only when needed.
const NEVER: Duration = Duration::from_secs(86_400 * 365);

/// A request still being processed after its first poll.
type Unfinished = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Decrements the connection's in-flight count when its request is done.
struct InFlight(Channel);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.inner.inflight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How the wait for a request permit ended.
enum PermitWait {
    Permit(OwnedSemaphorePermit),
    /// The server is shutting down.
    Shutdown,
    /// The connection is closed (or was just closed as stalled).
    Closed,
}

impl Channel {
    pub(super) async fn read_loop<R: AsyncRead + Unpin>(
        self,
        mut frames: FrameReader<R>,
        mut ctx: ChannelContext,
    ) {
        let _charge = ctx.charge.take();
        let permits = Arc::new(Semaphore::new(ctx.config.max_inflight_requests.max(1)));
        let idle = ctx.config.idle_timeout;
        let stall = ctx.config.write_stall_timeout;
        let mut graceful = false;
        // Built once and polled in every round: a fresh future per frame would register
        // with the tokens and the timer wheel each time.
        let shutdown = ctx.shutdown.clone();
        let closed = self.inner.closed.clone();
        let shutdown = shutdown.cancelled();
        let closed = closed.cancelled();
        let idle_sleep = tokio::time::sleep(if idle.is_zero() { NEVER } else { idle });
        let stall_sleep = tokio::time::sleep(NEVER);
        tokio::pin!(shutdown, closed, idle_sleep, stall_sleep);
        // While the write queue is full: the bytes written when reading stopped.
        let mut paused: Option<u64> = None;
        // Requests that did not finish at their first poll; polled in every round.
        let mut unfinished: FuturesUnordered<Unfinished> = FuturesUnordered::new();
        loop {
            if paused.is_none() && self.inner.outbox.is_full() {
                paused = Some(self.inner.outbox.written());
                stall_sleep
                    .as_mut()
                    .reset(tokio::time::Instant::now() + stall);
                debug!(peer = %self.inner.peer, queued = self.inner.outbox.queued(), "stop reading: the write queue is full");
            }
            tokio::select! {
                biased;
                _ = &mut shutdown => {
                    debug!(peer = %self.inner.peer, "stop reading: shutting down");
                    graceful = true;
                    break;
                }
                _ = &mut closed => break,
                // Before new frames: what a round of the disk or a slave released is
                // answered first.
                Some(()) = unfinished.next(), if !unfinished.is_empty() => {}
                _ = self.inner.outbox.drained(), if paused.is_some() => {
                    paused = None;
                    debug!(peer = %self.inner.peer, "resume reading: the write queue drained");
                }
                _ = &mut stall_sleep, if paused.is_some() => {
                    let written = self.inner.outbox.written();
                    if paused == Some(written) {
                        self.close_stalled(stall);
                        break;
                    }
                    paused = Some(written);
                    stall_sleep.as_mut().reset(tokio::time::Instant::now() + stall);
                }
                frame = frames.next(), if paused.is_none() => match frame {
                    Ok(Some((cmd, charge))) => {
                        self.touch();
                        if cmd.is_response() {
                            self.complete(cmd);
                        } else {
                            let permit = match self
                                .wait_for_permit(
                                    &permits,
                                    stall,
                                    shutdown.as_mut(),
                                    closed.as_mut(),
                                    &mut unfinished,
                                )
                                .await
                            {
                                PermitWait::Permit(p) => p,
                                PermitWait::Shutdown => {
                                    graceful = true;
                                    break;
                                }
                                PermitWait::Closed => break,
                            };
                            if let Some(task) = self.dispatch(cmd, charge, permit, &ctx).await {
                                unfinished.push(task);
                            }
                        }
                    }
                    Ok(None) => {
                        debug!(peer = %self.inner.peer, "connection closed by peer");
                        break;
                    }
                    Err(RemotingError::Io(e)) => {
                        // A reset or a read error is the peer going away, not bad input.
                        debug!(peer = %self.inner.peer, error = %e, "connection lost");
                        break;
                    }
                    Err(e @ RemotingError::FrameTimeout { .. }) => {
                        if let Some(suppressed) = UNFINISHED.allow() {
                            warn!(peer = %self.inner.peer, error = %e, suppressed, "closing connection: frame not finished in time");
                        }
                        break;
                    }
                    Err(e @ RemotingError::NoMemory { .. }) => {
                        if let Some(suppressed) = NO_MEMORY.allow() {
                            warn!(peer = %self.inner.peer, error = %e, used = self.inner.budget.used(), suppressed, "closing connection: no memory for its frame before its deadline");
                        }
                        break;
                    }
                    Err(e) => {
                        warn!(peer = %self.inner.peer, error = %e, "closing connection: bad frame");
                        break;
                    }
                },
                _ = &mut idle_sleep, if !idle.is_zero() => {
                    let last = self.inner.last_activity_ms.load(Ordering::Relaxed);
                    let quiet = Duration::from_millis(uptime_millis().saturating_sub(last));
                    if quiet >= idle {
                        info!(peer = %self.inner.peer, idle_secs = idle.as_secs(), "closing idle connection");
                        break;
                    }
                    idle_sleep.as_mut().reset(tokio::time::Instant::now() + (idle - quiet));
                }
            }
        }
        drop(frames);
        if !unfinished.is_empty() {
            // Requests already read still finish (their answers go out if the
            // connection is still open), on a task of their own now that nobody reads.
            let rest = async move { while unfinished.next().await.is_some() {} };
            match &ctx.runtime {
                Some(runtime) => ctx.tracker.spawn_on(rest, runtime),
                None => ctx.tracker.spawn(rest),
            };
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
        let failed = self.inner.pending.locked().drain();
        for sink in failed {
            sink.fail_closed(&self);
        }
        ctx.processor.on_channel_closed(&self);
    }

    /// A permit for the next request. The permits are all taken only by requests in
    /// flight, and those waiting to queue their answers for a peer that reads nothing
    /// would hold them for ever: so, as with a full write queue, the reader waits with
    /// the socket unread, and a peer that reads nothing of what is queued for `stall`
    /// is closed.
    async fn wait_for_permit<S: Future, C: Future>(
        &self,
        permits: &Arc<Semaphore>,
        stall: Duration,
        mut shutdown: Pin<&mut S>,
        mut closed: Pin<&mut C>,
        unfinished: &mut FuturesUnordered<Unfinished>,
    ) -> PermitWait {
        if let Ok(permit) = permits.clone().try_acquire_owned() {
            return PermitWait::Permit(permit);
        }
        debug!(peer = %self.inner.peer, "stop reading: every request permit is taken");
        let mut mark = self.inner.outbox.written();
        let stall_sleep = tokio::time::sleep(stall);
        tokio::pin!(stall_sleep);
        loop {
            tokio::select! {
                biased;
                _ = shutdown.as_mut() => return PermitWait::Shutdown,
                _ = closed.as_mut() => return PermitWait::Closed,
                // The requests holding the permits finish here.
                Some(()) = unfinished.next(), if !unfinished.is_empty() => {}
                permit = permits.clone().acquire_owned() => {
                    return permit.map_or(PermitWait::Closed, PermitWait::Permit);
                }
                _ = &mut stall_sleep => {
                    let written = self.inner.outbox.written();
                    if written == mark && self.inner.outbox.queued() > 0 {
                        self.close_stalled(stall);
                        return PermitWait::Closed;
                    }
                    mark = written;
                    stall_sleep.as_mut().reset(tokio::time::Instant::now() + stall);
                }
            }
        }
    }

    /// Closes a connection whose peer read nothing of its queued answers for `stall`.
    fn close_stalled(&self, stall: Duration) {
        if let Some(suppressed) = STALLED.allow() {
            warn!(peer = %self.inner.peer, queued = self.inner.outbox.queued(), stall_ms = stall.as_millis() as u64, suppressed, "closing connection: the peer does not read its responses");
        }
        // What is queued will not be read either: drop it now.
        self.inner.abort();
    }

    /// Runs one request. Its first poll happens right here on the reader: most requests
    /// (sends, offset updates) complete without waiting, and answering them inline saves
    /// a task spawn and a wake-up. A request that must wait is given back, for the
    /// reader's set of unfinished requests. `charge` (the request's frame and overhead)
    /// is held until it is answered and pays for its response.
    async fn dispatch(
        &self,
        mut request: RemotingCommand,
        charge: Reservation,
        permit: OwnedSemaphorePermit,
        ctx: &ChannelContext,
    ) -> Option<Unfinished> {
        let channel = self.clone();
        let processor = ctx.processor.clone();
        let hooks = ctx.hooks.clone();
        self.inner.inflight.fetch_add(1, Ordering::Relaxed);
        let in_flight = InFlight(self.clone());
        let (peer, code) = (self.inner.peer, request.code);
        let body = async move {
            let _permit = permit;
            let _in_flight = in_flight;
            let oneway = request.is_oneway();
            let opaque = request.opaque;
            // Answered in kind, as the Java server does.
            let binary = request.serialize_type == SerializeType::RocketMq;
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
                if let Err(e) = channel.respond(response, charge).await {
                    debug!(peer = %channel.inner.peer, opaque, error = %e, "response not sent");
                }
            }
        };
        // A panic past the processor (an RPC hook's) costs this request only, not the
        // reader and the other requests it drives.
        let mut task: Unfinished = Box::pin(AssertUnwindSafe(body).catch_unwind().map(move |r| {
            if r.is_err() {
                warn!(%peer, code, name = request_code::name(code), "request hook panicked; the request is not answered");
            }
        }));
        let done = std::future::poll_fn(|cx| Poll::Ready(task.as_mut().poll(cx).is_ready())).await;
        (!done).then_some(task)
    }
}
