//! The lite pull consumer's side of the consumer core (Java `consumeRequestCache`,
//! with the per-queue state of `AssignedMessageQueue`): pulled messages wait in a
//! bounded buffer until the application polls them; polled offsets wait for the next
//! commit; paused queues are not pulled.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tracing::info;
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::BoxFuture;

use crate::consumer::config::LitePullConsumerConfig;
use crate::consumer::core::{ConsumerCore, ConsumerKind};
use crate::consumer::process_queue::ProcessQueue;

/// The messages of one pull (Java `ConsumeRequest`).
pub(super) struct ConsumeRequest {
    pub(super) mq: MessageQueue,
    pub(super) pq: Arc<ProcessQueue>,
    pub(super) msgs: Vec<MessageExt>,
}

/// See the module documentation.
pub(super) struct ConsumeRequestCache {
    pub(super) config: LitePullConsumerConfig,
    tx: mpsc::Sender<ConsumeRequest>,
    pub(super) rx: tokio::sync::Mutex<mpsc::Receiver<ConsumeRequest>>,
    /// Messages pulled and not polled yet.
    pub(super) buffered: AtomicUsize,
    /// Offset after the last polled message of each queue.
    pub(super) consumed: Mutex<HashMap<MessageQueue, i64>>,
    pub(super) paused: Mutex<HashSet<MessageQueue>>,
    /// Requests of paused queues that were already pulled, kept for after `resume`.
    pub(super) parked: Mutex<Vec<ConsumeRequest>>,
    pub(super) last_commit: Mutex<Instant>,
}

impl ConsumeRequestCache {
    pub(super) fn new(config: LitePullConsumerConfig) -> Self {
        let (tx, rx) = mpsc::channel(1024);
        ConsumeRequestCache {
            config,
            tx,
            rx: tokio::sync::Mutex::new(rx),
            buffered: AtomicUsize::new(0),
            consumed: Mutex::default(),
            paused: Mutex::default(),
            parked: Mutex::default(),
            last_commit: Mutex::new(Instant::now()),
        }
    }
}

impl ConsumerKind for ConsumeRequestCache {
    fn deliver(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        mq: MessageQueue,
        pq: Arc<ProcessQueue>,
        msgs: Vec<MessageExt>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            pq.put(&msgs);
            self.buffered.fetch_add(msgs.len(), Ordering::AcqRel);
            let request = ConsumeRequest { mq, pq, msgs };
            tokio::select! {
                _ = core.shutdown.cancelled() => {}
                r = self.tx.send(request) => { let _ = r; }
            }
        })
    }

    fn flow_control(&self, mq: &MessageQueue, pq: &ProcessQueue) -> Option<Duration> {
        if self.paused.locked().contains(mq) {
            return Some(Duration::from_millis(100));
        }
        let c = &self.config;
        if self.buffered.load(Ordering::Acquire) > c.pull_threshold_for_all
            || pq.msg_count() > c.common.pull_threshold_for_queue
            || pq.msg_size() > c.common.pull_threshold_size_for_queue * 1024 * 1024
        {
            return Some(Duration::from_millis(50));
        }
        None
    }

    fn on_queue_removed<'a>(
        &'a self,
        core: &'a ConsumerCore,
        mq: &'a MessageQueue,
        _pq: &'a ProcessQueue,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let consumed = self.consumed.locked().remove(mq);
            if let (true, Some(offset)) = (self.config.auto_commit, consumed) {
                core.offsets.update(mq, offset, false);
            }
        })
    }

    fn reset_offset(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        _topic: String,
        _offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            // As in Java, only push consumers follow a reset; a lite pull application
            // moves its queues with `seek`.
            info!(group = %core.group, "reset offset ignored by a lite pull consumer");
        })
    }

    fn consume_message_directly<'a>(
        &'a self,
        _core: &'a ConsumerCore,
        _msg: MessageExt,
        _broker_name: Option<String>,
    ) -> BoxFuture<'a, serde_json::Value> {
        Box::pin(async {
            serde_json::json!({
                "order": false,
                "autoCommit": self.config.auto_commit,
                "consumeResult": "CR_THROW_EXCEPTION",
                "remark": "a pull consumer has no listener to consume directly",
                "spentTimeMills": 0,
            })
        })
    }

    fn running_properties(&self, properties: &mut serde_json::Map<String, serde_json::Value>) {
        properties.insert(
            "autoCommit".into(),
            serde_json::Value::String(self.config.auto_commit.to_string()),
        );
    }
}
