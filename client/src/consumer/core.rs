//! State and operations shared by the push and lite pull consumers: subscriptions,
//! assigned queues, offsets, start offsets, message fix-up and send-back.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};
use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, MessageQueue, SubscriptionData,
    EXPRESSION_TYPE_SQL92, SUB_ALL,
};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::header::ConsumerSendMsgBackRequestHeader;
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::topic::{self, CLIENT_INNER_PRODUCER_GROUP};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::{format_compact, now_millis, parse_compact};
use vostok_remoting::BoxFuture;

use super::offset_store::OffsetStore;
use super::process_queue::ProcessQueue;
use super::wildcard::RoutingPattern;
use super::{AllocateStrategy, MessageSelector};
use crate::api;
use crate::error::{ClientError, Result};
use crate::instance::ClientInstance;
use crate::message::{decompress_in_place, Message};
use crate::producer::{Producer, ProducerConfig};

/// One subscribed topic: what the broker filters on, and the client-side pattern.
#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    pub data: SubscriptionData,
    pub pattern: Option<RoutingPattern>,
}

impl Subscription {
    /// `topic` is already namespaced.
    pub fn new(topic: &str, selector: &MessageSelector) -> Self {
        let version = now_millis();
        match selector {
            MessageSelector::Tag(expr) => Subscription {
                data: build_subscription(topic, expr, version),
                pattern: None,
            },
            MessageSelector::Sql92(expr) => {
                let mut data = build_subscription(topic, SUB_ALL, version);
                data.expression_type = EXPRESSION_TYPE_SQL92.to_owned();
                data.sub_string = expr.clone();
                Subscription {
                    data,
                    pattern: None,
                }
            }
            MessageSelector::RoutingKey(p) => {
                let pattern = RoutingPattern::new(p);
                let broker_expr = if pattern.is_literal() {
                    p.as_str()
                } else {
                    SUB_ALL
                };
                Subscription {
                    data: build_subscription(topic, broker_expr, version),
                    pattern: Some(pattern),
                }
            }
        }
    }

    /// The client-side re-check: exact tags (hash collisions) and routing patterns.
    pub fn accepts(&self, msg: &MessageExt) -> bool {
        let tag = msg.tags().unwrap_or("");
        if self.data.expression_type != EXPRESSION_TYPE_SQL92
            && !self.data.tags_set.is_empty()
            && !self.data.tags_set.contains(tag)
        {
            return false;
        }
        self.pattern.as_ref().is_none_or(|p| p.matches(tag))
    }
}

/// Where messages of a pull go, and how the pull loop is throttled.
pub(crate) trait PullSink: Send + Sync {
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
    fn on_removed<'a>(
        &'a self,
        core: &'a Arc<ConsumerCore>,
        mq: &'a MessageQueue,
        pq: &'a Arc<ProcessQueue>,
    ) -> BoxFuture<'a, ()>;
}

/// Pull settings of a consumer kind.
#[derive(Debug, Clone)]
pub(crate) struct PullSettings {
    pub batch_size: i32,
    pub suspend: Duration,
    pub timeout: Duration,
    pub exception_delay: Duration,
    pub interval: Duration,
    pub post_subscription: bool,
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
    pub sink: OnceLock<Arc<dyn PullSink>>,
    pub shutdown: CancellationToken,
    pub tracker: TaskTracker,
    pub rebalance_lock: tokio::sync::Mutex<()>,
    /// Lite pull `assign` mode: queues chosen by the user, no rebalance.
    pub assigned: AtomicBool,
    pub start_ms: i64,
    inner_producer: tokio::sync::OnceCell<Producer>,
}

pub(crate) struct CoreParams {
    pub group: String,
    pub model: MessageModel,
    pub consume_type: ConsumeType,
    pub consume_from_where: ConsumeFromWhere,
    pub consume_timestamp: Option<String>,
    pub strategy: Arc<dyn AllocateStrategy>,
    pub orderly: bool,
    pub max_reconsume_times: i32,
    pub pull: PullSettings,
}

impl ConsumerCore {
    pub fn new(instance: Arc<ClientInstance>, p: CoreParams) -> Result<Self> {
        let namespace = instance.config().namespace.clone();
        let group = topic::wrap_namespace(&namespace, &p.group);
        let offsets = match p.model {
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
            model: p.model,
            consume_type: p.consume_type,
            consume_from_where: p.consume_from_where,
            consume_timestamp: p.consume_timestamp.unwrap_or_else(half_hour_ago),
            strategy: p.strategy,
            orderly: p.orderly,
            max_reconsume_times,
            instance,
            group,
            subscriptions: RwLock::default(),
            topic_queues: RwLock::default(),
            pqs: Mutex::default(),
            pull: p.pull,
            sink: OnceLock::new(),
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

    pub fn subscribe(&self, topic: &str, selector: &MessageSelector) {
        let topic = self.wrap(topic);
        let sub = Arc::new(Subscription::new(&topic, selector));
        self.subscriptions.write_locked().insert(topic, sub);
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

    /// The offset a newly assigned queue starts from (PROTOCOL.md 9.3).
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

    async fn inner_producer(&self) -> Result<&Producer> {
        self.inner_producer
            .get_or_try_init(|| async {
                let mut config = ProducerConfig {
                    client: self.instance.config().clone(),
                    producer_group: CLIENT_INNER_PRODUCER_GROUP.to_owned(),
                    ..Default::default()
                };
                // The inner producer sends namespaced names as they are.
                config.client.namespace = String::new();
                let producer = Producer::new(config);
                match producer.start().await {
                    Ok(()) | Err(ClientError::DuplicateGroup(_)) => Ok(producer),
                    Err(e) => Err(e),
                }
            })
            .await
    }

    /// Sends a failed message back for a later retry: CONSUMER_SEND_MSG_BACK, and if
    /// that fails a plain send to `%RETRY%<group>` (PROTOCOL.md 7.3).
    pub async fn send_back(
        &self,
        msg: &MessageExt,
        broker_name: &str,
        delay_level: i32,
    ) -> Result<()> {
        let addr = self
            .instance
            .find_broker_addr_in_publish(broker_name)
            .unwrap_or_else(|| msg.store_host.to_string());
        let header = ConsumerSendMsgBackRequestHeader {
            offset: msg.commit_log_offset,
            group: self.group.clone(),
            delay_level,
            origin_msg_id: Some(msg.msg_id()),
            origin_topic: Some(self.wrap(&msg.topic)),
            unit_mode: Some(false),
            max_reconsume_times: Some(self.max_reconsume_times),
        };
        match api::consumer_send_msg_back(
            self.instance.remoting(),
            &addr,
            &header,
            self.instance.api_timeout(),
        )
        .await
        {
            Ok(()) => Ok(()),
            Err(e) => {
                debug!(msg_id = %msg.msg_id(), error = %e, "send-back failed; sending to the retry topic");
                self.send_back_as_new_message(msg, delay_level.max(0)).await
            }
        }
    }

    /// The fallback of [`Self::send_back`], also used by orderly consumers whose
    /// messages exhausted their retries (the broker then routes them to the DLQ).
    pub async fn send_back_as_new_message(&self, msg: &MessageExt, delay_level: i32) -> Result<()> {
        let mut m = Message::new(topic::retry_topic(&self.group), msg.body.clone());
        m.flag = msg.flag;
        m.properties = msg.properties.clone();
        let origin = msg
            .property(property::ORIGIN_MESSAGE_ID)
            .map(str::to_owned)
            .unwrap_or_else(|| msg.msg_id());
        m.properties.insert(property::ORIGIN_MESSAGE_ID, origin);
        if !m.properties.contains(property::RETRY_TOPIC) {
            m.properties
                .insert(property::RETRY_TOPIC, self.wrap(&msg.topic));
        }
        m.properties.insert(
            property::RECONSUME_TIME,
            (msg.reconsume_times + 1).to_string(),
        );
        m.properties.insert(
            property::MAX_RECONSUME_TIMES,
            self.max_reconsume_times.to_string(),
        );
        m.properties.remove(property::TRANSACTION_PREPARED);
        let level = if delay_level > 0 {
            delay_level
        } else {
            3 + msg.reconsume_times
        };
        m.set_delay_level(level);
        let producer = self.inner_producer().await?;
        producer.send_internal(m).await.map(|_| ())
    }

    /// Running-info fields common to both consumer kinds.
    pub fn running_info(
        &self,
        extra: serde_json::Map<String, serde_json::Value>,
    ) -> serde_json::Value {
        use serde_json::{json, Value};
        let mut properties = serde_json::Map::new();
        properties.insert(
            "PROP_NAMESRV_ADDR".into(),
            Value::String(self.instance.config().namesrv_addr.join(";")),
        );
        properties.insert(
            "PROP_CONSUME_TYPE".into(),
            Value::String(self.consume_type.name().into()),
        );
        properties.insert(
            "PROP_CONSUMEORDERLY".into(),
            Value::String(self.orderly.to_string()),
        );
        properties.insert(
            "PROP_CLIENT_VERSION".into(),
            Value::String(format!("vostok-client {}", env!("CARGO_PKG_VERSION"))),
        );
        properties.insert(
            "PROP_CONSUMER_START_TIMESTAMP".into(),
            Value::String(self.start_ms.to_string()),
        );
        properties.insert(
            "messageModel".into(),
            Value::String(self.model.name().into()),
        );
        properties.insert(
            "consumeFromWhere".into(),
            Value::String(self.consume_from_where.name().into()),
        );
        properties.insert("consumerGroup".into(), Value::String(self.group.clone()));
        properties.insert(
            "allocateMessageQueueStrategy".into(),
            Value::String(self.strategy.name().into()),
        );
        properties.insert(
            "maxReconsumeTimes".into(),
            Value::String(self.max_reconsume_times.to_string()),
        );
        for (k, v) in extra {
            properties.insert(k, v);
        }
        let subs: Vec<Value> = self
            .subscriptions
            .read_locked()
            .values()
            .map(|s| serde_json::to_value(&s.data).unwrap_or(Value::Null))
            .collect();
        let offsets = self.offsets.snapshot();
        let mut mq_table = serde_json::Map::new();
        let pqs = self.process_queues();
        for (mq, pq) in pqs {
            let (min, max) = pq.cached_range();
            let key = serde_json::to_string(&mq).unwrap_or_default();
            mq_table.insert(
                key,
                json!({
                    "commitOffset": offsets.get(&mq).copied().unwrap_or(-1),
                    "cachedMsgMinOffset": min,
                    "cachedMsgMaxOffset": max,
                    "cachedMsgCount": pq.msg_count(),
                    "cachedMsgSizeInMiB": pq.msg_size() / (1024 * 1024),
                    "locked": pq.is_locked(),
                    "lastLockTimestamp": pq.last_lock_ms.load(std::sync::atomic::Ordering::Relaxed),
                    "droped": pq.is_dropped(),
                    "lastPullTimestamp": pq.last_pull_ms.load(std::sync::atomic::Ordering::Relaxed),
                    "lastConsumeTimestamp": pq.last_consume_ms.load(std::sync::atomic::Ordering::Relaxed),
                }),
            );
        }
        json!({
            "properties": properties,
            "subscriptionSet": subs,
            "mqTable": mq_table,
            "statusTable": {},
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_filter_on_the_client() {
        let tag = |t: &str| {
            let mut props = vostok_remoting::protocol::message::Properties::new();
            props.insert("TAGS", t);
            props
        };
        let make = |t: &str| MessageExt {
            topic: "T".into(),
            flag: 0,
            properties: tag(t),
            body: bytes::Bytes::new(),
            queue_id: 0,
            store_size: 0,
            queue_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_timestamp: 0,
            store_host: "127.0.0.1:1".parse().unwrap(),
            commit_log_offset: 0,
            body_crc: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        let by_tag = Subscription::new("T", &MessageSelector::by_tag("TagA || TagB"));
        assert!(by_tag.accepts(&make("TagA")));
        assert!(!by_tag.accepts(&make("TagC")));
        let pattern = Subscription::new("T", &MessageSelector::by_routing_key("order.*.paid"));
        assert_eq!(
            pattern.data.sub_string, "*",
            "wildcards are matched on the client"
        );
        assert!(pattern.accepts(&make("order.eu.paid")));
        assert!(!pattern.accepts(&make("order.eu.x.paid")));
        let literal = Subscription::new("T", &MessageSelector::by_routing_key("a.b"));
        assert_eq!(
            literal.data.sub_string, "a.b",
            "a literal key is filtered by the broker"
        );
        let sql = Subscription::new("T", &MessageSelector::by_sql("a > 1"));
        assert_eq!(sql.data.expression_type, "SQL92");
        assert!(sql.accepts(&make("anything")));
    }
}
