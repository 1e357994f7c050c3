//! The trace dispatcher (Java `AsyncTraceDispatcher`): hooks hand it records without
//! waiting; one task batches them and sends each batch as one message to the trace
//! topic through a producer of its own.
//!
//! * The queue holds [`QUEUE_CAPACITY`] records. When it is full a record is dropped
//!   and counted ([`TraceDispatcher::dropped`]): tracing never slows a send or a
//!   listener call.
//! * A batch goes when its records reach [`MAX_BATCH_BYTES`] or its first record has
//!   waited [`BATCH_WAIT`], and when the dispatcher shuts down.
//! * A trace message's body is its records' text; its keys are every record's msgId and
//!   message keys, so that a lookup by key in the trace topic finds it.
//! * The dispatcher sends through a [`TraceProducer`]: the SDK's own producer
//!   (`producer::trace`), seen through a trait so that tracing does not depend on the
//!   producer it traces.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, warn};
use vostok_remoting::support::sync::MutexExt;

use super::data::{encode, TraceContext, TraceTransfer};
use crate::message::Message;

/// Records waiting to be batched (Java's `traceContextQueue`).
pub const QUEUE_CAPACITY: usize = 1024;
/// A batch is sent once its text reaches this size (Java: `maxMsgSize - 10000`).
pub const MAX_BATCH_BYTES: usize = 128_000 - 10_000;
/// Longest a record waits for others to join its batch (Java `waitTimeThresholdMil`).
pub const BATCH_WAIT: Duration = Duration::from_millis(500);
/// Longest a shutdown waits for the last batches.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// What a dispatcher sends its batches with: a producer of its own, started and shut
/// down with the dispatcher.
pub trait TraceProducer: Send + Sync + 'static {
    fn start(&self) -> BoxFuture<'_, crate::Result<()>>;
    /// Sends one trace message and waits for the answer.
    fn send(&self, message: Message) -> BoxFuture<'_, crate::Result<()>>;
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

/// Batches trace records and sends them to one trace topic.
pub struct TraceDispatcher {
    topic: String,
    queue: Mutex<Option<mpsc::Sender<TraceContext>>>,
    dropped: AtomicU64,
    worker: Mutex<Option<JoinHandle<()>>>,
    producer: Arc<dyn TraceProducer>,
}

impl TraceDispatcher {
    /// A dispatcher sending to `topic` with `producer` (started by [`Self::start`]).
    pub fn new(topic: String, producer: Arc<dyn TraceProducer>) -> Self {
        TraceDispatcher {
            topic,
            queue: Mutex::new(None),
            dropped: AtomicU64::new(0),
            worker: Mutex::new(None),
            producer,
        }
    }

    /// The trace topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Records dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Starts the trace producer and the batching task.
    pub async fn start(&self) -> crate::Result<()> {
        self.producer.start().await?;
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let worker = tokio::spawn(run(rx, self.topic.clone(), self.producer.clone()));
        *self.queue.locked() = Some(tx);
        *self.worker.locked() = Some(worker);
        Ok(())
    }

    /// Queues a record; never waits. A full queue drops it and counts it.
    pub fn append(&self, ctx: TraceContext) {
        let queue = self.queue.locked();
        let Some(tx) = queue.as_ref() else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(ctx) {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            debug!(topic = %self.topic, dropped = n, "trace queue full; record dropped");
        }
    }

    /// Sends what is queued (bounded wait), then stops the task and the producer.
    pub async fn shutdown(&self) {
        drop(self.queue.locked().take());
        let worker = self.worker.locked().take();
        if let Some(worker) = worker {
            if tokio::time::timeout(SHUTDOWN_WAIT, worker).await.is_err() {
                warn!(topic = %self.topic, "trace records not sent within the shutdown wait");
            }
        }
        self.producer.shutdown().await;
    }
}

/// The batching task: ends when every sender is gone, after sending what it holds.
async fn run(
    mut rx: mpsc::Receiver<TraceContext>,
    topic: String,
    producer: Arc<dyn TraceProducer>,
) {
    let mut batch = Batch::default();
    loop {
        let received = match batch.first_at {
            Some(first) => match tokio::time::timeout_at(first + BATCH_WAIT, rx.recv()).await {
                Ok(r) => r,
                Err(_) => {
                    send(producer.as_ref(), &topic, batch.take()).await;
                    continue;
                }
            },
            None => rx.recv().await,
        };
        let Some(ctx) = received else {
            break;
        };
        if ctx.beans.is_empty() {
            continue;
        }
        if batch.add(encode(&ctx)) >= MAX_BATCH_BYTES {
            send(producer.as_ref(), &topic, batch.take()).await;
        }
    }
    send(producer.as_ref(), &topic, batch.take()).await;
}

#[derive(Default)]
struct Batch {
    records: Vec<TraceTransfer>,
    bytes: usize,
    first_at: Option<Instant>,
}

impl Batch {
    /// Adds a record; returns the batch's size in bytes.
    fn add(&mut self, t: TraceTransfer) -> usize {
        self.first_at.get_or_insert_with(Instant::now);
        self.bytes += t.data.len();
        self.records.push(t);
        self.bytes
    }

    fn take(&mut self) -> Vec<TraceTransfer> {
        self.bytes = 0;
        self.first_at = None;
        std::mem::take(&mut self.records)
    }
}

/// The trace message of a batch: the records' text as body, the distinct keys.
pub fn trace_message(topic: &str, records: &[TraceTransfer]) -> Message {
    let mut body = String::with_capacity(records.iter().map(|r| r.data.len()).sum());
    let mut keys = BTreeSet::new();
    for r in records {
        body.push_str(&r.data);
        keys.extend(r.keys.iter().map(String::as_str));
    }
    Message::new(topic, body.into_bytes()).with_keys(keys)
}

async fn send(producer: &dyn TraceProducer, topic: &str, records: Vec<TraceTransfer>) {
    if records.is_empty() {
        return;
    }
    let message = trace_message(topic, &records);
    if let Err(e) = producer.send(message).await {
        warn!(topic = %topic, records = records.len(), error = %e, "trace records not sent");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps what it is asked to send.
    #[derive(Default)]
    struct Sent(Mutex<Vec<Message>>);

    impl TraceProducer for Sent {
        fn start(&self) -> BoxFuture<'_, crate::Result<()>> {
            Box::pin(async { Ok(()) })
        }
        fn send(&self, message: Message) -> BoxFuture<'_, crate::Result<()>> {
            self.0.locked().push(message);
            Box::pin(async { Ok(()) })
        }
        fn shutdown(&self) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
    }

    fn pub_record(msg_id: &str) -> TraceContext {
        let mut ctx = TraceContext::new(super::super::TraceType::Pub);
        ctx.beans.push(super::super::TraceBean {
            msg_id: msg_id.into(),
            ..Default::default()
        });
        ctx
    }

    #[tokio::test]
    async fn a_shutdown_sends_what_is_queued_as_one_message() {
        let sent = Arc::new(Sent::default());
        let d = TraceDispatcher::new("T".into(), sent.clone());
        d.start().await.expect("start");
        d.append(pub_record("ID1"));
        d.append(pub_record("ID2"));
        d.shutdown().await;
        let sent = sent.0.locked();
        assert_eq!(
            sent.len(),
            1,
            "two records within the batch wait: one message"
        );
        assert_eq!(sent[0].keys().collect::<Vec<_>>(), ["ID1", "ID2"]);
    }

    #[test]
    fn a_full_queue_drops_and_counts_without_waiting() {
        let d = TraceDispatcher::new("T".into(), Arc::new(Sent::default()));
        d.append(super::super::TraceContext::new(
            super::super::TraceType::Pub,
        ));
        assert_eq!(
            d.dropped(),
            0,
            "not started: nothing queued, nothing counted"
        );
        let (tx, mut rx) = mpsc::channel(2);
        *d.queue.locked() = Some(tx);
        for _ in 0..5 {
            d.append(super::super::TraceContext::new(
                super::super::TraceType::Pub,
            ));
        }
        assert_eq!(d.dropped(), 3);
        assert!(rx.try_recv().is_ok() && rx.try_recv().is_ok());
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn a_batch_is_one_message_keyed_by_every_id_and_key() {
        let records = vec![
            TraceTransfer {
                data: "a\u{2}".into(),
                keys: vec!["ID1".into(), "k".into()],
            },
            TraceTransfer {
                data: "b\u{2}".into(),
                keys: vec!["ID1".into(), "ID2".into()],
            },
        ];
        let m = trace_message("RMQ_SYS_TRACE_TOPIC", &records);
        assert_eq!(&m.body[..], b"a\x02b\x02");
        assert_eq!(m.keys().collect::<Vec<_>>(), ["ID1", "ID2", "k"]);
    }
}
