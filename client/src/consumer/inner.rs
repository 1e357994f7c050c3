//! What the client instance calls on a registered consumer (Java `MQConsumerInner`):
//! the consumer core answers for both kinds, and hands what differs to its
//! [`ConsumerKind`](super::core::ConsumerKind).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use vostok_remoting::protocol::body::{ConsumerData, MessageQueue};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::BoxFuture;

use super::core::ConsumerCore;
use super::rebalance;
use crate::instance::registry::ConsumerInner;

impl ConsumerInner for ConsumerCore {
    fn group(&self) -> &str {
        &self.group
    }

    fn consumer_data(&self) -> ConsumerData {
        ConsumerCore::consumer_data(self)
    }

    fn subscribed_topics(&self) -> Vec<String> {
        ConsumerCore::subscribed_topics(self)
    }

    fn update_subscribe_info(&self, topic: &str, queues: Vec<MessageQueue>) {
        if self.subscription(topic).is_some() {
            self.topic_queues
                .write_locked()
                .insert(topic.to_owned(), queues);
        }
    }

    fn do_rebalance(self: Arc<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if self.state.is_running() {
                rebalance::do_rebalance(&self).await;
            }
        })
    }

    fn persist_offsets(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mqs = self.assigned_queues();
            self.offsets.persist_all(Some(&mqs)).await;
        })
    }

    fn running_info(&self) -> serde_json::Value {
        ConsumerCore::running_info(self)
    }

    fn consume_message_directly(
        &self,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'_, serde_json::Value> {
        self.kind.consume_message_directly(self, msg, broker_name)
    }

    fn reset_offset(
        self: Arc<Self>,
        topic: String,
        offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'static, ()> {
        self.kind.clone().reset_offset(self, topic, offsets)
    }

    fn offset_table(&self, topic: &str) -> BTreeMap<MessageQueue, i64> {
        ConsumerCore::offset_table(self, topic)
    }
}
