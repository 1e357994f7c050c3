//! The consumer core: what a push and a lite pull consumer share, and the one thing the
//! client instance registers for either (`consumer::inner`). It holds the
//! subscriptions, the assigned queues with their process queues, the offsets and the
//! start offsets; pulls (`pull`) and rebalancing (`rebalance`) run on it. What differs
//! between the two kinds sits behind [`ConsumerKind`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;
use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, MessageQueue,
};
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::topic;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::{format_compact, now_millis, parse_compact};
use vostok_remoting::BoxFuture;

use super::allocate::AllocateStrategy;
use super::config::CommonConsumerConfig;
use super::offset_store::OffsetStore;
use super::process_queue::ProcessQueue;
use super::subscription::{MessageSelector, Subscription};
use crate::api;
use crate::error::{ClientError, Result};
use crate::instance::ClientInstance;
use crate::message::decompress_in_place;
use crate::producer::Producer;
use crate::service_state::ServiceState;

/// What differs between a push consumer (listeners called on the messages) and a lite
/// pull consumer (messages buffered until the application polls them).
pub(crate) trait ConsumerKind: Send + Sync {
    /// Where the messages of one pull go.
    fn deliver(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        mq: MessageQueue,
        pq: Arc<ProcessQueue>,
        msgs: Vec<MessageExt>,
    ) -> BoxFuture<'static, ()>;
    /// How long to wait before pulling this queue again, if it must wait.
    fn flow_control(&self, mq: &MessageQueue, pq: &ProcessQueue) -> Option<Duration>;
    /// Called when rebalancing takes the queue away, before its offset is committed.
    fn on_queue_removed<'a>(
        &'a self,
        core: &'a ConsumerCore,
        mq: &'a MessageQueue,
        pq: &'a ProcessQueue,
    ) -> BoxFuture<'a, ()>;
    /// RESET_CONSUMER_CLIENT_OFFSET for the listed queues of `topic` (namespaced).
    fn reset_offset(
        self: Arc<Self>,
        core: Arc<ConsumerCore>,
        topic: String,
        offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'static, ()>;
    /// CONSUME_MESSAGE_DIRECTLY: the result body.
    fn consume_message_directly<'a>(
        &'a self,
        core: &'a ConsumerCore,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'a, serde_json::Value>;
    /// The kind's own GET_CONSUMER_RUNNING_INFO properties.
    fn running_properties(&self, properties: &mut serde_json::Map<String, serde_json::Value>);
}

/// Pull settings of a consumer.
#[derive(Debug, Clone)]
pub(crate) struct PullSettings {
    pub batch_size: i32,
    pub suspend: Duration,
    pub timeout: Duration,
    pub exception_delay: Duration,
    pub interval: Duration,
    pub post_subscription: bool,
    /// A lite pull consumer: PULL_FLAG_LITE_PULL, offsets committed by the application.
    pub lite: bool,
}

pub(crate) struct ConsumerCore {
    pub group: String,
    pub namespace: String,
    pub model: MessageModel,
    pub consume_type: ConsumeType,
    pub consume_from_where: ConsumeFromWhere,
    pub consume_timestamp: String,
    pub strategy: Arc<dyn AllocateStrategy>,
    pub orderly: bool,
    /// Effective `maxReconsumeTimes`.
    pub max_reconsume_times: i32,
    pub instance: Arc<ClientInstance>,
    pub offsets: OffsetStore,
    pub subscriptions: RwLock<BTreeMap<String, Arc<Subscription>>>,
    pub topic_queues: RwLock<HashMap<String, Vec<MessageQueue>>>,
    pub pqs: Mutex<HashMap<MessageQueue, Arc<ProcessQueue>>>,
    pub pull: PullSettings,
    pub kind: Arc<dyn ConsumerKind>,
    /// The lifecycle of the consumer this core belongs to (shared with its handle).
    pub state: Arc<ServiceState>,
    pub shutdown: CancellationToken,
    pub tracker: TaskTracker,
    pub rebalance_lock: tokio::sync::Mutex<()>,
    /// Lite pull `assign` mode: queues chosen by the user, no rebalance.
    pub assigned: AtomicBool,
    pub start_ms: i64,
    /// Sends messages back to `%RETRY%` when CONSUMER_SEND_MSG_BACK fails.
    pub(super) inner_producer: tokio::sync::OnceCell<Producer>,
}

/// What a consumer kind brings to its core besides the common options.
pub(crate) struct CoreParams {
    pub kind: Arc<dyn ConsumerKind>,
    pub state: Arc<ServiceState>,
    pub consume_type: ConsumeType,
    pub orderly: bool,
    /// `maxReconsumeTimes` as configured (-1: the default of the listener kind).
    pub max_reconsume_times: i32,
    pub pull_interval: Duration,
    pub post_subscription: bool,
}

impl ConsumerCore {
    pub fn new(
        instance: Arc<ClientInstance>,
        config: &CommonConsumerConfig,
        p: CoreParams,
    ) -> Result<Self> {
        let namespace = config.client.namespace.clone();
        let group = topic::wrap_namespace(&namespace, &config.consumer_group);
        let offsets = match config.message_model {
            MessageModel::Clustering => OffsetStore::remote(group.clone(), instance.clone()),
            MessageModel::Broadcasting => OffsetStore::local(group.clone(), instance.clone())?,
        };
        let max_reconsume_times = match p.max_reconsume_times {
            n if n >= 0 => n,
            _ if p.orderly => i32::MAX,
            _ => 16,
        };
        Ok(ConsumerCore {
            namespace,
            offsets,
            model: config.message_model,
            consume_type: p.consume_type,
            consume_from_where: config.consume_from_where,
            consume_timestamp: config
                .consume_timestamp
                .clone()
                .unwrap_or_else(half_hour_ago),
            strategy: config.allocate_strategy.clone(),
            orderly: p.orderly,
            max_reconsume_times,
            instance,
            group,
            subscriptions: RwLock::default(),
            topic_queues: RwLock::default(),
            pqs: Mutex::default(),
            pull: PullSettings {
                batch_size: config.pull_batch_size,
                suspend: config.broker_suspend_max_time,
                timeout: config.consumer_timeout_when_suspend,
                exception_delay: config.pull_time_delay_when_exception,
                interval: p.pull_interval,
                post_subscription: p.post_subscription,
                lite: p.consume_type == ConsumeType::ConsumeActively,
            },
            kind: p.kind,
            state: p.state,
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
            rebalance_lock: tokio::sync::Mutex::new(()),
            assigned: AtomicBool::new(false),
            start_ms: now_millis(),
            inner_producer: tokio::sync::OnceCell::new(),
        })
    }

    pub fn clustering(&self) -> bool {
        self.model == MessageModel::Clustering
    }

    pub fn wrap(&self, resource: &str) -> String {
        topic::wrap_namespace(&self.namespace, resource)
    }

    /// A queue as the application names it (topic without namespace).
    pub fn unwrap_mq(&self, mq: &MessageQueue) -> MessageQueue {
        MessageQueue::new(
            topic::unwrap_namespace(&self.namespace, &mq.topic),
            mq.broker_name.clone(),
            mq.queue_id,
        )
    }

    /// A queue as the brokers name it (topic with namespace).
    pub fn wrap_mq(&self, mq: &MessageQueue) -> MessageQueue {
        MessageQueue::new(self.wrap(&mq.topic), mq.broker_name.clone(), mq.queue_id)
    }

    pub fn subscribe(&self, topic: &str, selector: &MessageSelector) {
        let topic = self.wrap(topic);
        let sub = Arc::new(Subscription::new(&topic, selector));
        self.subscriptions.write_locked().insert(topic, sub);
    }

    /// Turns a routing-key subscription of `topic` into client-side filtering (a
    /// broker refused the `ROUTING` expression type). True when it changed.
    pub fn filter_routing_on_client(&self, topic: &str) -> bool {
        let mut subs = self.subscriptions.write_locked();
        let Some(sub) = subs.get(topic).filter(|s| s.is_routing()) else {
            return false;
        };
        let fallback = Arc::new(sub.client_side());
        tracing::warn!(group = %self.group, topic, binding_key = %sub.data.sub_string,
            "the broker does not filter by routing key; filtering on the client");
        subs.insert(topic.to_owned(), fallback);
        true
    }

    pub fn subscription(&self, topic: &str) -> Option<Arc<Subscription>> {
        self.subscriptions.read_locked().get(topic).cloned()
    }

    pub fn subscribed_topics(&self) -> Vec<String> {
        self.subscriptions.read_locked().keys().cloned().collect()
    }

    pub fn consumer_data(&self) -> ConsumerData {
        ConsumerData {
            consume_from_where: self.consume_from_where,
            consume_type: self.consume_type,
            group_name: self.group.clone(),
            message_model: self.model,
            subscription_data_set: self
                .subscriptions
                .read_locked()
                .values()
                .map(|s| s.data.clone())
                .collect(),
            unit_mode: false,
        }
    }

    /// The offsets held for `topic` (every topic when empty), as Java's
    /// `cloneOffsetTable`.
    pub fn offset_table(&self, topic: &str) -> BTreeMap<MessageQueue, i64> {
        self.offsets
            .snapshot()
            .into_iter()
            .filter(|(mq, _)| topic.is_empty() || mq.topic == topic)
            .collect()
    }

    pub fn process_queue(&self, mq: &MessageQueue) -> Option<Arc<ProcessQueue>> {
        self.pqs.locked().get(mq).cloned()
    }

    /// The assigned queues with their process queues, copied out of the lock.
    pub(crate) fn process_queues(&self) -> Vec<(MessageQueue, Arc<ProcessQueue>)> {
        self.pqs
            .locked()
            .iter()
            .map(|(mq, pq)| (mq.clone(), pq.clone()))
            .collect()
    }

    pub fn assigned_queues(&self) -> Vec<MessageQueue> {
        self.pqs.locked().keys().cloned().collect()
    }

    /// Decompresses, re-filters by tag and pattern, and restores the topic users see:
    /// the original topic of a retried message, without namespace.
    pub fn fix_messages(&self, msgs: Vec<MessageExt>, sub: &Subscription) -> Vec<MessageExt> {
        let retry_topic = topic::retry_topic(&self.group);
        msgs.into_iter()
            .filter(|m| sub.accepts(m))
            .map(|mut m| {
                decompress_in_place(&mut m);
                if m.topic == retry_topic {
                    if let Some(real) = m.property(property::RETRY_TOPIC).map(str::to_owned) {
                        m.topic = real;
                    }
                }
                if !self.namespace.is_empty() {
                    m.topic = topic::unwrap_namespace(&self.namespace, &m.topic);
                }
                m
            })
            .collect()
    }

    /// The offset a newly assigned queue starts from (docs/flows.md#start-offset).
    pub async fn compute_pull_from_where(&self, mq: &MessageQueue) -> Result<i64> {
        if let Some(offset) = self.offsets.read_from_store(mq).await? {
            if offset >= 0 {
                return Ok(offset);
            }
        }
        let is_retry = topic::is_retry_topic(&mq.topic);
        let offset = match self.consume_from_where {
            ConsumeFromWhere::ConsumeFromFirstOffset => 0,
            ConsumeFromWhere::ConsumeFromTimestamp if !is_retry => {
                let ts = parse_compact(&self.consume_timestamp).ok_or_else(|| {
                    ClientError::InvalidArgument(format!(
                        "bad consume timestamp {}",
                        self.consume_timestamp
                    ))
                })?;
                let addr = self.broker_addr(mq).await?;
                api::search_offset(
                    self.instance.remoting(),
                    &addr,
                    mq,
                    ts,
                    self.instance.api_timeout(),
                )
                .await?
            }
            ConsumeFromWhere::ConsumeFromTimestamp => self.max_offset(mq).await?,
            _ if is_retry => 0,
            _ => self.max_offset(mq).await?,
        };
        Ok(offset)
    }

    pub async fn max_offset(&self, mq: &MessageQueue) -> Result<i64> {
        let addr = self.broker_addr(mq).await?;
        api::get_max_offset(
            self.instance.remoting(),
            &addr,
            mq,
            self.instance.api_timeout(),
        )
        .await
    }

    pub async fn min_offset(&self, mq: &MessageQueue) -> Result<i64> {
        let addr = self.broker_addr(mq).await?;
        api::get_min_offset(
            self.instance.remoting(),
            &addr,
            mq,
            self.instance.api_timeout(),
        )
        .await
    }

    pub async fn broker_addr(&self, mq: &MessageQueue) -> Result<String> {
        if let Some(a) = self.instance.find_broker_addr_in_subscribe(&mq.broker_name) {
            return Ok(a);
        }
        self.instance.update_route(&mq.topic).await?;
        self.instance
            .find_broker_addr_in_subscribe(&mq.broker_name)
            .ok_or_else(|| ClientError::NoBroker {
                topic: mq.topic.clone(),
                broker_name: mq.broker_name.clone(),
            })
    }

    /// Where a pull of `mq` goes when the broker suggested `broker_id` (PULL's
    /// `suggestWhichBrokerId`), and whether that is a slave.
    pub async fn pull_addr(&self, mq: &MessageQueue, broker_id: i64) -> Result<(String, bool)> {
        let find = || {
            self.instance
                .find_broker_addr_in_subscribe_for(&mq.broker_name, broker_id)
        };
        if let Some(found) = find() {
            return Ok(found);
        }
        self.instance.update_route(&mq.topic).await?;
        find().ok_or_else(|| ClientError::NoBroker {
            topic: mq.topic.clone(),
            broker_name: mq.broker_name.clone(),
        })
    }

    pub fn log_pull_error(&self, mq: &MessageQueue, e: &ClientError) {
        warn!(group = %self.group, %mq, error = %e, "pull failed");
    }
}

/// `yyyyMMddHHmmss` in local time, half an hour ago (Java's default consumeTimestamp).
fn half_hour_ago() -> String {
    format_compact(now_millis() - 30 * 60 * 1000)
}
