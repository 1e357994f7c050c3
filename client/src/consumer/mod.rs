//! Consumers: [`PushConsumer`] (Java `DefaultMQPushConsumer`) and [`LitePullConsumer`]
//! (Java `DefaultLitePullConsumer`), both built on one consumer core; and
//! [`SimpleConsumer`] (the 5.x clients' POP consumer), which is not.
//!
//! * [`config`]: [`ConsumerConfig`] and [`LitePullConsumerConfig`], sharing
//!   [`CommonConsumerConfig`].
//! * [`listener`]: what a push consumer's application implements.
//! * `subscription`: [`MessageSelector`] and what it means on the broker and the client.
//! * `core`: the consumer core (subscriptions, assigned queues, offsets, start offsets)
//!   and `ConsumerKind`, what differs between push and lite pull.
//! * `inner`: the core as the client instance sees it (Java `MQConsumerInner`).
//! * `rebalance`: which queues this member consumes (every 20 s and on
//!   NOTIFY_CONSUMER_IDS_CHANGED), with the strategies of [`allocate`].
//! * `pull`: one long-polling pull task per assigned queue.
//! * `process_queue`: messages between pull and consumption, flow control.
//! * `offset_store`: offsets on the broker (clustering) or in a file (broadcasting).
//! * `offset_table`: the queue → offset tables of RESET_CONSUMER_CLIENT_OFFSET and
//!   GET_CONSUMER_STATUS_FROM_CLIENT.
//! * `send_back`: failed messages back to the broker for a retry.
//! * `check_client`: SQL92 subscriptions checked with a broker before starting.
//! * `running_info`: GET_CONSUMER_RUNNING_INFO.
//! * [`push`] and [`lite_pull`]: the two consumer kinds.
//! * [`simple`]: the simple (POP) consumer: receive, ack, change invisible duration.
//! * [`wildcard`]: AMQP-style routing keys and binding keys.

pub mod allocate;
mod check_client;
pub mod config;
pub(crate) mod core;
mod inner;
pub mod listener;
pub mod lite_pull;
pub(crate) mod offset_store;
pub(crate) mod offset_table;
pub(crate) mod process_queue;
pub(crate) mod pull;
pub mod push;
pub(crate) mod rebalance;
mod running_info;
mod send_back;
pub mod simple;
pub(crate) mod subscription;
pub mod wildcard;

pub use allocate::{
    AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueConsistentHash, AllocateStrategy,
};
pub use config::{CommonConsumerConfig, ConsumerConfig, LitePullConsumerConfig};
pub use listener::{
    ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus, ConsumeOrderlyContext,
    ConsumeOrderlyStatus, MessageListener, MessageListenerConcurrently, MessageListenerOrderly,
};
pub use lite_pull::LitePullConsumer;
pub use push::PushConsumer;
pub use simple::{MessageView, SimpleConsumer, SimpleConsumerConfig};
pub use subscription::MessageSelector;
pub use wildcard::{BindingKey, RoutingKeyError};
