//! Vostok's broker: RocketMQ's broker requests over the remoting layer and the store.
//!
//! Module map:
//! * [`broker`]: shared state, start-up and shutdown; [`config`]: `broker.conf`.
//! * [`processor`]: one function per request code (send, pull, consumer management,
//!   client management, queries, transactions, administration).
//! * Tables: [`topic`] (topics.json), [`subscription`] (subscriptionGroup.json),
//!   [`offset`] (consumerOffset.json), [`client_registry`] (connected producers and
//!   consumers), [`rebalance_lock`] (orderly consumers' queue locks).
//! * Services: [`long_polling`] (held pulls), [`registration`] (name servers),
//!   [`schedule`] (delay levels), [`timer`] (arbitrary delays), [`transaction`]
//!   (half messages and check-back).
//!
//! Request flow: the remoting server hands each request to
//! [`processor::BrokerProcessor`], which decodes the typed header, checks permissions
//! and names, calls the store and maps the store's status to a RocketMQ response code.
//! The store's dispatcher reports each new message to [`long_polling`], which wakes the
//! pulls waiting for that queue.

pub mod broker;
pub mod cli;
pub mod client_registry;
pub mod config;
pub mod error;
pub mod long_polling;
pub mod offset;
pub mod processor;
pub mod rebalance_lock;
pub mod registration;
pub mod schedule;
pub mod stats;
pub mod subscription;
pub mod timer;
pub mod topic;
pub mod transaction;

pub use broker::{Broker, BrokerHandle};
pub use config::{BrokerConfig, BrokerRole};
pub use error::BrokerError;
