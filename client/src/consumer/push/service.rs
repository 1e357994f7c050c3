//! The push consumer's side of the consumer core (Java `ConsumeMessageService`): the
//! listener, the consume hooks and the `consumeThreadMax` permits. Pulled messages go
//! to listener calls, concurrently (`concurrently`) or in queue order (`orderly`); pulls
//! pause while too much waits in a queue or the consumer is suspended.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tracing::debug;
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::BoxFuture;

use crate::consumer::config::ConsumerConfig;
use crate::consumer::core::{ConsumerCore, ConsumerKind};
use crate::consumer::listener::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeOrderlyContext,
    ConsumeOrderlyStatus, MessageListener,
};
use crate::consumer::process_queue::ProcessQueue;
use crate::consumer::rebalance;
use crate::hook::{ConsumeHooks, ConsumeMessageContext, ConsumeMessageHook};

/// One listener call as its hooks see it.
pub(super) struct HookCall {
    request_id: String,
    started: Instant,
}

/// See the module documentation.
pub(crate) struct ConsumeMessageService {
    pub(super) config: ConsumerConfig,
    /// Group name with namespace.
    pub(super) group: String,
    listener: RwLock<Option<MessageListener>>,
    hooks: RwLock<ConsumeHooks>,
    /// One per listener call running (`consumeThreadMax`).
    pub(super) permits: Arc<Semaphore>,
    /// Set by `suspend` (and around an offset reset): no pulls.
    paused: AtomicBool,
}

impl ConsumeMessageService {
    pub(super) fn new(config: ConsumerConfig) -> Self {
        let group = topic::wrap_namespace(
            &config.common.client.namespace,
            &config.common.consumer_group,
        );
        ConsumeMessageService {
            permits: Arc::new(Semaphore::new(config.consume_thread_max.max(1))),
            group,
            config,
            listener: RwLock::default(),
            hooks: RwLock::default(),
            paused: AtomicBool::new(false),
        }
    }

    pub(super) fn listener(&self) -> Option<MessageListener> {
        self.listener.read_locked().clone()
    }

    pub(super) fn set_listener(&self, listener: MessageListener) {
        *self.listener.write_locked() = Some(listener);
    }

    pub(super) fn add_hook(&self, hook: Arc<dyn ConsumeMessageHook>) {
        self.hooks.write_locked().push(hook);
    }

    pub(super) fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
    }

    /// What the hooks of one listener call share: a request id (only when hooks are
    /// registered: it costs a unique id) and the start time.
    pub(super) fn hook_call(&self, core: &ConsumerCore) -> HookCall {
        let request_id = if self.hooks.read_locked().is_empty() {
            String::new()
        } else {
            core.instance.next_uniq_id()
        };
        HookCall {
            request_id,
            started: Instant::now(),
        }
    }

    /// The consume hooks, before a listener call (`after` is `None`) or after it
    /// (`Some((status, success))`).
    pub(super) fn run_hooks(
        &self,
        call: &HookCall,
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
            request_id: &call.request_id,
            elapsed: after.map(|_| call.started.elapsed()),
        };
        for h in hooks.iter() {
            if after.is_some() {
                h.consume_message_after(&ctx);
            } else {
                h.consume_message_before(&ctx);
            }
        }
    }
}

impl ConsumerKind for ConsumeMessageService {
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
        if pq.msg_count() > config.common.pull_threshold_for_queue
            || pq.msg_size() > config.common.pull_threshold_size_for_queue * 1024 * 1024
        {
            return Some(Duration::from_millis(50));
        }
        let orderly = self.listener().is_some_and(|l| l.is_orderly());
        if !orderly && pq.max_span() > config.consume_concurrently_max_span {
            return Some(Duration::from_millis(50));
        }
        None
    }

    fn on_queue_removed<'a>(
        &'a self,
        _core: &'a ConsumerCore,
        _mq: &'a MessageQueue,
        _pq: &'a ProcessQueue,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn reset_offset(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        topic: String,
        offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if !core.state.is_running() {
                return;
            }
            // Java suspends the consumer around the reset and resumes it after; a
            // consumer the application suspended stays suspended here.
            let was_paused = self.paused.swap(true, Ordering::AcqRel);
            rebalance::reset_offsets(&core, &topic, &offsets).await;
            if !was_paused {
                self.paused.store(false, Ordering::Release);
            }
            core.instance.rebalance_immediately();
        })
    }

    fn consume_message_directly<'a>(
        &'a self,
        core: &'a ConsumerCore,
        mut msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'a, serde_json::Value> {
        Box::pin(async move {
            let started = Instant::now();
            crate::message::decompress_in_place(&mut msg);
            msg.topic = topic::unwrap_namespace(&core.namespace, &msg.topic);
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

    fn running_properties(&self, properties: &mut serde_json::Map<String, serde_json::Value>) {
        let c = &self.config;
        for (k, v) in [
            (
                "PROP_THREADPOOL_CORE_SIZE",
                c.consume_thread_max.to_string(),
            ),
            ("consumeThreadMax", c.consume_thread_max.to_string()),
            (
                "pullThresholdForQueue",
                c.common.pull_threshold_for_queue.to_string(),
            ),
            (
                "pullThresholdSizeForQueue",
                c.common.pull_threshold_size_for_queue.to_string(),
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
            properties.insert(k.into(), serde_json::Value::String(v));
        }
    }
}
