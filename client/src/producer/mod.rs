//! The producer (Java `DefaultMQProducer`): see [`Producer`].
//!
//! * [`send`]: the send path (the send modes, retries on another broker).
//! * `attempt`: one attempt of a send (queue choice, request, hooks, response).
//! * [`send_result`]: what a stored send returns.
//! * [`batch`]: SEND_BATCH_MESSAGE encoding.
//! * [`selector`]: queue selectors for orderly sends.
//! * [`transaction`]: [`TransactionProducer`] and check-back answers.
//! * [`fault`]: latency-based fault avoidance.
//! * [`request`]: request/reply (RocketMQ 4.6).

mod attempt;
pub mod batch;
pub mod fault;
pub mod request;
pub mod selector;
pub mod send;
pub mod send_result;
pub mod trace;
pub mod transaction;

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use tokio::sync::Semaphore;
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::header::CheckTransactionStateRequestHeader;
use vostok_remoting::protocol::message::sysflag::Compression;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::{self, AUTO_CREATE_TOPIC_KEY_TOPIC};
use vostok_remoting::support::sync::RwLockExt;

use crate::error::{ClientError, Result};
use crate::hook::{CheckForbiddenHook, ForbiddenHooks, SendHooks, SendMessageHook};
use crate::instance::registry::ProducerInner;
use crate::instance::{ClientConfig, ClientInstance};
use crate::route::TopicPublishInfo;
use crate::service_state::ServiceState;
use crate::trace::hook::SendMessageTraceHook;
use crate::trace::{TraceConfig, TraceDispatcher};
use crate::NameMap;

pub use fault::LatencyFaultTolerance;
pub use selector::{MessageQueueSelector, SelectMessageQueueByHash, SelectMessageQueueByRandom};
pub use send::SendFuture;
pub use send_result::{SendResult, SendStatus};
pub use transaction::{
    LocalTransactionState, TransactionListener, TransactionProducer, TransactionSendResult,
};

/// Producer options with RocketMQ's names and defaults.
#[derive(Clone)]
pub struct ProducerConfig {
    pub client: ClientConfig,
    /// `producerGroup`.
    pub producer_group: String,
    /// `createTopicKey`: the template topic for auto-creation.
    pub create_topic_key: String,
    /// `defaultTopicQueueNums`: queues asked for when a topic is auto-created.
    pub default_topic_queue_nums: i32,
    /// `sendMsgTimeout`: one send, retries included.
    pub send_msg_timeout: Duration,
    /// `compressMsgBodyOverHowmuch`: bodies of at least this size are compressed.
    pub compress_msg_body_over_howmuch: usize,
    /// `compressType` (`rocketmq.message.compressType` in Java): ZLIB by default, as
    /// Java's, because 4.x and C++ consumers only inflate zlib; LZ4 and ZSTD are faster
    /// but need a consumer that reads the compression type bits (Java 5.x, Vostok).
    pub compress_type: Compression,
    /// `compressLevel` for ZLIB.
    pub compress_level: u32,
    /// `retryTimesWhenSendFailed`: extra attempts of a sync send.
    pub retry_times_when_send_failed: u32,
    /// `retryTimesWhenSendAsyncFailed`: extra attempts of an async send.
    pub retry_times_when_send_async_failed: u32,
    /// `retryAnotherBrokerWhenNotStoreOK`: retry a sync send answered with a status
    /// other than SEND_OK (flush or slave timeouts).
    pub retry_another_broker_when_not_store_ok: bool,
    /// `maxMessageSize`: largest body (or whole batch).
    pub max_message_size: usize,
    /// `sendLatencyFaultEnable` (Java default false; Vostok defaults to true).
    pub send_latency_fault_enable: bool,
    /// `backPressureForAsyncSendNum`: async sends in flight before `send_async` waits.
    pub back_pressure_for_async_send_num: usize,
    /// Response codes after which a send is retried on another broker.
    pub retry_response_codes: Vec<i32>,
    /// `enableMsgTrace`, `customizedTraceTopic`: Pub and EndTransaction records.
    pub trace: TraceConfig,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            client: ClientConfig::default(),
            producer_group: topic::DEFAULT_PRODUCER_GROUP.to_owned(),
            create_topic_key: AUTO_CREATE_TOPIC_KEY_TOPIC.to_owned(),
            default_topic_queue_nums: 4,
            send_msg_timeout: Duration::from_secs(3),
            compress_msg_body_over_howmuch: 4096,
            compress_type: Compression::Zlib,
            compress_level: 5,
            retry_times_when_send_failed: 2,
            retry_times_when_send_async_failed: 2,
            retry_another_broker_when_not_store_ok: false,
            max_message_size: 4 * 1024 * 1024,
            send_latency_fault_enable: true,
            back_pressure_for_async_send_num: 10_000,
            retry_response_codes: vec![
                response_code::TOPIC_NOT_EXIST,
                response_code::SERVICE_NOT_AVAILABLE,
                response_code::SYSTEM_ERROR,
                response_code::SYSTEM_BUSY,
                response_code::NO_PERMISSION,
                response_code::NO_BUYER_ID,
                response_code::NOT_IN_CURRENT_UNIT,
                response_code::GO_AWAY,
            ],
            trace: TraceConfig::default(),
        }
    }
}

impl ProducerConfig {
    /// A config for `group` using the name servers `namesrv_addr` (`host:port;...`).
    pub fn new(group: impl Into<String>, namesrv_addr: &str) -> Self {
        ProducerConfig {
            client: ClientConfig::with_namesrv(namesrv_addr),
            producer_group: group.into(),
            ..Default::default()
        }
    }
}

/// State shared by a producer's handles and registered in the client instance.
pub(crate) struct ProducerShared {
    pub(crate) config: ProducerConfig,
    /// Group name with namespace.
    pub(crate) group: String,
    pub(crate) instance: OnceLock<Arc<ClientInstance>>,
    pub(crate) publish: RwLock<NameMap<Arc<TopicPublishInfo>>>,
    pub(crate) fault: LatencyFaultTolerance,
    pub(crate) send_hooks: RwLock<SendHooks>,
    pub(crate) forbidden_hooks: RwLock<ForbiddenHooks>,
    pub(crate) async_permits: Arc<Semaphore>,
    state: ServiceState,
    pub(crate) transaction_listener: OnceLock<Arc<dyn TransactionListener>>,
    /// Set by `start` when tracing is on.
    pub(crate) trace: OnceLock<Arc<TraceDispatcher>>,
}

/// Publishes messages; see the crate documentation for the modes. Cheap to clone:
/// clones share one producer.
///
/// ```no_run
/// # async fn demo() -> vostok_client::Result<()> {
/// use vostok_client::{Message, Producer, ProducerConfig};
/// let producer = Producer::new(ProducerConfig::new("my_group", "127.0.0.1:9876"));
/// producer.start().await?;
/// let result = producer.send(Message::new("TopicTest", "hello").with_tags("TagA")).await?;
/// println!("{} stored at {} offset {}", result.msg_id, result.message_queue, result.queue_offset);
/// producer.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Producer {
    pub(crate) shared: Arc<ProducerShared>,
}

impl Producer {
    pub fn new(config: ProducerConfig) -> Self {
        let group = topic::wrap_namespace(&config.client.namespace, &config.producer_group);
        Producer {
            shared: Arc::new(ProducerShared {
                async_permits: Arc::new(Semaphore::new(
                    config.back_pressure_for_async_send_num.max(1),
                )),
                group,
                config,
                instance: OnceLock::new(),
                publish: RwLock::default(),
                fault: LatencyFaultTolerance::default(),
                send_hooks: RwLock::default(),
                forbidden_hooks: RwLock::default(),
                state: ServiceState::default(),
                transaction_listener: OnceLock::new(),
                trace: OnceLock::new(),
            }),
        }
    }

    pub fn config(&self) -> &ProducerConfig {
        &self.shared.config
    }

    /// Joins (or creates) the client instance, registers the group and sends a first
    /// heartbeat.
    pub async fn start(&self) -> Result<()> {
        let shared = &self.shared;
        topic::validate_group(&shared.config.producer_group)
            .map_err(ClientError::InvalidArgument)?;
        shared.state.start("producer")?;
        let instance = ClientInstance::get_or_create(&shared.config.client)?;
        if let Err(e) = instance.register_producer(shared.clone()) {
            shared.state.reset();
            return Err(e);
        }
        let _ = shared.instance.set(instance.clone());
        instance.start();
        instance.send_heartbeat_to_all_brokers().await;
        self.start_trace().await;
        tracing::info!(group = %shared.group, client_id = %instance.client_id(), "producer started");
        Ok(())
    }

    /// Unregisters the group from every broker and releases the client instance when
    /// nothing else uses it. Async sends in flight complete or fail first.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        if !shared.state.shut_down() {
            return;
        }
        // Wait (bounded) for async sends in flight.
        let all = shared.config.back_pressure_for_async_send_num.max(1) as u32;
        let _ = tokio::time::timeout(
            shared.config.send_msg_timeout * 2,
            shared.async_permits.acquire_many(all),
        )
        .await;
        if let Some(trace) = shared.trace.get() {
            trace.shutdown().await;
        }
        if let Some(instance) = shared.instance.get() {
            instance.unregister_producer(&shared.group).await;
        }
        tracing::info!(group = %shared.group, "producer shut down");
    }

    /// With `enableMsgTrace`, starts the trace dispatcher and its hook. A dispatcher
    /// that cannot start leaves the producer working untraced, with a warning.
    async fn start_trace(&self) {
        let shared = &self.shared;
        let config = &shared.config;
        let Some(dispatcher) = trace::dispatcher(
            &config.trace,
            &config.client,
            &config.producer_group,
            "PRODUCER",
        ) else {
            return;
        };
        if let Err(e) = dispatcher.start().await {
            tracing::warn!(group = %shared.group, error = %e, "message trace not started");
            return;
        }
        self.register_send_message_hook(Arc::new(SendMessageTraceHook::new(dispatcher.clone())));
        let _ = shared.trace.set(dispatcher);
    }

    /// The trace dispatcher, when tracing is on and the producer started.
    pub fn trace_dispatcher(&self) -> Option<&Arc<TraceDispatcher>> {
        self.shared.trace.get()
    }

    /// Adds a hook called before and after every send attempt.
    pub fn register_send_message_hook(&self, hook: Arc<dyn SendMessageHook>) {
        self.shared.send_hooks.write_locked().push(hook);
    }

    /// Adds a hook that may refuse a send before it is made.
    pub fn register_check_forbidden_hook(&self, hook: Arc<dyn CheckForbiddenHook>) {
        self.shared.forbidden_hooks.write_locked().push(hook);
    }

    /// The write queues of a topic (Java `fetchPublishMessageQueues`), without namespace.
    pub async fn fetch_publish_message_queues(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        let shared = &self.shared;
        let info = shared.publish_info(&shared.wrap(topic)).await?;
        Ok(info.queues.iter().map(|mq| shared.unwrap_mq(mq)).collect())
    }

    /// The client instance this producer runs in (after `start`).
    pub fn instance(&self) -> Option<&Arc<ClientInstance>> {
        self.shared.instance.get()
    }
}

impl ProducerShared {
    pub(crate) fn instance(&self) -> Result<&Arc<ClientInstance>> {
        self.state.check_running("producer")?;
        self.instance
            .get()
            .ok_or(ClientError::NotStarted("producer"))
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.config.client.namespace
    }

    pub(crate) fn wrap(&self, resource: &str) -> String {
        topic::wrap_namespace(self.namespace(), resource)
    }

    pub(crate) fn unwrap_mq(&self, mq: &MessageQueue) -> MessageQueue {
        MessageQueue::new(
            topic::unwrap_namespace(self.namespace(), &mq.topic),
            mq.broker_name.clone(),
            mq.queue_id,
        )
    }

    /// The publish info of a topic (namespaced name): cached, else from the name
    /// server, else from the auto-create template topic.
    pub(crate) async fn publish_info(&self, topic: &str) -> Result<Arc<TopicPublishInfo>> {
        if let Some(info) = self
            .publish
            .read_locked()
            .get(topic)
            .filter(|i| !i.is_empty())
        {
            return Ok(info.clone());
        }
        let instance = self.instance()?;
        // Register the topic first so the route update reaches this producer.
        self.publish
            .write_locked()
            .entry(topic.to_owned())
            .or_insert_with(|| Arc::new(TopicPublishInfo::new(topic, Arc::default())));
        if instance.update_route(topic).await?.is_some() {
            if let Some(info) = self
                .publish
                .read_locked()
                .get(topic)
                .filter(|i| !i.is_empty())
            {
                return Ok(info.clone());
            }
            // The route did not change since another producer cached it.
            if let Some(route) = instance.cached_route(topic) {
                let info = Arc::new(TopicPublishInfo::new(topic, route));
                if !info.is_empty() {
                    self.update_publish_info(topic, info.clone());
                    return Ok(info);
                }
            }
        }
        if let Some(info) = instance
            .default_publish_info(topic, self.config.default_topic_queue_nums)
            .await?
        {
            if !info.is_empty() {
                return Ok(Arc::new(info));
            }
        }
        if let Some(brokers) = instance
            .cached_route(topic)
            .and_then(|route| crate::route::read_only_brokers(&route))
        {
            return Err(ClientError::ReadOnly {
                topic: topic::unwrap_namespace(self.namespace(), topic),
                brokers,
            });
        }
        Err(ClientError::NoRoute {
            topic: topic.to_owned(),
        })
    }
}

impl ProducerInner for ProducerShared {
    fn group(&self) -> &str {
        &self.group
    }

    fn publish_topics(&self) -> Vec<String> {
        self.publish.read_locked().keys().cloned().collect()
    }

    fn update_publish_info(&self, topic: &str, info: Arc<TopicPublishInfo>) {
        let mut table = self.publish.write_locked();
        if let Some(slot) = table.get_mut(topic) {
            *slot = info;
        }
    }

    fn check_transaction_state(
        &self,
        broker_addr: String,
        msg: MessageExt,
        header: CheckTransactionStateRequestHeader,
    ) {
        transaction::check_transaction_state(self, broker_addr, msg, header);
    }
}
