//! Consumers: [`PushConsumer`] (Java `DefaultMQPushConsumer`) and [`LitePullConsumer`]
//! (Java `DefaultLitePullConsumer`).
//!
//! * `rebalance`: which queues this member consumes (every 20 s and on
//!   NOTIFY_CONSUMER_IDS_CHANGED), with the strategies of [`allocate`].
//! * `pull`: one long-polling pull task per assigned queue.
//! * `process_queue`: messages between pull and consumption, flow control.
//! * `offset_store`: offsets on the broker (clustering) or in a file (broadcasting).
//! * `offset_table`: the queue → offset tables of RESET_CONSUMER_CLIENT_OFFSET and
//!   GET_CONSUMER_STATUS_FROM_CLIENT.
//! * [`push`] and [`lite_pull`]: the two consumer kinds.
//! * [`wildcard`]: AMQP-style routing-key patterns on tags.

pub mod allocate;
pub(crate) mod core;
pub mod lite_pull;
pub(crate) mod offset_store;
pub(crate) mod offset_table;
pub(crate) mod process_queue;
pub(crate) mod pull;
pub mod push;
pub(crate) mod rebalance;
pub mod wildcard;

use std::sync::Arc;
use std::time::Duration;

use vostok_remoting::protocol::body::{ConsumeFromWhere, MessageModel, MessageQueue};
use vostok_remoting::protocol::message::MessageExt;

use crate::instance::ClientConfig;

pub use allocate::{
    AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueConsistentHash, AllocateStrategy,
};
pub use lite_pull::{LitePullConsumer, LitePullConsumerConfig};
pub use push::PushConsumer;
pub use wildcard::RoutingPattern;

/// What a concurrent listener answers (Java `ConsumeConcurrentlyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeConcurrentlyStatus {
    ConsumeSuccess,
    /// Retry later: the messages are sent back to `%RETRY%<group>` (clustering).
    ReconsumeLater,
}

/// What an orderly listener answers (Java `ConsumeOrderlyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeOrderlyStatus {
    Success,
    /// Retry the same messages on the same queue after `suspendCurrentQueueTimeMillis`.
    SuspendCurrentQueueAMoment,
}

/// Context of a concurrent listener call (Java `ConsumeConcurrentlyContext`).
#[derive(Debug, Clone)]
pub struct ConsumeConcurrentlyContext {
    pub message_queue: MessageQueue,
    /// Delay level of the send-back on RECONSUME_LATER; 0 lets the broker choose
    /// (`3 + reconsumeTimes`), negative sends straight to the DLQ.
    pub delay_level_when_next_consume: i32,
    /// With CONSUME_SUCCESS, messages after this index are still retried.
    pub ack_index: i32,
}

/// Context of an orderly listener call (Java `ConsumeOrderlyContext`).
#[derive(Debug, Clone)]
pub struct ConsumeOrderlyContext {
    pub message_queue: MessageQueue,
    /// Overrides `suspendCurrentQueueTimeMillis` for this call when positive.
    pub suspend_current_queue_time_millis: i64,
}

/// A listener called with up to `consumeMessageBatchMaxSize` messages of one queue,
/// possibly on several queues at once. It runs on the async runtime: long blocking
/// work belongs in `tokio::task::block_in_place` or a thread of its own.
pub trait MessageListenerConcurrently: Send + Sync + 'static {
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        context: &mut ConsumeConcurrentlyContext,
    ) -> ConsumeConcurrentlyStatus;
}

/// A listener called with the messages of one queue in queue order, one call at a time
/// per queue.
pub trait MessageListenerOrderly: Send + Sync + 'static {
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        context: &mut ConsumeOrderlyContext,
    ) -> ConsumeOrderlyStatus;
}

impl<F> MessageListenerConcurrently for F
where
    F: Fn(&[MessageExt], &mut ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus
        + Send
        + Sync
        + 'static,
{
    fn consume_message(
        &self,
        msgs: &[MessageExt],
        context: &mut ConsumeConcurrentlyContext,
    ) -> ConsumeConcurrentlyStatus {
        self(msgs, context)
    }
}

/// The listener of a push consumer.
#[derive(Clone)]
pub enum MessageListener {
    Concurrently(Arc<dyn MessageListenerConcurrently>),
    Orderly(Arc<dyn MessageListenerOrderly>),
}

impl MessageListener {
    pub fn concurrently(l: impl MessageListenerConcurrently) -> Self {
        MessageListener::Concurrently(Arc::new(l))
    }

    pub fn orderly(l: impl MessageListenerOrderly) -> Self {
        MessageListener::Orderly(Arc::new(l))
    }

    pub(crate) fn is_orderly(&self) -> bool {
        matches!(self, MessageListener::Orderly(_))
    }
}

/// What a subscription selects (Java `MessageSelector`, plus routing-key patterns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageSelector {
    /// `*` or `TagA || TagB`: filtered by tag hash on the broker, by tag on the client.
    Tag(String),
    /// SQL92 over message properties, evaluated by brokers that enable property
    /// filtering (`enablePropertyFilter`); others reject the subscription and the pulls
    /// fail with the broker's code, logged.
    Sql92(String),
    /// A dot-separated routing-key pattern on the tag (`*` one word, `#` zero or more),
    /// matched on the client; the broker filters by tag hash only when the pattern has
    /// no wildcard.
    RoutingKey(String),
}

impl MessageSelector {
    pub fn by_tag(expression: impl Into<String>) -> Self {
        MessageSelector::Tag(expression.into())
    }

    pub fn by_sql(expression: impl Into<String>) -> Self {
        MessageSelector::Sql92(expression.into())
    }

    pub fn by_routing_key(pattern: impl Into<String>) -> Self {
        MessageSelector::RoutingKey(pattern.into())
    }
}

/// Push consumer options with RocketMQ's names and defaults.
#[derive(Clone)]
pub struct ConsumerConfig {
    pub client: ClientConfig,
    /// `consumerGroup`.
    pub consumer_group: String,
    /// `messageModel`.
    pub message_model: MessageModel,
    /// `consumeFromWhere`: where a group without committed offset starts.
    pub consume_from_where: ConsumeFromWhere,
    /// `consumeTimestamp` (`yyyyMMddHHmmss`, local time) for CONSUME_FROM_TIMESTAMP;
    /// default half an hour before start.
    pub consume_timestamp: Option<String>,
    /// `allocateMessageQueueStrategy`.
    pub allocate_strategy: Arc<dyn AllocateStrategy>,
    /// `consumeThreadMax`: listener calls running at once.
    pub consume_thread_max: usize,
    /// `consumeConcurrentlyMaxSpan`.
    pub consume_concurrently_max_span: i64,
    /// `pullThresholdForQueue`: cached messages per queue before pulls pause.
    pub pull_threshold_for_queue: usize,
    /// `pullThresholdSizeForQueue` in MiB.
    pub pull_threshold_size_for_queue: u64,
    /// `pullInterval`.
    pub pull_interval: Duration,
    /// `pullBatchSize`.
    pub pull_batch_size: i32,
    /// `consumeMessageBatchMaxSize`.
    pub consume_message_batch_max_size: usize,
    /// `postSubscriptionWhenPull`.
    pub post_subscription_when_pull: bool,
    /// `maxReconsumeTimes`: -1 means 16 (concurrent) or unlimited (orderly).
    pub max_reconsume_times: i32,
    /// `suspendCurrentQueueTimeMillis`.
    pub suspend_current_queue_time: Duration,
    /// `consumeTimeout`: a message consumed longer than this is sent back.
    pub consume_timeout: Duration,
    /// `pullTimeDelayMillsWhenException`.
    pub pull_time_delay_when_exception: Duration,
    /// Long-poll hold asked of the broker (`BROKER_SUSPEND_MAX_TIME_MILLIS`).
    pub broker_suspend_max_time: Duration,
    /// Pull call timeout (`CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND`).
    pub consumer_timeout_when_suspend: Duration,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            client: ClientConfig::default(),
            consumer_group: vostok_remoting::protocol::topic::DEFAULT_CONSUMER_GROUP.to_owned(),
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_timestamp: None,
            allocate_strategy: Arc::new(AllocateMessageQueueAveragely),
            consume_thread_max: 20,
            consume_concurrently_max_span: 2000,
            pull_threshold_for_queue: 1000,
            pull_threshold_size_for_queue: 100,
            pull_interval: Duration::ZERO,
            pull_batch_size: 32,
            consume_message_batch_max_size: 1,
            post_subscription_when_pull: false,
            max_reconsume_times: -1,
            suspend_current_queue_time: Duration::from_secs(1),
            consume_timeout: Duration::from_secs(15 * 60),
            pull_time_delay_when_exception: Duration::from_secs(3),
            broker_suspend_max_time: Duration::from_secs(15),
            consumer_timeout_when_suspend: Duration::from_secs(30),
        }
    }
}

impl ConsumerConfig {
    /// A config for `group` using the name servers `namesrv_addr` (`host:port;...`).
    pub fn new(group: impl Into<String>, namesrv_addr: &str) -> Self {
        ConsumerConfig {
            client: ClientConfig::with_namesrv(namesrv_addr),
            consumer_group: group.into(),
            ..Default::default()
        }
    }
}
