//! The simple consumer (the 5.x clients' `SimpleConsumer`) over the remoting protocol:
//! the application asks for messages with [`SimpleConsumer::receive`], which POPs them
//! with an invisible duration, and settles each with [`SimpleConsumer::ack`] or
//! [`SimpleConsumer::change_invisible_duration`]. A message not acked within its
//! invisible duration is delivered again (to any member of the group), with its
//! delivery attempt one higher; after the group's `retryMaxTimes` the broker moves it
//! to the DLQ (docs/pop.md).
//!
//! No queue is assigned to a member: every receive pops from every queue of one broker
//! of a subscribed topic (POP_MESSAGE with queue id -1), going round the brokers of
//! every subscribed topic, so members scale past the number of queues.
//!
//! * this file: the handle (config, subscribe, start, shutdown) and what the client
//!   instance sees of it (a consumer of type `CONSUME_POP` in heartbeats).
//! * `receive`: POP_MESSAGE and the handles of what it returns ([`MessageView`]).
//! * `settle`: ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME.

mod receive;
mod settle;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, MessageQueue,
};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic::{self, DEFAULT_CONSUMER_GROUP};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::BoxFuture;

use super::subscription::{MessageSelector, Subscription};
use crate::error::{ClientError, Result};
use crate::instance::registry::ConsumerInner;
use crate::instance::{ClientConfig, ClientInstance};
use crate::service_state::ServiceState;

pub use receive::MessageView;

/// Simple consumer options (5.x `SimpleConsumerBuilder`).
#[derive(Clone)]
pub struct SimpleConsumerConfig {
    pub client: ClientConfig,
    pub consumer_group: String,
    /// `awaitDuration`: how long a receive waits on the broker for a message.
    pub await_duration: Duration,
    /// Where a group without offsets starts: `ConsumeFromLastOffset` (the 5.x
    /// behaviour) or `ConsumeFromFirstOffset`.
    pub consume_from_where: ConsumeFromWhere,
    /// FIFO: a queue's messages are handed out one batch at a time, the next only
    /// after the previous is acked or its invisible duration is over.
    pub fifo: bool,
    /// Added to `await_duration` for a receive's call timeout; the timeout of the
    /// other calls.
    pub request_timeout: Duration,
}

impl Default for SimpleConsumerConfig {
    fn default() -> Self {
        SimpleConsumerConfig {
            client: ClientConfig::default(),
            consumer_group: DEFAULT_CONSUMER_GROUP.to_owned(),
            await_duration: Duration::from_secs(30),
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            fifo: false,
            request_timeout: Duration::from_secs(3),
        }
    }
}

/// See the module documentation. Clones share one consumer.
#[derive(Clone)]
pub struct SimpleConsumer {
    shared: Arc<SimpleShared>,
}

struct SimpleShared {
    config: SimpleConsumerConfig,
    state: ServiceState,
    subscriptions: RwLock<BTreeMap<String, Subscription>>,
    instance: OnceLock<Arc<ClientInstance>>,
    /// Round robin over the (topic, broker) pairs to receive from.
    next: AtomicUsize,
}

impl SimpleConsumer {
    pub fn new(config: SimpleConsumerConfig) -> Self {
        SimpleConsumer {
            shared: Arc::new(SimpleShared {
                config,
                state: ServiceState::default(),
                subscriptions: RwLock::default(),
                instance: OnceLock::new(),
                next: AtomicUsize::new(0),
            }),
        }
    }

    pub fn config(&self) -> &SimpleConsumerConfig {
        &self.shared.config
    }

    /// Subscribes to a topic with a tag expression (`*`, `TagA || TagB`); before or
    /// after `start`. A second subscription of a topic replaces the first.
    pub fn subscribe(&self, topic: &str, expression: &str) -> Result<()> {
        self.subscribe_with_selector(topic, MessageSelector::by_tag(expression))
    }

    /// Subscribes with a tag or a routing-key selector (docs/amqp.md). A routing key
    /// is filtered by the broker; a broker that refuses it (Apache RocketMQ) is asked
    /// for everything, and what does not match is acked here. SQL92 is refused.
    pub fn subscribe_with_selector(&self, topic: &str, selector: MessageSelector) -> Result<()> {
        topic::validate_topic(topic).map_err(ClientError::InvalidArgument)?;
        selector.validate()?;
        if matches!(selector, MessageSelector::Sql92(_)) {
            return Err(ClientError::InvalidArgument(
                "the simple consumer selects by tag or by routing key".to_owned(),
            ));
        }
        let sub = Subscription::new(topic, &selector);
        self.shared
            .subscriptions
            .write_locked()
            .insert(topic.to_owned(), sub);
        Ok(())
    }

    pub fn unsubscribe(&self, topic: &str) {
        self.shared.subscriptions.write_locked().remove(topic);
    }

    /// Joins (or creates) the client instance, registers the group and sends a first
    /// heartbeat.
    pub async fn start(&self) -> Result<()> {
        let shared = &self.shared;
        topic::validate_group(&shared.config.consumer_group)
            .map_err(ClientError::InvalidArgument)?;
        shared.state.start("simple consumer")?;
        let instance = ClientInstance::get_or_create(&shared.config.client)?;
        let inner: Arc<dyn ConsumerInner> = Arc::new(Inner(shared.clone()));
        if let Err(e) = instance.register_consumer(inner) {
            shared.state.reset();
            return Err(e);
        }
        let topics: Vec<String> = shared.subscriptions.read_locked().keys().cloned().collect();
        for t in topics {
            if let Err(e) = instance.update_route(&t).await {
                tracing::debug!(topic = %t, error = %e, "route lookup failed at start");
            }
        }
        let _ = shared.instance.set(instance.clone());
        instance.start();
        instance.send_heartbeat_to_all_brokers().await;
        tracing::info!(group = %shared.config.consumer_group, client_id = %instance.client_id(), "simple consumer started");
        Ok(())
    }

    /// Unregisters the group and releases the client instance when nothing else uses it.
    /// Messages received and not acked come back after their invisible duration.
    pub async fn shutdown(&self) {
        if !self.shared.state.shut_down() {
            return;
        }
        if let Some(instance) = self.shared.instance.get() {
            instance
                .unregister_consumer(&self.shared.config.consumer_group)
                .await;
        }
    }

    fn instance(&self) -> Result<&Arc<ClientInstance>> {
        self.shared.state.check_running("simple consumer")?;
        self.shared
            .instance
            .get()
            .ok_or(ClientError::NotStarted("simple consumer"))
    }
}

/// What the client instance calls on a simple consumer: it has no queues and no
/// offsets of its own, only subscriptions for the heartbeat.
struct Inner(Arc<SimpleShared>);

impl ConsumerInner for Inner {
    fn group(&self) -> &str {
        &self.0.config.consumer_group
    }

    fn consumer_data(&self) -> ConsumerData {
        ConsumerData {
            consume_from_where: self.0.config.consume_from_where,
            consume_type: ConsumeType::ConsumePop,
            group_name: self.0.config.consumer_group.clone(),
            message_model: MessageModel::Clustering,
            subscription_data_set: self
                .0
                .subscriptions
                .read_locked()
                .values()
                .map(|s| s.data.clone())
                .collect(),
            unit_mode: false,
        }
    }

    fn subscribed_topics(&self) -> Vec<String> {
        self.0.subscriptions.read_locked().keys().cloned().collect()
    }

    fn update_subscribe_info(&self, _topic: &str, _queues: Vec<MessageQueue>) {}

    fn do_rebalance(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn persist_offsets(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    fn running_info(&self) -> serde_json::Value {
        serde_json::json!({ "properties": { "consumeType": "CONSUME_POP" } })
    }

    fn consume_message_directly(
        &self,
        _msg: MessageExt,
        _broker_name: Option<String>,
    ) -> BoxFuture<'_, serde_json::Value> {
        Box::pin(async {
            serde_json::json!({ "consumeResult": "CR_THROW_EXCEPTION", "remark": "a simple consumer has no listener" })
        })
    }

    fn reset_offset(
        self: Arc<Self>,
        _topic: String,
        _offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    fn offset_table(&self, _topic: &str) -> BTreeMap<MessageQueue, i64> {
        BTreeMap::new()
    }
}
