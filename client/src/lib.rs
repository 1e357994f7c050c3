//! Vostok's client SDK: producers and consumers speaking Apache RocketMQ's remoting
//! protocol, with the behaviour of RocketMQ's Java client, against Vostok and Apache
//! RocketMQ brokers alike.
//!
//! * [`Producer`] (Java `DefaultMQProducer`): sync, async, oneway, orderly (queue
//!   selector), batch sends, compression, retries with fault avoidance, hooks,
//!   request/reply; [`TransactionProducer`] for transactional messages.
//! * [`PushConsumer`] (Java `DefaultMQPushConsumer`): long-polling pull loop per queue,
//!   concurrent or orderly listeners, clustering or broadcasting, retries and DLQ.
//! * [`LitePullConsumer`] (Java `DefaultLitePullConsumer`): `poll`, `commit`, `seek`.
//! * [`SimpleConsumer`] (the 5.x clients' `SimpleConsumer`) over POP: `receive` with an
//!   invisible duration, `ack`, `change_invisible_duration`.
//!
//! Module map:
//!
//! * [`instance`]: the client instance a process's producers and consumers share (Java
//!   `MQClientInstance`): [`instance::config`] ([`ClientConfig`]), `registry` (producer
//!   and consumer groups), `route_table` (topic routes, broker addresses), `heartbeat`,
//!   `timers` (route poll, heartbeat, offset persist, rebalance), `reply` (requests
//!   waiting for their reply).
//! * `processor`: requests brokers send to the client; `api`: one function per RPC.
//! * [`producer`]: [`producer::send`] (send modes, retries), `attempt` (one attempt of
//!   a send), [`producer::send_result`], [`producer::batch`], [`producer::selector`],
//!   [`producer::transaction`], [`producer::fault`], [`producer::request`],
//!   [`producer::trace`] (the producer that carries trace records).
//! * [`consumer`]: [`consumer::config`], [`consumer::listener`], `subscription`, `core`
//!   (the consumer core, what the instance registers for either kind) with `inner`,
//!   `rebalance`, `pull`, `process_queue`, `offset_store`, `offset_table`, `send_back`,
//!   `running_info`; the kinds [`consumer::push`] (`service`, `concurrently`,
//!   `orderly`), [`consumer::lite_pull`] (`cache`, `poll`) and [`consumer::simple`]
//!   (`receive`, `settle`); [`consumer::allocate`],
//!   [`consumer::wildcard`].
//! * [`admin`]: [`admin::AdminClient`], the requests an operator tool makes (Java
//!   `MQAdminExt`): cluster, topics, groups and offsets, messages, ACL.
//! * [`route`] (publish and subscribe queues of a route), [`message`] (messages,
//!   compression), [`hook`] (send, check-forbidden and consume hooks), [`error`],
//!   `service_state` (created, running, shut down).
//! * [`trace`]: message trace records (`enableMsgTrace`) in RocketMQ's format, their
//!   batching dispatcher and the hooks that write them.
//!
//! A send flows: producer → route lookup (name server, cached 30 s) → queue selection
//! (round robin, fault avoidance) → SEND_MESSAGE_V2 to the broker's master → SendResult.
//! A push consumer flows: rebalance assigns queues → one pull task per queue
//! (PULL_MESSAGE, long polling) → process queue → listener → offsets committed to the
//! broker every 5 s.

pub mod admin;
mod api;
pub mod consumer;
pub mod error;
pub mod hook;
pub mod instance;
pub mod message;
mod processor;
pub mod producer;
pub mod route;
mod service_state;
pub mod trace;

/// The maps every send looks a name up in (topic, broker name): foldhash is several
/// times cheaper than the standard SipHash on short keys, and the names come from the
/// application and the name server, not from peers that could pick colliding keys.
pub(crate) type NameMap<V> = std::collections::HashMap<String, V, foldhash::fast::RandomState>;

pub use admin::AdminClient;
pub use api::{PullResult, PullStatus};
pub use consumer::{
    AllocateStrategy, CommonConsumerConfig, ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext, ConsumeOrderlyStatus, ConsumerConfig, LitePullConsumer,
    LitePullConsumerConfig, MessageListener, MessageSelector, MessageView, PushConsumer,
    SimpleConsumer, SimpleConsumerConfig,
};
pub use error::{ClientError, Result};
pub use instance::{ClientConfig, ClientInstance};
pub use message::{Message, MessageExt};
pub use producer::{
    LocalTransactionState, MessageQueueSelector, Producer, ProducerConfig, SendResult, SendStatus,
    TransactionListener, TransactionProducer, TransactionSendResult,
};
pub use trace::TraceConfig;
pub use vostok_remoting::auth::SessionCredentials;
pub use vostok_remoting::protocol::body::{ConsumeFromWhere, MessageModel, MessageQueue};
pub use vostok_remoting::protocol::message::sysflag::Compression;
pub use vostok_remoting::tls::{ClientTls, ClientTlsOptions};
