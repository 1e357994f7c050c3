//! The gRPC endpoint's shared pieces, below the RPC handlers: [`GrpcService`] (the
//! broker, the client sessions, the bound port, the stream budget) that every handler
//! takes, and the stream plumbing the server and the streams share. The
//! `MessagingService` trait impl (`service`) sits on top of the handlers.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use vostok_remoting::Channel;

use super::context::RequestContext;
use super::session::Sessions;
use crate::state::Broker;

/// Receive, pull and telemetry streams open at once, in all; beyond it a receive or
/// pull answers TOO_MANY_REQUESTS and a telemetry stream RESOURCE_EXHAUSTED.
const MAX_STREAMS: usize = 16_384;

/// The gRPC service of one broker.
pub(crate) struct GrpcService {
    pub(crate) broker: Arc<Broker>,
    pub(crate) sessions: Arc<Sessions>,
    /// The port this service is bound to: what routes name as every broker's endpoint.
    pub(crate) grpc_port: u16,
    streams: Arc<Semaphore>,
}

impl GrpcService {
    pub(crate) fn new(broker: Arc<Broker>, sessions: Arc<Sessions>, grpc_port: u16) -> Self {
        GrpcService {
            broker,
            sessions,
            grpc_port,
            streams: Arc::new(Semaphore::new(MAX_STREAMS)),
        }
    }

    /// The channel of the request's session, when the client sent its settings.
    pub(crate) fn session_channel(&self, ctx: &RequestContext) -> Option<Channel> {
        self.sessions
            .get(&ctx.client_id)
            .map(|session| session.channel.clone())
    }

    pub(crate) fn stream_permit(&self) -> Option<OwnedSemaphorePermit> {
        self.streams.clone().try_acquire_owned().ok()
    }
}

/// A stream of what a bounded queue receives.
pub(crate) fn queue_stream<T: Send + 'static>(
    rx: mpsc::Receiver<T>,
) -> Pin<Box<dyn Stream<Item = T> + Send>> {
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}
