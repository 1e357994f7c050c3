//! A channel without a socket, for a client that speaks another protocol.
//!
//! The broker keeps its clients by [`Channel`]: the registry of producers and consumers,
//! the transaction check-back, the connection listings all take one. A client that
//! reaches the broker some other way (a gRPC session) gets a detached channel: it has an
//! id, a peer address and a closed state like any other, and what the broker writes to
//! it (a CHECK_TRANSACTION_STATE request, a NOTIFY_CONSUMER_IDS_CHANGED) lands in a
//! bounded queue that the session reads with [`DetachedReceiver::recv`] and translates.
//! Apache's proxy does the same with its `GrpcClientChannel`, a Netty channel whose
//! writes become telemetry commands.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::outbox::{Outbox, Queued};
use super::{Channel, ConnectionConfig, Inner};
use crate::codec::RemotingCodec;
use crate::command::RemotingCommand;

/// The receiving end of a detached channel: the commands written to it, in order.
pub struct DetachedReceiver {
    rx: mpsc::Receiver<Queued>,
    codec: RemotingCodec,
    closed: CancellationToken,
    outbox: Arc<Outbox>,
}

impl Channel {
    /// A channel with no socket whose writes queue up, at most `capacity` of them, for
    /// the returned receiver (a full queue makes writers wait, and oneway writes time
    /// out as they would on a socket nobody reads).
    pub fn detached(
        peer: SocketAddr,
        local: SocketAddr,
        capacity: usize,
    ) -> (Channel, DetachedReceiver) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let config = ConnectionConfig::default();
        let inner = Inner::new(peer, local, &config, tx);
        let closed = inner.closed.clone();
        let channel = Channel {
            inner: Arc::new(inner),
        };
        let receiver = DetachedReceiver {
            rx,
            codec: RemotingCodec::new(config.limits),
            closed,
            outbox: channel.inner.outbox.clone(),
        };
        (channel, receiver)
    }
}

impl DetachedReceiver {
    /// The next command written to the channel; `None` once the channel is closed.
    pub async fn recv(&mut self) -> Option<RemotingCommand> {
        loop {
            let queued = tokio::select! {
                biased;
                queued = self.rx.recv() => queued?,
                _ = self.closed.cancelled() => return None,
            };
            let frame = &queued.frame;
            let mut buf = BytesMut::with_capacity(frame.len());
            buf.extend_from_slice(&frame.head);
            buf.extend_from_slice(&frame.body);
            let len = frame.len();
            drop(queued);
            self.outbox.wrote(len);
            match self.codec.decode(&mut buf) {
                Ok(Some(cmd)) => return Some(cmd),
                // Frames come from this process's own encoder; one that does not decode
                // is skipped rather than taken for the end of the channel.
                Ok(None) => debug!("detached channel: incomplete frame skipped"),
                Err(e) => debug!(error = %e, "detached channel: frame not decodable, skipped"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::protocol::request_code;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[tokio::test]
    async fn writes_come_out_of_the_receiver_in_order() {
        let (channel, mut rx) = Channel::detached(addr(1), addr(2), 4);
        assert_eq!(channel.peer_addr(), addr(1));
        for code in [
            request_code::CHECK_TRANSACTION_STATE,
            request_code::HEART_BEAT,
        ] {
            let mut cmd = RemotingCommand::request(code);
            cmd.body = bytes::Bytes::from_static(b"body");
            channel
                .invoke_oneway(cmd, Duration::from_secs(1))
                .await
                .expect("queued");
        }
        let first = rx.recv().await.expect("first");
        assert_eq!(first.code, request_code::CHECK_TRANSACTION_STATE);
        assert!(first.is_oneway());
        assert_eq!(&first.body[..], b"body");
        assert_eq!(
            rx.recv().await.expect("second").code,
            request_code::HEART_BEAT
        );
    }

    #[tokio::test]
    async fn a_full_queue_times_out_and_a_closed_channel_ends_the_receiver() {
        let (channel, mut rx) = Channel::detached(addr(1), addr(2), 1);
        let cmd = || RemotingCommand::request(request_code::HEART_BEAT);
        channel
            .invoke_oneway(cmd(), Duration::from_millis(50))
            .await
            .expect("room for one");
        assert!(channel
            .invoke_oneway(cmd(), Duration::from_millis(50))
            .await
            .is_err());
        channel.close();
        assert!(channel.is_closed());
        // What was queued before the close is still handed out, then the end.
        assert!(rx.recv().await.is_some());
        assert!(rx.recv().await.is_none());
        assert!(channel
            .invoke_oneway(cmd(), Duration::from_millis(50))
            .await
            .is_err());
    }
}
