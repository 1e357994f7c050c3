//! The producer that carries a client's trace records (Java `AsyncTraceDispatcher`'s
//! `traceProducer`): built here, beside the producer, so that `trace` needs no
//! producer of its own kind to send with.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::{Producer, ProducerConfig};
use crate::instance::ClientConfig;
use crate::message::Message;
use crate::trace::{TraceConfig, TraceDispatcher, TraceProducer};

/// Largest trace message (Java `AsyncTraceDispatcher`'s `maxMsgSize`).
const TRACE_MAX_MESSAGE_SIZE: usize = 128_000;

impl TraceProducer for Producer {
    fn start(&self) -> BoxFuture<'_, crate::Result<()>> {
        // Boxed as well because a producer's start starts its own trace dispatcher.
        Box::pin(Producer::start(self))
    }

    fn send(&self, message: Message) -> BoxFuture<'_, crate::Result<()>> {
        Box::pin(async move { Producer::send(self, message).await.map(drop) })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(Producer::shutdown(self))
    }
}

/// The dispatcher of a host client (`kind` is `PRODUCER` or `CONSUMER`), when tracing
/// is on: its producer shares the host's name servers and credentials, in a group of
/// its own (`_INNER_TRACE_PRODUCER-<group>-<kind>`), outside any namespace.
pub(crate) fn dispatcher(
    trace: &TraceConfig,
    client: &ClientConfig,
    group: &str,
    kind: &str,
) -> Option<Arc<TraceDispatcher>> {
    if !trace.enable_msg_trace {
        return None;
    }
    let mut client = client.clone();
    client.namespace = String::new();
    let producer = Producer::new(ProducerConfig {
        client,
        producer_group: format!("_INNER_TRACE_PRODUCER-{group}-{kind}"),
        send_msg_timeout: Duration::from_secs(5),
        max_message_size: TRACE_MAX_MESSAGE_SIZE,
        ..ProducerConfig::default()
    });
    Some(Arc::new(TraceDispatcher::new(
        trace.topic().to_owned(),
        Arc::new(producer),
    )))
}
