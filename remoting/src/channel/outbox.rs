//! The writing side of a connection: a queue bounded in bytes, and the task that
//! drains it into the socket.
//!
//! Every queued frame carries a [`Reservation`] of the process's memory budget and
//! counts towards the connection's queued bytes until it is written (or dropped with
//! the connection). Requests this side sends wait while the queue is above
//! `writeBufferHighWaterMark`; responses do not wait (their memory is already
//! reserved), but the reader stops reading new requests while the queue is that full,
//! so a peer that does not read its answers stops being read: backpressure, not
//! buffering. The reader closes the connection when the queue makes no progress for
//! `writeStallTimeoutMillis`.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};
use tracing::debug;

use super::Inner;
use crate::budget::Reservation;
use crate::codec::Frame;
use crate::support::time::uptime_millis;
use crate::writer::WriteBatch;

/// What a queued frame costs beyond its bytes (its queue slot and handles).
pub(crate) const FRAME_OVERHEAD: usize = 128;

/// Queued bytes of one connection.
pub(crate) struct Outbox {
    queued: AtomicUsize,
    /// Bytes written since the connection opened: the stall check's progress mark.
    written: AtomicU64,
    room: Notify,
    high: usize,
    low: usize,
}

/// One frame in the queue; dropping it (written or not) takes it out of the count.
pub(crate) struct Queued {
    pub(crate) frame: Frame,
    _charge: Reservation,
    outbox: Arc<Outbox>,
    len: usize,
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.outbox.queued.fetch_sub(self.len, Ordering::AcqRel);
    }
}

impl Outbox {
    pub(crate) fn new(high: usize, low: usize) -> Arc<Outbox> {
        Arc::new(Outbox {
            queued: AtomicUsize::new(0),
            written: AtomicU64::new(0),
            room: Notify::new(),
            high: high.max(1),
            low: low.min(high),
        })
    }

    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    pub(crate) fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// At or past the high-water mark: the reader stops reading.
    pub(crate) fn is_full(&self) -> bool {
        self.queued() >= self.high
    }

    /// Counts a frame in, whatever the queue holds (responses).
    pub(crate) fn admit(self: &Arc<Self>, frame: Frame, charge: Reservation) -> Queued {
        let len = frame.len();
        self.queued.fetch_add(len, Ordering::AcqRel);
        Queued {
            frame,
            _charge: charge,
            outbox: self.clone(),
            len,
        }
    }

    /// Counts a frame in once the queue is below its high-water mark, or empty (a
    /// frame larger than the mark still goes, alone). Cancel-safe.
    pub(crate) async fn admit_when_room(
        self: &Arc<Self>,
        frame: Frame,
        charge: Reservation,
    ) -> Queued {
        let len = frame.len();
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let taken = self
                .queued
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                    (queued == 0 || queued + len <= self.high).then_some(queued + len)
                });
            if taken.is_ok() {
                return Queued {
                    frame,
                    _charge: charge,
                    outbox: self.clone(),
                    len,
                };
            }
            notified.await;
        }
    }

    /// Resolves once the queue is at or below its low-water mark.
    pub(crate) async fn drained(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.queued() <= self.low {
                return;
            }
            notified.await;
        }
    }

    /// Records `bytes` gone to the peer and wakes whoever waits for room.
    pub(crate) fn wrote(&self, bytes: usize) {
        self.written.fetch_add(bytes as u64, Ordering::AcqRel);
        self.room.notify_waiters();
    }
}

/// How long a closed connection may take to write what was queued before it closed.
const CLOSING_FLUSH: Duration = Duration::from_secs(5);

/// Writes one batch (and flushes it: TLS holds records back until flushed; a
/// socket's flush does nothing). Gives up at once when the connection is aborted,
/// and [`CLOSING_FLUSH`] after it is closed.
async fn write_batch<W: AsyncWrite + Unpin>(
    batch: &mut WriteBatch,
    wr: &mut W,
    inner: &Inner,
) -> io::Result<()> {
    let write = async {
        batch.write_to(wr).await?;
        wr.flush().await
    };
    tokio::pin!(write);
    // Most writes complete at once: only one that waits watches the tokens.
    if let Poll::Ready(result) =
        std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await
    {
        return result;
    }
    tokio::select! {
        biased;
        result = &mut write => result,
        _ = inner.aborted.cancelled() => Err(io::ErrorKind::ConnectionAborted.into()),
        _ = inner.closed.cancelled() => tokio::select! {
            biased;
            result = tokio::time::timeout(CLOSING_FLUSH, &mut write) => {
                result.unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
            }
            _ = inner.aborted.cancelled() => Err(io::ErrorKind::ConnectionAborted.into()),
        },
    }
}

/// Drains the queue into the socket in batches until the connection closes.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Queued>,
    inner: Arc<Inner>,
) {
    let mut batch = WriteBatch::default();
    // Kept until their batch is written: their bytes still count until then.
    let mut held: Vec<Queued> = Vec::new();
    let closed = inner.closed.clone();
    let closed = closed.cancelled();
    tokio::pin!(closed);
    loop {
        let first = tokio::select! {
            biased;
            queued = rx.recv() => match queued {
                Some(queued) => queued,
                None => break,
            },
            _ = &mut closed => {
                // Flush what is already queued (e.g. responses of drained requests).
                rx.close();
                while let Ok(queued) = rx.try_recv() {
                    batch.push(&queued.frame);
                    held.push(queued);
                }
                if !batch.is_empty() {
                    let _ = write_batch(&mut batch, &mut wr, &inner).await;
                }
                break;
            }
        };
        batch.push(&first.frame);
        held.push(first);
        while batch.has_room() {
            match rx.try_recv() {
                Ok(queued) => {
                    batch.push(&queued.frame);
                    held.push(queued);
                }
                Err(_) => break,
            }
        }
        let result = write_batch(&mut batch, &mut wr, &inner).await;
        let bytes = held.iter().map(|q| q.len).sum();
        held.clear();
        inner.outbox.wrote(bytes);
        inner
            .last_activity_ms
            .store(uptime_millis(), Ordering::Relaxed);
        if let Err(e) = result {
            debug!(peer = %inner.peer, error = %e, "write failed; closing connection");
            inner.mark_closed();
            break;
        }
    }
    drop(held);
    let _ = wr.shutdown().await;
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::budget::MemoryBudget;

    fn frame(len: usize) -> Frame {
        Frame {
            head: Vec::new(),
            body: Bytes::from(vec![0; len]),
        }
    }

    #[tokio::test]
    async fn room_is_bytes_and_comes_back_when_frames_are_gone() {
        let budget = MemoryBudget::new(10_000, 10_000);
        let outbox = Outbox::new(1000, 200);
        let a = outbox
            .admit_when_room(frame(600), budget.try_reserve(600).unwrap())
            .await;
        let b = outbox.admit(frame(600), budget.try_reserve(600).unwrap());
        assert!(outbox.is_full());
        assert_eq!(budget.used(), 1200);
        let o = outbox.clone();
        let c = tokio::spawn(async move { o.admit_when_room(frame(300), o_charge()).await.len });
        fn o_charge() -> Reservation {
            MemoryBudget::unlimited().empty()
        }
        tokio::task::yield_now().await;
        assert!(!c.is_finished(), "1200 queued: no room for 300");
        drop(a);
        drop(b);
        outbox.wrote(1200);
        assert_eq!(c.await.unwrap(), 300);
        assert_eq!(outbox.queued(), 0, "the waiter's frame was dropped too");
        assert_eq!(budget.used(), 0);
        // A frame larger than the mark goes alone into an empty queue.
        let big = outbox.admit_when_room(frame(5000), budget.empty()).await;
        assert!(outbox.is_full());
        drop(big);
        outbox.drained().await;
    }
}
