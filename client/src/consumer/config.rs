//! Consumer options with RocketMQ's names and defaults: [`CommonConsumerConfig`] holds
//! what every consumer has (Java's fields shared by `DefaultMQPushConsumer` and
//! `DefaultLitePullConsumer`), embedded in [`ConsumerConfig`] (push) and
//! [`LitePullConsumerConfig`] next to what only that kind has.

use std::sync::Arc;
use std::time::Duration;

use vostok_remoting::protocol::body::{ConsumeFromWhere, MessageModel};
use vostok_remoting::protocol::topic::DEFAULT_CONSUMER_GROUP;

use super::allocate::{AllocateMessageQueueAveragely, AllocateStrategy};
use crate::instance::ClientConfig;
use crate::trace::TraceConfig;

/// The options of every consumer. Three defaults differ between the kinds, as in Java
/// (push / lite pull): `pullBatchSize` 32 / 10, `brokerSuspendMaxTimeMillis` 15 s / 20 s,
/// `pullTimeDelayMillsWhenException` 3 s / 1 s; hence [`Self::push_defaults`] and
/// [`Self::lite_pull_defaults`] rather than one `Default`.
#[derive(Clone)]
pub struct CommonConsumerConfig {
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
    /// `pullBatchSize`: messages asked for by one pull.
    pub pull_batch_size: i32,
    /// `pullThresholdForQueue`: cached messages per queue before pulls pause.
    pub pull_threshold_for_queue: usize,
    /// `pullThresholdSizeForQueue` in MiB.
    pub pull_threshold_size_for_queue: u64,
    /// `brokerSuspendMaxTimeMillis`: long-poll hold asked of the broker.
    pub broker_suspend_max_time: Duration,
    /// `consumerTimeoutMillisWhenSuspend`: pull call timeout, longer than the hold.
    pub consumer_timeout_when_suspend: Duration,
    /// `pullTimeDelayMillsWhenException`: wait before pulling again after an error.
    pub pull_time_delay_when_exception: Duration,
}

impl CommonConsumerConfig {
    /// Java `DefaultMQPushConsumer`'s defaults.
    pub fn push_defaults() -> Self {
        CommonConsumerConfig {
            client: ClientConfig::default(),
            consumer_group: DEFAULT_CONSUMER_GROUP.to_owned(),
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            consume_timestamp: None,
            allocate_strategy: Arc::new(AllocateMessageQueueAveragely),
            pull_batch_size: 32,
            pull_threshold_for_queue: 1000,
            pull_threshold_size_for_queue: 100,
            broker_suspend_max_time: Duration::from_secs(15),
            consumer_timeout_when_suspend: Duration::from_secs(30),
            pull_time_delay_when_exception: Duration::from_secs(3),
        }
    }

    /// Java `DefaultLitePullConsumer`'s defaults.
    pub fn lite_pull_defaults() -> Self {
        CommonConsumerConfig {
            pull_batch_size: 10,
            broker_suspend_max_time: Duration::from_secs(20),
            pull_time_delay_when_exception: Duration::from_secs(1),
            ..Self::push_defaults()
        }
    }
}

/// Push consumer options with RocketMQ's names and defaults.
#[derive(Clone)]
pub struct ConsumerConfig {
    pub common: CommonConsumerConfig,
    /// `consumeThreadMax`: listener calls running at once.
    pub consume_thread_max: usize,
    /// `consumeConcurrentlyMaxSpan`.
    pub consume_concurrently_max_span: i64,
    /// `pullInterval`.
    pub pull_interval: Duration,
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
    /// `enableMsgTrace`, `customizedTraceTopic`: SubBefore and SubAfter records.
    pub trace: TraceConfig,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            common: CommonConsumerConfig::push_defaults(),
            consume_thread_max: 20,
            consume_concurrently_max_span: 2000,
            pull_interval: Duration::ZERO,
            consume_message_batch_max_size: 1,
            post_subscription_when_pull: false,
            max_reconsume_times: -1,
            suspend_current_queue_time: Duration::from_secs(1),
            consume_timeout: Duration::from_secs(15 * 60),
            trace: TraceConfig::default(),
        }
    }
}

impl ConsumerConfig {
    /// A config for `group` using the name servers `namesrv_addr` (`host:port;...`).
    pub fn new(group: impl Into<String>, namesrv_addr: &str) -> Self {
        let mut config = ConsumerConfig::default();
        config.common.client = ClientConfig::with_namesrv(namesrv_addr);
        config.common.consumer_group = group.into();
        config
    }
}

/// Lite pull consumer options with RocketMQ's names and defaults.
#[derive(Clone)]
pub struct LitePullConsumerConfig {
    pub common: CommonConsumerConfig,
    /// `autoCommit`.
    pub auto_commit: bool,
    /// `autoCommitIntervalMillis`.
    pub auto_commit_interval: Duration,
    /// `pullThresholdForAll`: buffered messages before pulls pause.
    pub pull_threshold_for_all: usize,
    /// `pollTimeoutMillis`: default timeout of `LitePullConsumer::poll_default`.
    pub poll_timeout: Duration,
}

impl Default for LitePullConsumerConfig {
    fn default() -> Self {
        LitePullConsumerConfig {
            common: CommonConsumerConfig::lite_pull_defaults(),
            auto_commit: true,
            auto_commit_interval: Duration::from_secs(5),
            pull_threshold_for_all: 10_000,
            poll_timeout: Duration::from_secs(5),
        }
    }
}

impl LitePullConsumerConfig {
    /// A config for `group` using the name servers `namesrv_addr` (`host:port;...`).
    pub fn new(group: impl Into<String>, namesrv_addr: &str) -> Self {
        let mut config = LitePullConsumerConfig::default();
        config.common.client = ClientConfig::with_namesrv(namesrv_addr);
        config.common.consumer_group = group.into();
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_keep_their_java_defaults() {
        let push = ConsumerConfig::new("g", "a:1");
        assert_eq!(push.common.consumer_group, "g");
        assert_eq!(push.common.client.namesrv_addr, vec!["a:1".to_owned()]);
        assert_eq!(push.common.pull_batch_size, 32);
        assert_eq!(push.common.broker_suspend_max_time, Duration::from_secs(15));
        assert_eq!(
            push.common.pull_time_delay_when_exception,
            Duration::from_secs(3)
        );
        let lite = LitePullConsumerConfig::new("l", "b:2");
        assert_eq!(lite.common.consumer_group, "l");
        assert_eq!(lite.common.pull_batch_size, 10);
        assert_eq!(lite.common.broker_suspend_max_time, Duration::from_secs(20));
        assert_eq!(
            lite.common.pull_time_delay_when_exception,
            Duration::from_secs(1)
        );
        for common in [&push.common, &lite.common] {
            assert_eq!(common.message_model, MessageModel::Clustering);
            assert_eq!(common.pull_threshold_for_queue, 1000);
            assert_eq!(common.pull_threshold_size_for_queue, 100);
            assert_eq!(
                common.consumer_timeout_when_suspend,
                Duration::from_secs(30)
            );
        }
    }
}
