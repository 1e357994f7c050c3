//! The push consumer (Java `DefaultMQPushConsumer`): see [`PushConsumer`].
//!
//! Concurrent listeners get batches of `consumeMessageBatchMaxSize` messages on up to
//! `consumeThreadMax` calls at once; failed messages are sent back to the broker
//! (clustering) or dropped (broadcasting), and the queue's committed offset is the
//! smallest offset still cached. Orderly listeners get one queue's messages in order,
//! one call at a time, under the broker lock of the queue.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::body::{ConsumeType, ConsumerData, MessageModel, MessageQueue};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::BoxFuture;

use super::core::{ConsumerCore, CoreParams, PullSettings, PullSink};
use super::process_queue::ProcessQueue;
use super::{
    rebalance, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeOrderlyContext,
    ConsumeOrderlyStatus, ConsumerConfig, MessageListener, MessageListenerConcurrently,
    MessageListenerOrderly, MessageSelector,
};
use crate::error::{ClientError, Result};
use crate::hook::{ConsumeHooks, ConsumeMessageContext, ConsumeMessageHook};
use crate::instance::registry::ConsumerInner;
use crate::instance::ClientInstance;
use crate::service_state::ServiceState;

/// Receives messages pushed to a listener; see the module documentation.
///
/// ```no_run
/// # async fn demo() -> vostok_client::Result<()> {
/// use vostok_client::*;
/// let consumer = PushConsumer::new(ConsumerConfig::new("my_group", "127.0.0.1:9876"));
/// consumer.subscribe("TopicTest", "TagA || TagB")?;
/// consumer.register_message_listener(MessageListener::concurrently(
///     |msgs: &[MessageExt], _ctx: &mut ConsumeConcurrentlyContext| {
///         for m in msgs {
///             println!("{} {:?}", m.msg_id(), m.body);
///         }
///         ConsumeConcurrentlyStatus::ConsumeSuccess
///     },
/// ));
/// consumer.start().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PushConsumer {
    shared: Arc<PushShared>,
}

pub(crate) struct PushShared {
    config: ConsumerConfig,
    group: String,
    state: ServiceState,
    pending_subs: RwLock<Vec<(String, MessageSelector)>>,
    listener: RwLock<Option<MessageListener>>,
    hooks: RwLock<ConsumeHooks>,
    core: OnceLock<Arc<ConsumerCore>>,
    permits: Arc<Semaphore>,
    paused: AtomicBool,
}

impl PushConsumer {
    pub fn new(config: ConsumerConfig) -> Self {
        let group = topic::wrap_namespace(&config.client.namespace, &config.consumer_group);
        PushConsumer {
            shared: Arc::new(PushShared {
                permits: Arc::new(Semaphore::new(config.consume_thread_max.max(1))),
                group,
                config,
                state: ServiceState::default(),
                pending_subs: RwLock::default(),
                listener: RwLock::default(),
                hooks: RwLock::default(),
                core: OnceLock::new(),
                paused: AtomicBool::new(false),
            }),
        }
    }

    pub fn config(&self) -> &ConsumerConfig {
        &self.shared.config
    }

    /// Subscribes to `topic` with a tag expression (`*`, `TagA || TagB`).
    pub fn subscribe(&self, topic: &str, expression: &str) -> Result<()> {
        self.subscribe_with_selector(topic, MessageSelector::by_tag(expression))
    }

    pub fn subscribe_with_selector(&self, topic: &str, selector: MessageSelector) -> Result<()> {
        topic::validate_topic(topic).map_err(ClientError::InvalidArgument)?;
        match self.shared.core.get() {
            Some(core) => {
                core.subscribe(topic, &selector);
                let instance = core.instance.clone();
                let topic = core.wrap(topic);
                tokio::spawn(async move {
                    let _ = instance.update_route(&topic).await;
                    instance.send_heartbeat_to_all_brokers().await;
                    instance.rebalance_immediately();
                });
            }
            None => self
                .shared
                .pending_subs
                .write_locked()
                .push((topic.to_owned(), selector)),
        }
        Ok(())
    }

    pub fn register_message_listener(&self, listener: MessageListener) {
        *self.shared.listener.write_locked() = Some(listener);
    }

    pub fn register_message_listener_concurrently(
        &self,
        listener: impl MessageListenerConcurrently,
    ) {
        self.register_message_listener(MessageListener::concurrently(listener));
    }

    pub fn register_message_listener_orderly(&self, listener: impl MessageListenerOrderly) {
        self.register_message_listener(MessageListener::orderly(listener));
    }

    pub fn register_consume_message_hook(&self, hook: Arc<dyn ConsumeMessageHook>) {
        self.shared.hooks.write_locked().push(hook);
    }

    /// Starts pulling: joins the client instance, heart-beats, rebalances.
    pub async fn start(&self) -> Result<()> {
        let shared = &self.shared;
        let config = &shared.config;
        topic::validate_group(&config.consumer_group).map_err(ClientError::InvalidArgument)?;
        let listener =
            shared.listener.read_locked().clone().ok_or_else(|| {
                ClientError::InvalidArgument("no message listener registered".into())
            })?;
        shared.state.start("consumer")?;
        let instance = ClientInstance::get_or_create(&config.client)?;
        let core = Arc::new(ConsumerCore::new(
            instance.clone(),
            CoreParams {
                group: config.consumer_group.clone(),
                model: config.message_model,
                consume_type: ConsumeType::ConsumePassively,
                consume_from_where: config.consume_from_where,
                consume_timestamp: config.consume_timestamp.clone(),
                strategy: config.allocate_strategy.clone(),
                orderly: listener.is_orderly(),
                max_reconsume_times: config.max_reconsume_times,
                pull: PullSettings {
                    batch_size: config.pull_batch_size,
                    suspend: config.broker_suspend_max_time,
                    timeout: config.consumer_timeout_when_suspend,
                    exception_delay: config.pull_time_delay_when_exception,
                    interval: config.pull_interval,
                    post_subscription: config.post_subscription_when_pull,
                    lite: false,
                },
            },
        )?);
        let subs = std::mem::take(&mut *shared.pending_subs.write_locked());
        for (t, selector) in &subs {
            core.subscribe(t, selector);
        }
        if config.message_model == MessageModel::Clustering {
            core.subscribe(
                &topic::retry_topic(&config.consumer_group),
                &MessageSelector::by_tag("*"),
            );
        }
        let _ = core.sink.set(shared.clone());
        let _ = shared.core.set(core.clone());
        if let Err(e) = instance.register_consumer(shared.clone()) {
            shared.state.mark_shut_down();
            return Err(e);
        }
        instance.start();
        for t in core.subscribed_topics() {
            if let Err(e) = instance.update_route(&t).await {
                warn!(topic = %t, error = %e, "route not available yet");
            }
        }
        instance.send_heartbeat_to_all_brokers().await;
        spawn_timeout_sweeper(shared.clone(), core.clone());
        instance.rebalance_immediately();
        info!(group = %shared.group, client_id = %instance.client_id(), "push consumer started");
        Ok(())
    }

    /// Stops pulling, lets listener calls finish, commits offsets, unregisters.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        if !shared.state.shut_down() {
            return;
        }
        let Some(core) = shared.core.get() else {
            return;
        };
        let _guard = core.rebalance_lock.lock().await;
        core.shutdown.cancel();
        let queues = core.process_queues();
        for (mq, pq) in queues {
            rebalance::remove_queue(core, &mq, &pq).await;
        }
        core.offsets.persist_all(None).await;
        core.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), core.tracker.wait()).await;
        core.instance.unregister_consumer(&shared.group).await;
        info!(group = %shared.group, "push consumer shut down");
    }

    /// Stops pulling until [`Self::resume`] (Java `suspend`).
    pub fn suspend(&self) {
        self.shared.paused.store(true, Ordering::Release);
    }

    pub fn resume(&self) {
        self.shared.paused.store(false, Ordering::Release);
    }

    /// The queues currently assigned to this member.
    pub fn assigned_queues(&self) -> Vec<MessageQueue> {
        self.shared
            .core
            .get()
            .map(|c| c.assigned_queues())
            .unwrap_or_default()
    }

    pub fn instance(&self) -> Option<&Arc<ClientInstance>> {
        self.shared.core.get().map(|c| &c.instance)
    }
}

impl PushShared {
    fn core(&self) -> Option<&Arc<ConsumerCore>> {
        self.core.get()
    }

    fn listener(&self) -> Option<MessageListener> {
        self.listener.read_locked().clone()
    }

    fn run_hooks(
        &self,
        mq: &MessageQueue,
        msgs: &[MessageExt],
        after: Option<(&'static str, bool)>,
    ) {
        let hooks = self.hooks.read_locked();
        if hooks.is_empty() {
            return;
        }
        let ctx = ConsumeMessageContext {
            consumer_group: &self.group,
            mq,
            messages: msgs,
            status: after.map(|a| a.0),
            success: after.is_some_and(|a| a.1),
        };
        for h in hooks.iter() {
            if after.is_some() {
                h.consume_message_after(&ctx);
            } else {
                h.consume_message_before(&ctx);
            }
        }
    }

    /// One concurrent listener call and its result handling (Java
    /// `ConsumeRequest.run` + `processConsumeResult`).
    fn consume_concurrently(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        listener: Arc<dyn MessageListenerConcurrently>,
        mq: MessageQueue,
        pq: Arc<ProcessQueue>,
        msgs: Vec<MessageExt>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let Ok(_permit) = self.permits.clone().acquire_owned().await else {
                return;
            };
            if pq.is_dropped() {
                return;
            }
            pq.begin_consume();
            pq.mark_started(msgs.iter().map(|m| m.queue_offset));
            let mut ctx = ConsumeConcurrentlyContext {
                message_queue: mq.clone(),
                delay_level_when_next_consume: 0,
                ack_index: i32::MAX,
            };
            self.run_hooks(&mq, &msgs, None);
            let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                listener.consume_message(&msgs, &mut ctx)
            }))
            .unwrap_or_else(|_| {
                warn!(group = %self.group, %mq, "listener panicked; messages will be retried");
                ConsumeConcurrentlyStatus::ReconsumeLater
            });
            let ok = status == ConsumeConcurrentlyStatus::ConsumeSuccess;
            self.run_hooks(
                &mq,
                &msgs,
                Some((
                    if ok {
                        "CONSUME_SUCCESS"
                    } else {
                        "RECONSUME_LATER"
                    },
                    ok,
                )),
            );
            let ack = if ok {
                (ctx.ack_index.max(-1) as i64).min(msgs.len() as i64 - 1)
            } else {
                -1
            };
            let failed = &msgs[(ack + 1) as usize..];
            let mut retry_locally = Vec::new();
            if !failed.is_empty() {
                if core.clustering() {
                    for m in failed {
                        if let Err(e) = core
                            .send_back(m, &mq.broker_name, ctx.delay_level_when_next_consume)
                            .await
                        {
                            warn!(msg_id = %m.msg_id(), error = %e, "send-back failed; retrying locally");
                            let mut again = m.clone();
                            again.reconsume_times += 1;
                            retry_locally.push(again);
                        }
                    }
                } else {
                    for m in failed {
                        warn!(msg_id = %m.msg_id(), "broadcasting consumption failed; message dropped");
                    }
                }
            }
            let done = msgs
                .iter()
                .map(|m| m.queue_offset)
                .filter(|o| !retry_locally.iter().any(|r| r.queue_offset == *o));
            if let Some(offset) = pq.remove(done) {
                // Also when the queue is being dropped: the commit that follows must cover
                // what this call consumed, or the next owner would consume it again.
                core.offsets.update(&mq, offset, true);
            }
            pq.end_consume();
            if !retry_locally.is_empty() && !pq.is_dropped() {
                let shared = self.clone();
                let core2 = core.clone();
                core.tracker.spawn(async move {
                tokio::select! {
                    _ = core2.shutdown.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {
                        let listener = listener.clone();
                        shared.consume_concurrently(core2, listener, mq, pq, retry_locally).await;
                    }
                }
            });
            }
        })
    }

    /// The consume loop of one orderly queue (Java `ConsumeMessageOrderlyService`).
    async fn consume_orderly(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        listener: Arc<dyn MessageListenerOrderly>,
        mq: MessageQueue,
        pq: Arc<ProcessQueue>,
    ) {
        let batch = self.config.consume_message_batch_max_size.max(1);
        loop {
            if pq.is_dropped() || core.shutdown.is_cancelled() {
                pq.stop_dispatching();
                return;
            }
            if core.clustering() && (!pq.is_locked() || pq.is_lock_expired()) {
                tokio::select! {
                    _ = core.shutdown.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
                continue;
            }
            let guard = pq.consume_lock.lock().await;
            if pq.is_dropped() {
                pq.stop_dispatching();
                return;
            }
            let mut msgs = pq.take(batch);
            if msgs.is_empty() {
                return;
            }
            let Ok(permit) = self.permits.clone().acquire_owned().await else {
                return;
            };
            pq.begin_consume();
            let mut ctx = ConsumeOrderlyContext {
                message_queue: mq.clone(),
                suspend_current_queue_time_millis: -1,
            };
            self.run_hooks(&mq, &msgs, None);
            let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                listener.consume_message(&msgs, &mut ctx)
            }))
            .unwrap_or_else(|_| {
                warn!(group = %self.group, %mq, "orderly listener panicked; suspending the queue");
                ConsumeOrderlyStatus::SuspendCurrentQueueAMoment
            });
            drop(permit);
            let ok = status == ConsumeOrderlyStatus::Success;
            self.run_hooks(
                &mq,
                &msgs,
                Some((
                    if ok {
                        "SUCCESS"
                    } else {
                        "SUSPEND_CURRENT_QUEUE_A_MOMENT"
                    },
                    ok,
                )),
            );
            let mut suspend = !ok;
            if suspend {
                // Messages past their retry budget go to %RETRY% (the broker then
                // sends them to the DLQ); the others are consumed again in place.
                let mut again = Vec::new();
                for m in &mut msgs {
                    if m.reconsume_times >= core.max_reconsume_times {
                        match core.send_back_as_new_message(m, 0).await {
                            Ok(()) => continue,
                            Err(e) => {
                                warn!(msg_id = %m.msg_id(), error = %e, "orderly send-back failed")
                            }
                        }
                    }
                    m.reconsume_times += 1;
                    again.push(m.clone());
                }
                if again.is_empty() {
                    suspend = false;
                } else {
                    pq.make_again(&again);
                }
            }
            let committed = if suspend { None } else { pq.commit() };
            pq.end_consume();
            if let Some(offset) = committed {
                core.offsets.update(&mq, offset, false);
            }
            drop(guard);
            if suspend {
                let wait = if ctx.suspend_current_queue_time_millis > 0 {
                    Duration::from_millis(ctx.suspend_current_queue_time_millis as u64)
                } else {
                    self.config.suspend_current_queue_time
                };
                tokio::select! {
                    _ = core.shutdown.cancelled() => {}
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

impl PullSink for PushShared {
    fn deliver(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        mq: MessageQueue,
        pq: Arc<ProcessQueue>,
        msgs: Vec<MessageExt>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let dispatch = pq.put(&msgs);
            match self.listener() {
                Some(MessageListener::Concurrently(listener)) => {
                    let batch = self.config.consume_message_batch_max_size.max(1);
                    for chunk in msgs.chunks(batch) {
                        let task = self.clone().consume_concurrently(
                            core.clone(),
                            listener.clone(),
                            mq.clone(),
                            pq.clone(),
                            chunk.to_vec(),
                        );
                        core.tracker.spawn(task);
                    }
                }
                Some(MessageListener::Orderly(listener)) if dispatch => {
                    let task = self.clone().consume_orderly(core.clone(), listener, mq, pq);
                    core.tracker.spawn(task);
                }
                Some(MessageListener::Orderly(_)) => {}
                None => {}
            }
        })
    }

    fn flow_control(&self, _mq: &MessageQueue, pq: &ProcessQueue) -> Option<Duration> {
        if self.paused.load(Ordering::Acquire) {
            return Some(Duration::from_secs(1));
        }
        let config = &self.config;
        if pq.msg_count() > config.pull_threshold_for_queue
            || pq.msg_size() > config.pull_threshold_size_for_queue * 1024 * 1024
        {
            return Some(Duration::from_millis(50));
        }
        let orderly = self.listener().is_some_and(|l| l.is_orderly());
        if !orderly && pq.max_span() > config.consume_concurrently_max_span {
            return Some(Duration::from_millis(50));
        }
        None
    }

    fn on_removed<'a>(
        &'a self,
        _core: &'a Arc<ConsumerCore>,
        _mq: &'a MessageQueue,
        _pq: &'a Arc<ProcessQueue>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Periodically sends back messages whose listener call exceeded `consumeTimeout`
/// (Java `cleanExpireMsg`), so one stuck call cannot hold a queue's offset forever.
fn spawn_timeout_sweeper(shared: Arc<PushShared>, core: Arc<ConsumerCore>) {
    if shared.listener().is_some_and(|l| l.is_orderly()) {
        return;
    }
    let timeout = shared.config.consume_timeout;
    let period = timeout
        .min(Duration::from_secs(60))
        .max(Duration::from_millis(100));
    let core2 = core.clone();
    core.tracker.spawn(async move {
        loop {
            tokio::select! {
                _ = core2.shutdown.cancelled() => return,
                _ = tokio::time::sleep(period) => {}
            }
            let pqs = core2.process_queues();
            for (mq, pq) in pqs {
                for m in pq.expired(timeout) {
                    warn!(group = %core2.group, msg_id = %m.msg_id(), "consume timeout; sending the message back");
                    if core2.clustering() && core2.send_back(&m, &mq.broker_name, 3).await.is_err() {
                        continue;
                    }
                    if let Some(offset) = pq.remove([m.queue_offset]) {
                        core2.offsets.update(&mq, offset, true);
                    }
                }
            }
        }
    });
}

impl ConsumerInner for PushShared {
    fn group(&self) -> &str {
        &self.group
    }

    fn consumer_data(&self) -> ConsumerData {
        match self.core() {
            Some(core) => core.consumer_data(),
            None => ConsumerData {
                consume_from_where: self.config.consume_from_where,
                consume_type: ConsumeType::ConsumePassively,
                group_name: self.group.clone(),
                message_model: self.config.message_model,
                subscription_data_set: Vec::new(),
                unit_mode: false,
            },
        }
    }

    fn subscribed_topics(&self) -> Vec<String> {
        self.core()
            .map(|c| c.subscribed_topics())
            .unwrap_or_default()
    }

    fn update_subscribe_info(&self, topic: &str, queues: Vec<MessageQueue>) {
        if let Some(core) = self.core() {
            if core.subscription(topic).is_some() {
                core.topic_queues
                    .write_locked()
                    .insert(topic.to_owned(), queues);
            }
        }
    }

    fn do_rebalance(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(core) = self.core() {
                if self.state.is_running() {
                    rebalance::do_rebalance(core).await;
                }
            }
        })
    }

    fn persist_offsets(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(core) = self.core() {
                let mqs = core.assigned_queues();
                core.offsets.persist_all(Some(&mqs)).await;
            }
        })
    }

    fn running_info(&self) -> serde_json::Value {
        let Some(core) = self.core() else {
            return serde_json::json!({});
        };
        let mut extra = serde_json::Map::new();
        let c = &self.config;
        for (k, v) in [
            (
                "PROP_THREADPOOL_CORE_SIZE",
                c.consume_thread_max.to_string(),
            ),
            ("consumeThreadMax", c.consume_thread_max.to_string()),
            ("pullBatchSize", c.pull_batch_size.to_string()),
            (
                "pullThresholdForQueue",
                c.pull_threshold_for_queue.to_string(),
            ),
            (
                "pullThresholdSizeForQueue",
                c.pull_threshold_size_for_queue.to_string(),
            ),
            (
                "consumeMessageBatchMaxSize",
                c.consume_message_batch_max_size.to_string(),
            ),
            (
                "consumeTimeout",
                (c.consume_timeout.as_secs() / 60).to_string(),
            ),
            ("suspended", self.paused.load(Ordering::Relaxed).to_string()),
        ] {
            extra.insert(k.into(), serde_json::Value::String(v));
        }
        core.running_info(extra)
    }

    fn reset_offset(
        &self,
        topic: String,
        offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(core) = self.core() else {
                return;
            };
            if !self.state.is_running() {
                return;
            }
            // Java suspends the consumer around the reset and resumes it after; a
            // consumer the application suspended stays suspended here.
            let was_paused = self.paused.swap(true, Ordering::AcqRel);
            rebalance::reset_offsets(core, &topic, &offsets).await;
            if !was_paused {
                self.paused.store(false, Ordering::Release);
            }
            core.instance.rebalance_immediately();
        })
    }

    fn offset_table(&self, topic: &str) -> BTreeMap<MessageQueue, i64> {
        self.core()
            .map(|c| c.offset_table(topic))
            .unwrap_or_default()
    }

    fn consume_message_directly(
        &self,
        mut msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'_, serde_json::Value> {
        Box::pin(async move {
            let started = Instant::now();
            crate::message::decompress_in_place(&mut msg);
            if let Some(core) = self.core() {
                msg.topic = topic::unwrap_namespace(&core.namespace, &msg.topic);
            }
            let mq = MessageQueue::new(
                msg.topic.clone(),
                broker_name.unwrap_or_default(),
                msg.queue_id,
            );
            let (order, result) = match self.listener() {
                Some(MessageListener::Concurrently(l)) => {
                    let mut ctx = ConsumeConcurrentlyContext {
                        message_queue: mq,
                        delay_level_when_next_consume: 0,
                        ack_index: i32::MAX,
                    };
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        l.consume_message(std::slice::from_ref(&msg), &mut ctx)
                    }));
                    (
                        false,
                        match r {
                            Ok(ConsumeConcurrentlyStatus::ConsumeSuccess) => "CR_SUCCESS",
                            Ok(ConsumeConcurrentlyStatus::ReconsumeLater) => "CR_LATER",
                            Err(_) => "CR_THROW_EXCEPTION",
                        },
                    )
                }
                Some(MessageListener::Orderly(l)) => {
                    let mut ctx = ConsumeOrderlyContext {
                        message_queue: mq,
                        suspend_current_queue_time_millis: -1,
                    };
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        l.consume_message(std::slice::from_ref(&msg), &mut ctx)
                    }));
                    (
                        true,
                        match r {
                            Ok(ConsumeOrderlyStatus::Success) => "CR_SUCCESS",
                            Ok(ConsumeOrderlyStatus::SuspendCurrentQueueAMoment) => "CR_LATER",
                            Err(_) => "CR_THROW_EXCEPTION",
                        },
                    )
                }
                None => (false, "CR_RETURN_NULL"),
            };
            debug!(msg_id = %msg.msg_id(), result, "consumed directly");
            serde_json::json!({
                "order": order,
                "autoCommit": true,
                "consumeResult": result,
                "remark": null,
                "spentTimeMills": started.elapsed().as_millis() as u64,
            })
        })
    }
}
