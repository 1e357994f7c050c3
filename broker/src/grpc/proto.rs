//! The `apache.rocketmq.v2` messages and the `MessagingService` server trait (and a
//! client, for tests), generated from `broker/proto/apache/rocketmq/v2/*.proto`
//! (apache/rocketmq-apis 2.1.2) by `broker/proto/generate`: regenerate, never edit.
#![allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]

include!("proto/apache.rocketmq.v2.rs");
