//! The push consumer (Java `DefaultMQPushConsumer`): see [`PushConsumer`].
//!
//! Concurrent listeners get batches of `consumeMessageBatchMaxSize` messages on up to
//! `consumeThreadMax` calls at once; failed messages are sent back to the broker
//! (clustering) or dropped (broadcasting), and the queue's committed offset is the
//! smallest offset still cached. Orderly listeners get one queue's messages in order,
//! one call at a time, under the broker lock of the queue.
//!
//! * this file: the handle (subscribe, listener, start, shutdown, suspend).
//! * `service`: what the consumer core hands to a push consumer (Java
//!   `ConsumeMessageService`): pulled messages to the listener, flow control.
//! * `concurrently`: concurrent listeners, send-back of failed messages, consume timeout.
//! * `orderly`: orderly listeners, one queue at a time under its broker lock.

mod concurrently;
mod orderly;
mod service;

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use tracing::{info, warn};
use vostok_remoting::protocol::body::{ConsumeType, MessageModel, MessageQueue};
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::RwLockExt;

use super::config::ConsumerConfig;
use super::core::{ConsumerCore, CoreParams};
use super::listener::{MessageListener, MessageListenerConcurrently, MessageListenerOrderly};
use super::rebalance;
use super::subscription::MessageSelector;
use crate::error::{ClientError, Result};
use crate::hook::ConsumeMessageHook;
use crate::instance::ClientInstance;
use crate::service_state::ServiceState;
use crate::trace::hook::ConsumeMessageTraceHook;
use crate::trace::TraceDispatcher;
use service::ConsumeMessageService;

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

/// What the clones of one push consumer share; `core` is set by `start`.
struct PushShared {
    service: Arc<ConsumeMessageService>,
    state: Arc<ServiceState>,
    pending_subs: RwLock<Vec<(String, MessageSelector)>>,
    core: OnceLock<Arc<ConsumerCore>>,
    /// Set by `start` when tracing is on.
    trace: OnceLock<Arc<TraceDispatcher>>,
}

impl PushConsumer {
    pub fn new(config: ConsumerConfig) -> Self {
        PushConsumer {
            shared: Arc::new(PushShared {
                service: Arc::new(ConsumeMessageService::new(config)),
                state: Arc::default(),
                pending_subs: RwLock::default(),
                core: OnceLock::new(),
                trace: OnceLock::new(),
            }),
        }
    }

    pub fn config(&self) -> &ConsumerConfig {
        &self.shared.service.config
    }

    /// Subscribes to `topic` with a tag expression (`*`, `TagA || TagB`).
    pub fn subscribe(&self, topic: &str, expression: &str) -> Result<()> {
        self.subscribe_with_selector(topic, MessageSelector::by_tag(expression))
    }

    /// Subscribes with a tag, SQL92 or routing-key selector; an invalid binding key is
    /// refused here.
    pub fn subscribe_with_selector(&self, topic: &str, selector: MessageSelector) -> Result<()> {
        topic::validate_topic(topic).map_err(ClientError::InvalidArgument)?;
        selector.validate()?;
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
        self.shared.service.set_listener(listener);
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
        self.shared.service.add_hook(hook);
    }

    /// Starts pulling: joins the client instance, heart-beats, rebalances.
    pub async fn start(&self) -> Result<()> {
        let shared = &self.shared;
        let service = &shared.service;
        let config = &service.config;
        let common = &config.common;
        topic::validate_group(&common.consumer_group).map_err(ClientError::InvalidArgument)?;
        let listener = service
            .listener()
            .ok_or_else(|| ClientError::InvalidArgument("no message listener registered".into()))?;
        shared.state.start("consumer")?;
        let instance = ClientInstance::get_or_create(&common.client)?;
        let core = Arc::new(ConsumerCore::new(
            instance.clone(),
            common,
            CoreParams {
                kind: service.clone(),
                state: shared.state.clone(),
                consume_type: ConsumeType::ConsumePassively,
                orderly: listener.is_orderly(),
                max_reconsume_times: config.max_reconsume_times,
                pull_interval: config.pull_interval,
                post_subscription: config.post_subscription_when_pull,
            },
        )?);
        let subs = std::mem::take(&mut *shared.pending_subs.write_locked());
        for (t, selector) in &subs {
            core.subscribe(t, selector);
        }
        if common.message_model == MessageModel::Clustering {
            core.subscribe(
                &topic::retry_topic(&common.consumer_group),
                &MessageSelector::by_tag("*"),
            );
        }
        let _ = shared.core.set(core.clone());
        self.start_trace().await;
        if let Err(e) = instance.register_consumer(core.clone()) {
            shared.state.mark_shut_down();
            return Err(e);
        }
        instance.start();
        for t in core.subscribed_topics() {
            if let Err(e) = instance.update_route(&t).await {
                warn!(topic = %t, error = %e, "route not available yet");
            }
        }
        if let Err(e) = super::check_client::check_client_in_broker(&instance, &core).await {
            warn!(group = %service.group, error = %e, "a broker refuses a subscription");
            self.shutdown().await;
            return Err(e);
        }
        instance.send_heartbeat_to_all_brokers().await;
        concurrently::spawn_timeout_sweeper(service, core.clone());
        instance.rebalance_immediately();
        info!(group = %service.group, client_id = %instance.client_id(), "push consumer started");
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
        if let Some(trace) = shared.trace.get() {
            trace.shutdown().await;
        }
        core.instance.unregister_consumer(&core.group).await;
        info!(group = %core.group, "push consumer shut down");
    }

    /// With `enableMsgTrace`, starts the trace dispatcher and its hook. A dispatcher
    /// that cannot start leaves the consumer working untraced, with a warning.
    async fn start_trace(&self) {
        let service = &self.shared.service;
        let common = &service.config.common;
        let Some(dispatcher) = crate::producer::trace::dispatcher(
            &service.config.trace,
            &common.client,
            &common.consumer_group,
            "CONSUMER",
        ) else {
            return;
        };
        if let Err(e) = dispatcher.start().await {
            warn!(group = %service.group, error = %e, "message trace not started");
            return;
        }
        self.register_consume_message_hook(Arc::new(ConsumeMessageTraceHook::new(
            dispatcher.clone(),
            common.client.namespace.clone(),
        )));
        let _ = self.shared.trace.set(dispatcher);
    }

    /// The trace dispatcher, when tracing is on and the consumer started.
    pub fn trace_dispatcher(&self) -> Option<&Arc<TraceDispatcher>> {
        self.shared.trace.get()
    }

    /// Stops pulling until [`Self::resume`] (Java `suspend`).
    pub fn suspend(&self) {
        self.shared.service.set_paused(true);
    }

    pub fn resume(&self) {
        self.shared.service.set_paused(false);
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
