//! Requests sent over a [`Channel`] and waiting for their answers.
//!
//! Every request this side sends has a slot in the connection's pending table: the
//! answer's sender and the request's deadline. Deadlines are not timers of their own
//! (as in RocketMQ's `scanResponseTable`): one sweeper task per connection sleeps
//! until the earliest deadline in the table, fails the requests past theirs, and
//! sleeps again. A request whose deadline is earlier than the sweeper's next wake-up
//! wakes it; with one timeout for every request (a producer's sends) that is only the
//! first request after the table was empty, so a send arms no timer at all.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::Channel;
use crate::command::RemotingCommand;
use crate::error::{RemotingError, Result};
use crate::support::sync::MutexExt;
use tracing::warn;

/// What a waiting request receives: its answer, or word that its deadline passed.
pub(super) enum Reply {
    Response(RemotingCommand),
    Expired,
}

/// A function given the answer of a request (or its error) by the connection's reader
/// (or its sweeper), instead of a task waiting for it.
pub type ResponseCallback = Box<dyn FnOnce(Result<RemotingCommand>) + Send>;

/// Where a request's answer goes.
pub(super) enum Sink {
    /// A [`PendingResponse`] waiting on the other end.
    Waiting(oneshot::Sender<Reply>),
    /// Called with the answer; `code` and `timeout` make its timeout error.
    Call {
        call: ResponseCallback,
        code: i32,
        timeout: Duration,
    },
}

impl Sink {
    pub(super) fn answer(self, channel: &Channel, response: RemotingCommand) {
        match self {
            Sink::Waiting(tx) => {
                let _ = tx.send(Reply::Response(response));
            }
            Sink::Call { call, .. } => channel.call_back(call, Ok(response)),
        }
    }

    fn expire(self, channel: &Channel, opaque: i32) {
        match self {
            Sink::Waiting(tx) => {
                let _ = tx.send(Reply::Expired);
            }
            Sink::Call {
                call,
                code,
                timeout,
            } => {
                let e = RemotingError::Timeout {
                    peer: channel.inner.peer,
                    code,
                    opaque,
                    timeout,
                };
                channel.call_back(call, Err(e));
            }
        }
    }

    /// The connection is gone: a waiting future sees its sender dropped.
    pub(super) fn fail_closed(self, channel: &Channel) {
        if let Sink::Call { call, .. } = self {
            channel.call_back(call, Err(channel.closed_error()));
        }
    }
}

struct Waiter {
    sink: Sink,
    deadline: Instant,
}

/// Hashes an opaque (a counter) with one multiplication: no SipHash per request.
#[derive(Default)]
pub(super) struct OpaqueHasher(u64);

impl Hasher for OpaqueHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i32(&mut self, v: i32) {
        self.0 = u64::from(v as u32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The requests in flight on one connection, by opaque.
#[derive(Default)]
pub(super) struct PendingTable {
    waiters: HashMap<i32, Waiter, BuildHasherDefault<OpaqueHasher>>,
    /// When the sweeper wakes next (`None`: it waits for a request).
    next_wake: Option<Instant>,
}

impl PendingTable {
    /// Adds a request; true when the sweeper must wake to see its earlier deadline.
    fn insert(&mut self, opaque: i32, sink: Sink, deadline: Instant) -> bool {
        self.waiters.insert(opaque, Waiter { sink, deadline });
        if self.next_wake.is_some_and(|at| at <= deadline) {
            return false;
        }
        self.next_wake = Some(deadline);
        true
    }

    pub(super) fn len(&self) -> usize {
        self.waiters.len()
    }

    pub(super) fn remove(&mut self, opaque: i32) -> Option<Sink> {
        self.waiters.remove(&opaque).map(|w| w.sink)
    }

    /// Every slot, to fail the calls of a closed connection.
    pub(super) fn drain(&mut self) -> Vec<Sink> {
        self.next_wake = None;
        self.waiters.drain().map(|(_, w)| w.sink).collect()
    }

    /// Takes the requests past their deadline at `now`; sets the next wake-up to the
    /// earliest deadline left.
    fn expire(&mut self, now: Instant, expired: &mut Vec<(i32, Sink)>) {
        let mut next: Option<Instant> = None;
        let mut past = Vec::new();
        for (opaque, w) in &self.waiters {
            if w.deadline <= now {
                past.push(*opaque);
            } else {
                next = Some(next.map_or(w.deadline, |n| n.min(w.deadline)));
            }
        }
        for opaque in past {
            if let Some(w) = self.waiters.remove(&opaque) {
                expired.push((opaque, w.sink));
            }
        }
        self.next_wake = next;
    }
}

impl Channel {
    /// Runs a response callback; one that panics is logged, and the reader (or the
    /// sweeper) calling it carries on.
    pub(super) fn call_back(&self, call: ResponseCallback, outcome: Result<RemotingCommand>) {
        if std::panic::catch_unwind(AssertUnwindSafe(move || call(outcome))).is_err() {
            warn!(peer = %self.inner.peer, "a response callback panicked");
        }
    }

    /// Registers a request's slot, waking the sweeper when its deadline comes first.
    pub(super) fn register(&self, opaque: i32, sink: Sink, deadline: Instant) {
        let wake = self.inner.pending.locked().insert(opaque, sink, deadline);
        if wake {
            self.inner.sweep.notify_one();
        }
    }

    /// The sweeper of one connection: fails requests past their deadline until the
    /// connection is closed.
    pub(super) async fn sweep_loop(self) {
        let closed = self.inner.closed.clone();
        let closed = closed.cancelled();
        tokio::pin!(closed);
        let mut expired = Vec::new();
        loop {
            let next = {
                let mut table = self.inner.pending.locked();
                let now = Instant::now();
                table.expire(now, &mut expired);
                table.next_wake
            };
            for (opaque, sink) in expired.drain(..) {
                sink.expire(&self, opaque);
            }
            let notified = self.inner.sweep.notified();
            match next {
                Some(at) => tokio::select! {
                    _ = &mut closed => return,
                    _ = notified => {}
                    _ = tokio::time::sleep_until(at) => {}
                },
                None => tokio::select! {
                    _ = &mut closed => return,
                    _ = notified => {}
                },
            }
        }
    }
}

/// A request on its way: await [`PendingResponse::wait`] for the answer.
pub struct PendingResponse {
    pub(super) channel: Channel,
    pub(super) rx: oneshot::Receiver<Reply>,
    pub(super) opaque: i32,
    pub(super) code: i32,
    pub(super) deadline: Instant,
    pub(super) started: Instant,
    pub(super) done: bool,
}

impl PendingResponse {
    pub(super) fn timeout_error(&self) -> RemotingError {
        RemotingError::Timeout {
            peer: self.channel.inner.peer,
            code: self.code,
            opaque: self.opaque,
            timeout: self.deadline.saturating_duration_since(self.started),
        }
    }

    /// The response, or a timeout / connection error. The pending slot is freed either way.
    pub async fn wait(mut self) -> Result<RemotingCommand> {
        std::future::poll_fn(|cx| self.poll_response(cx)).await
    }

    /// Polls for the answer (the sweeper fails the request at its deadline).
    pub(crate) fn poll_response(&mut self, cx: &mut Context<'_>) -> Poll<Result<RemotingCommand>> {
        let reply = match Pin::new(&mut self.rx).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(reply) => reply,
        };
        self.done = true;
        Poll::Ready(match reply {
            Ok(Reply::Response(response)) => Ok(response),
            Ok(Reply::Expired) => Err(self.timeout_error()),
            Err(_) => Err(self.channel.closed_error()),
        })
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
