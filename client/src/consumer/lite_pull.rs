//! The lite pull consumer (Java `DefaultLitePullConsumer`): the application calls
//! [`LitePullConsumer::poll`]; pull tasks fill a bounded buffer behind it.
//!
//! Queues come from a subscription (rebalanced like the push consumer) or from
//! [`LitePullConsumer::assign`]. Offsets advance when messages are polled and are
//! committed automatically every `autoCommitIntervalMillis` (at poll time) or by
//! [`LitePullConsumer::commit`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tracing::info;
use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, MessageQueue,
};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::BoxFuture;

use super::core::{ConsumerCore, CoreParams, PullSettings, PullSink};
use super::process_queue::ProcessQueue;
use super::{pull, rebalance, AllocateMessageQueueAveragely, AllocateStrategy, MessageSelector};
use crate::error::{ClientError, Result};
use crate::instance::registry::ConsumerInner;
use crate::instance::{ClientConfig, ClientInstance};
use crate::route::subscribe_queues;
use crate::service_state::ServiceState;

/// Lite pull consumer options with RocketMQ's names and defaults.
#[derive(Clone)]
pub struct LitePullConsumerConfig {
    pub client: ClientConfig,
    pub consumer_group: String,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    pub consume_timestamp: Option<String>,
    pub allocate_strategy: Arc<dyn AllocateStrategy>,
    /// `autoCommit`.
    pub auto_commit: bool,
    /// `autoCommitIntervalMillis`.
    pub auto_commit_interval: Duration,
    /// `pullBatchSize`.
    pub pull_batch_size: i32,
    /// `pullThresholdForAll`: buffered messages before pulls pause.
    pub pull_threshold_for_all: usize,
    pub pull_threshold_for_queue: usize,
    /// MiB.
    pub pull_threshold_size_for_queue: u64,
    /// `pollTimeoutMillis`: default timeout of [`LitePullConsumer::poll_default`].
    pub poll_timeout: Duration,
    /// `brokerSuspendMaxTimeMillis`.
    pub broker_suspend_max_time: Duration,
    /// Pull call timeout; longer than the broker hold.
    pub consumer_pull_timeout: Duration,
    pub pull_time_delay_when_exception: Duration,
}

impl Default for LitePullConsumerConfig {
    fn default() -> Self {
        LitePullConsumerConfig {
            client: ClientConfig::default(),
            consumer_group: topic::DEFAULT_CONSUMER_GROUP.to_owned(),
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_timestamp: None,
            allocate_strategy: Arc::new(AllocateMessageQueueAveragely),
            auto_commit: true,
            auto_commit_interval: Duration::from_secs(5),
            pull_batch_size: 10,
            pull_threshold_for_all: 10_000,
            pull_threshold_for_queue: 1000,
            pull_threshold_size_for_queue: 100,
            poll_timeout: Duration::from_secs(5),
            broker_suspend_max_time: Duration::from_secs(20),
            consumer_pull_timeout: Duration::from_secs(30),
            pull_time_delay_when_exception: Duration::from_secs(1),
        }
    }
}

impl LitePullConsumerConfig {
    pub fn new(group: impl Into<String>, namesrv_addr: &str) -> Self {
        LitePullConsumerConfig {
            client: ClientConfig::with_namesrv(namesrv_addr),
            consumer_group: group.into(),
            ..Default::default()
        }
    }
}

struct Batch {
    mq: MessageQueue,
    pq: Arc<ProcessQueue>,
    msgs: Vec<MessageExt>,
}

/// See the module documentation.
#[derive(Clone)]
pub struct LitePullConsumer {
    shared: Arc<LiteShared>,
}

struct LiteShared {
    config: LitePullConsumerConfig,
    group: String,
    state: ServiceState,
    pending_subs: RwLock<Vec<(String, MessageSelector)>>,
    core: OnceLock<Arc<ConsumerCore>>,
    tx: mpsc::Sender<Batch>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Batch>>,
    buffered: AtomicUsize,
    /// Offset after the last polled message of each queue.
    consumed: Mutex<HashMap<MessageQueue, i64>>,
    paused: Mutex<HashSet<MessageQueue>>,
    /// Batches of paused queues that were already pulled, kept for after `resume`.
    parked: Mutex<Vec<Batch>>,
    last_commit: Mutex<Instant>,
}

impl LitePullConsumer {
    pub fn new(config: LitePullConsumerConfig) -> Self {
        let group = topic::wrap_namespace(&config.client.namespace, &config.consumer_group);
        let (tx, rx) = mpsc::channel(1024);
        LitePullConsumer {
            shared: Arc::new(LiteShared {
                config,
                group,
                state: ServiceState::default(),
                pending_subs: RwLock::default(),
                core: OnceLock::new(),
                tx,
                rx: tokio::sync::Mutex::new(rx),
                buffered: AtomicUsize::new(0),
                consumed: Mutex::default(),
                paused: Mutex::default(),
                parked: Mutex::default(),
                last_commit: Mutex::new(Instant::now()),
            }),
        }
    }

    /// Subscribes to a topic; queues are assigned by rebalancing. Call before `start`.
    pub fn subscribe(&self, topic: &str, expression: &str) -> Result<()> {
        self.subscribe_with_selector(topic, MessageSelector::by_tag(expression))
    }

    pub fn subscribe_with_selector(&self, topic: &str, selector: MessageSelector) -> Result<()> {
        topic::validate_topic(topic).map_err(ClientError::InvalidArgument)?;
        match self.shared.core.get() {
            Some(core) => core.subscribe(topic, &selector),
            None => self
                .shared
                .pending_subs
                .write_locked()
                .push((topic.to_owned(), selector)),
        }
        Ok(())
    }

    pub async fn start(&self) -> Result<()> {
        let shared = &self.shared;
        let config = &shared.config;
        topic::validate_group(&config.consumer_group).map_err(ClientError::InvalidArgument)?;
        shared.state.start("consumer")?;
        let instance = ClientInstance::get_or_create(&config.client)?;
        let core = Arc::new(ConsumerCore::new(
            instance.clone(),
            CoreParams {
                group: config.consumer_group.clone(),
                model: config.message_model,
                consume_type: ConsumeType::ConsumeActively,
                consume_from_where: config.consume_from_where,
                consume_timestamp: config.consume_timestamp.clone(),
                strategy: config.allocate_strategy.clone(),
                orderly: false,
                max_reconsume_times: -1,
                pull: PullSettings {
                    batch_size: config.pull_batch_size,
                    suspend: config.broker_suspend_max_time,
                    timeout: config.consumer_pull_timeout,
                    exception_delay: config.pull_time_delay_when_exception,
                    interval: Duration::ZERO,
                    post_subscription: true,
                    lite: true,
                },
            },
        )?);
        let subs = std::mem::take(&mut *shared.pending_subs.write_locked());
        for (t, selector) in &subs {
            core.subscribe(t, selector);
        }
        let _ = core.sink.set(shared.clone());
        let _ = shared.core.set(core.clone());
        if let Err(e) = instance.register_consumer(shared.clone()) {
            shared.state.mark_shut_down();
            return Err(e);
        }
        instance.start();
        for t in core.subscribed_topics() {
            let _ = instance.update_route(&t).await;
        }
        instance.send_heartbeat_to_all_brokers().await;
        instance.rebalance_immediately();
        info!(group = %shared.group, client_id = %instance.client_id(), "lite pull consumer started");
        Ok(())
    }

    fn core(&self) -> Result<&Arc<ConsumerCore>> {
        self.shared.state.check_running("consumer")?;
        self.shared
            .core
            .get()
            .ok_or(ClientError::NotStarted("consumer"))
    }

    /// The readable queues of a topic.
    pub async fn fetch_message_queues(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        let core = self.core()?;
        let wrapped = core.wrap(topic);
        let route =
            core.instance
                .update_route(&wrapped)
                .await?
                .ok_or_else(|| ClientError::NoRoute {
                    topic: topic.to_owned(),
                })?;
        Ok(subscribe_queues(&wrapped, &route)
            .into_iter()
            .map(|mq| {
                MessageQueue::new(
                    topic::unwrap_namespace(&core.namespace, &mq.topic),
                    mq.broker_name,
                    mq.queue_id,
                )
            })
            .collect())
    }

    /// Consumes exactly these queues (no rebalancing), each from its committed offset.
    pub async fn assign(&self, queues: &[MessageQueue]) -> Result<()> {
        let core = self.core()?.clone();
        core.assigned.store(true, Ordering::Release);
        // Assigned topics are read whole: a `*` subscription unless one was given.
        for q in queues {
            if core.subscription(&core.wrap(&q.topic)).is_none() {
                core.subscribe(&q.topic, &MessageSelector::by_tag("*"));
            }
        }
        let wanted: Vec<MessageQueue> = queues
            .iter()
            .map(|q| MessageQueue::new(core.wrap(&q.topic), q.broker_name.clone(), q.queue_id))
            .collect();
        for mq in core.assigned_queues() {
            if !wanted.contains(&mq) {
                if let Some(pq) = core.process_queue(&mq) {
                    rebalance::remove_queue(&core, &mq, &pq).await;
                }
            }
        }
        for mq in wanted {
            if core.process_queue(&mq).is_some() {
                continue;
            }
            let offset = core.compute_pull_from_where(&mq).await?;
            self.start_queue(&core, mq, offset);
        }
        Ok(())
    }

    fn start_queue(&self, core: &Arc<ConsumerCore>, mq: MessageQueue, offset: i64) {
        let pq = Arc::new(ProcessQueue::new());
        core.pqs.locked().insert(mq.clone(), pq.clone());
        pull::spawn(core.clone(), mq, pq, offset);
    }

    /// Messages pulled so far, waiting up to `timeout` for some.
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<MessageExt>> {
        let core = self.core()?.clone();
        let shared = &self.shared;
        if shared.config.auto_commit {
            let due = shared.last_commit.locked().elapsed() >= shared.config.auto_commit_interval;
            if due {
                self.commit().await?;
            }
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = shared.rx.lock().await;
        loop {
            let resumed = {
                let paused = shared.paused.locked();
                let mut parked = shared.parked.locked();
                parked
                    .iter()
                    .position(|b| !paused.contains(&b.mq))
                    .map(|i| parked.remove(i))
            };
            let batch = match resumed {
                Some(b) => b,
                None => tokio::select! {
                    _ = core.shutdown.cancelled() => return Err(ClientError::ShutDown("consumer")),
                    b = tokio::time::timeout_at(deadline, rx.recv()) => match b {
                        Ok(Some(b)) => b,
                        Ok(None) | Err(_) => return Ok(Vec::new()),
                    },
                },
            };
            if batch.pq.is_dropped() {
                shared
                    .buffered
                    .fetch_sub(batch.msgs.len(), Ordering::AcqRel);
                continue;
            }
            if shared.paused.locked().contains(&batch.mq) {
                shared.parked.locked().push(batch);
                continue;
            }
            shared
                .buffered
                .fetch_sub(batch.msgs.len(), Ordering::AcqRel);
            if let Some(offset) = batch.pq.remove(batch.msgs.iter().map(|m| m.queue_offset)) {
                shared.consumed.locked().insert(batch.mq.clone(), offset);
            }
            return Ok(batch.msgs);
        }
    }

    pub async fn poll_default(&self) -> Result<Vec<MessageExt>> {
        self.poll(self.shared.config.poll_timeout).await
    }

    /// Commits the offsets of everything polled so far, waiting for the broker.
    pub async fn commit(&self) -> Result<()> {
        let core = self.core()?;
        let consumed: Vec<(MessageQueue, i64)> = self
            .shared
            .consumed
            .locked()
            .iter()
            .map(|(m, o)| (m.clone(), *o))
            .collect();
        for (mq, offset) in consumed {
            core.offsets.update(&mq, offset, false);
            core.offsets.persist(&mq).await;
        }
        *self.shared.last_commit.locked() = Instant::now();
        Ok(())
    }

    /// The committed offset of a queue on the broker (or in the local file).
    pub async fn committed(&self, mq: &MessageQueue) -> Result<Option<i64>> {
        let core = self.core()?;
        let mq = MessageQueue::new(core.wrap(&mq.topic), mq.broker_name.clone(), mq.queue_id);
        core.offsets.read_from_store(&mq).await
    }

    /// Moves an assigned queue to `offset`: buffered messages of it are discarded and
    /// the next poll returns messages from there.
    pub async fn seek(&self, mq: &MessageQueue, offset: i64) -> Result<()> {
        let core = self.core()?.clone();
        let mq = MessageQueue::new(core.wrap(&mq.topic), mq.broker_name.clone(), mq.queue_id);
        let old = core
            .pqs
            .locked()
            .remove(&mq)
            .ok_or_else(|| ClientError::InvalidArgument(format!("{mq} is not assigned")))?;
        old.set_dropped();
        self.shared.consumed.locked().insert(mq.clone(), offset);
        self.start_queue(&core, mq, offset);
        Ok(())
    }

    pub async fn seek_to_begin(&self, mq: &MessageQueue) -> Result<()> {
        let core = self.core()?;
        let wrapped = MessageQueue::new(core.wrap(&mq.topic), mq.broker_name.clone(), mq.queue_id);
        let min = core.min_offset(&wrapped).await?;
        self.seek(mq, min).await
    }

    pub async fn seek_to_end(&self, mq: &MessageQueue) -> Result<()> {
        let core = self.core()?;
        let wrapped = MessageQueue::new(core.wrap(&mq.topic), mq.broker_name.clone(), mq.queue_id);
        let max = core.max_offset(&wrapped).await?;
        self.seek(mq, max).await
    }

    /// Stops pulling these queues until [`Self::resume`].
    pub fn pause(&self, queues: &[MessageQueue]) {
        let Some(core) = self.shared.core.get() else {
            return;
        };
        let mut paused = self.shared.paused.locked();
        for q in queues {
            paused.insert(MessageQueue::new(
                core.wrap(&q.topic),
                q.broker_name.clone(),
                q.queue_id,
            ));
        }
    }

    pub fn resume(&self, queues: &[MessageQueue]) {
        let Some(core) = self.shared.core.get() else {
            return;
        };
        let mut paused = self.shared.paused.locked();
        for q in queues {
            paused.remove(&MessageQueue::new(
                core.wrap(&q.topic),
                q.broker_name.clone(),
                q.queue_id,
            ));
        }
    }

    /// The queues currently assigned (topics without namespace).
    pub fn assignment(&self) -> Vec<MessageQueue> {
        self.shared
            .core
            .get()
            .map(|c| {
                c.assigned_queues()
                    .into_iter()
                    .map(|mq| {
                        MessageQueue::new(
                            topic::unwrap_namespace(&c.namespace, &mq.topic),
                            mq.broker_name,
                            mq.queue_id,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Commits (with auto-commit), stops the pull tasks and unregisters.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        if !shared.state.is_running() {
            return;
        }
        if shared.config.auto_commit {
            let _ = self.commit().await;
        }
        shared.state.mark_shut_down();
        let Some(core) = shared.core.get() else {
            return;
        };
        let _guard = core.rebalance_lock.lock().await;
        core.shutdown.cancel();
        for mq in core.assigned_queues() {
            if let Some(pq) = core.process_queue(&mq) {
                rebalance::remove_queue(core, &mq, &pq).await;
            }
        }
        core.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), core.tracker.wait()).await;
        core.instance.unregister_consumer(&shared.group).await;
        info!(group = %shared.group, "lite pull consumer shut down");
    }
}

impl PullSink for LiteShared {
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
            let batch = Batch { mq, pq, msgs };
            tokio::select! {
                _ = core.shutdown.cancelled() => {}
                r = self.tx.send(batch) => { let _ = r; }
            }
        })
    }

    fn flow_control(&self, mq: &MessageQueue, pq: &ProcessQueue) -> Option<Duration> {
        if self.paused.locked().contains(mq) {
            return Some(Duration::from_millis(100));
        }
        let c = &self.config;
        if self.buffered.load(Ordering::Acquire) > c.pull_threshold_for_all
            || pq.msg_count() > c.pull_threshold_for_queue
            || pq.msg_size() > c.pull_threshold_size_for_queue * 1024 * 1024
        {
            return Some(Duration::from_millis(50));
        }
        None
    }

    fn on_removed<'a>(
        &'a self,
        core: &'a Arc<ConsumerCore>,
        mq: &'a MessageQueue,
        _pq: &'a Arc<ProcessQueue>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let consumed = self.consumed.locked().remove(mq);
            if let (true, Some(offset)) = (self.config.auto_commit, consumed) {
                core.offsets.update(mq, offset, false);
            }
        })
    }
}

impl ConsumerInner for LiteShared {
    fn group(&self) -> &str {
        &self.group
    }

    fn consumer_data(&self) -> ConsumerData {
        match self.core.get() {
            Some(core) => core.consumer_data(),
            None => ConsumerData {
                consume_from_where: self.config.consume_from_where,
                consume_type: ConsumeType::ConsumeActively,
                group_name: self.group.clone(),
                message_model: self.config.message_model,
                subscription_data_set: Vec::new(),
                unit_mode: false,
            },
        }
    }

    fn subscribed_topics(&self) -> Vec<String> {
        self.core
            .get()
            .map(|c| c.subscribed_topics())
            .unwrap_or_default()
    }

    fn update_subscribe_info(&self, topic: &str, queues: Vec<MessageQueue>) {
        if let Some(core) = self.core.get() {
            if core.subscription(topic).is_some() {
                core.topic_queues
                    .write_locked()
                    .insert(topic.to_owned(), queues);
            }
        }
    }

    fn do_rebalance(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(core) = self.core.get() {
                if self.state.is_running() {
                    rebalance::do_rebalance(core).await;
                }
            }
        })
    }

    fn persist_offsets(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(core) = self.core.get() {
                let mqs = core.assigned_queues();
                core.offsets.persist_all(Some(&mqs)).await;
            }
        })
    }

    fn running_info(&self) -> serde_json::Value {
        let Some(core) = self.core.get() else {
            return serde_json::json!({});
        };
        let mut extra = serde_json::Map::new();
        extra.insert(
            "autoCommit".into(),
            serde_json::Value::String(self.config.auto_commit.to_string()),
        );
        extra.insert(
            "pullBatchSize".into(),
            serde_json::Value::String(self.config.pull_batch_size.to_string()),
        );
        core.running_info(extra)
    }

    fn reset_offset(
        &self,
        _topic: String,
        _offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async {
            // As in Java, only push consumers follow a reset; a lite pull application
            // moves its queues with `seek`.
            info!(group = %self.group, "reset offset ignored by a lite pull consumer");
        })
    }

    fn offset_table(&self, topic: &str) -> std::collections::BTreeMap<MessageQueue, i64> {
        self.core
            .get()
            .map(|c| c.offset_table(topic))
            .unwrap_or_default()
    }

    fn consume_message_directly(
        &self,
        _msg: MessageExt,
        _broker_name: Option<String>,
    ) -> BoxFuture<'_, serde_json::Value> {
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
}
