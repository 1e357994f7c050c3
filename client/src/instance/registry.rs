//! The producers and consumers a client instance serves, by group (Java
//! `MQClientInstance.producerTable` / `consumerTable`), and what the instance calls on
//! them: [`ProducerInner`] (Java `MQProducerInner`) and [`ConsumerInner`] (Java
//! `MQConsumerInner`). The last group to leave shuts the instance down.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use tracing::debug;
use vostok_remoting::protocol::body::{ConsumerData, MessageQueue};
use vostok_remoting::protocol::header::{
    CheckTransactionStateRequestHeader, UnregisterClientRequestHeader,
};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic::CLIENT_INNER_PRODUCER_GROUP;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::BoxFuture;

use super::ClientInstance;
use crate::api;
use crate::error::{ClientError, Result};
use crate::route::TopicPublishInfo;

/// What the instance needs from a producer.
pub(crate) trait ProducerInner: Send + Sync {
    fn group(&self) -> &str;
    fn publish_topics(&self) -> Vec<String>;
    fn update_publish_info(&self, topic: &str, info: Arc<TopicPublishInfo>);
    /// CHECK_TRANSACTION_STATE from `broker_addr` about `msg`.
    fn check_transaction_state(
        &self,
        broker_addr: String,
        msg: MessageExt,
        header: CheckTransactionStateRequestHeader,
    );
}

/// What the instance needs from a consumer.
pub(crate) trait ConsumerInner: Send + Sync {
    fn group(&self) -> &str;
    fn consumer_data(&self) -> ConsumerData;
    fn subscribed_topics(&self) -> Vec<String>;
    fn update_subscribe_info(&self, topic: &str, queues: Vec<MessageQueue>);
    /// Takes the queues allocated to this member and drops the others; by `Arc`, as
    /// the pull tasks it starts keep the consumer.
    fn do_rebalance(self: Arc<Self>) -> BoxFuture<'static, ()>;
    /// The offset persist timer: UPDATE_CONSUMER_OFFSET (or the local file).
    fn persist_offsets(&self) -> BoxFuture<'_, ()>;
    /// GET_CONSUMER_RUNNING_INFO body.
    fn running_info(&self) -> serde_json::Value;
    /// CONSUME_MESSAGE_DIRECTLY: runs the listener on `msg`, returns the result body.
    fn consume_message_directly(
        &self,
        msg: MessageExt,
        broker_name: Option<String>,
    ) -> BoxFuture<'_, serde_json::Value>;
    /// RESET_CONSUMER_CLIENT_OFFSET: restart the listed queues of `topic` (namespaced)
    /// from the given offsets.
    fn reset_offset(
        self: Arc<Self>,
        topic: String,
        offsets: HashMap<MessageQueue, i64>,
    ) -> BoxFuture<'static, ()>;
    /// GET_CONSUMER_STATUS_FROM_CLIENT: the offsets held for `topic` (every topic when
    /// empty).
    fn offset_table(&self, topic: &str) -> BTreeMap<MessageQueue, i64>;
}

/// Producer and consumer groups of one instance (namespaced names).
#[derive(Default)]
pub(super) struct Registry {
    producers: RwLock<HashMap<String, Arc<dyn ProducerInner>>>,
    consumers: RwLock<HashMap<String, Arc<dyn ConsumerInner>>>,
}

impl Registry {
    /// The producers, copied out of the lock.
    pub(super) fn producers(&self) -> Vec<Arc<dyn ProducerInner>> {
        self.producers.read_locked().values().cloned().collect()
    }

    /// The consumers, copied out of the lock.
    pub(super) fn consumers(&self) -> Vec<Arc<dyn ConsumerInner>> {
        self.consumers.read_locked().values().cloned().collect()
    }

    /// True when only the client's own inner producer (consumer send-back) is left.
    fn is_unused(&self) -> bool {
        self.producers
            .read_locked()
            .keys()
            .all(|g| g == CLIENT_INNER_PRODUCER_GROUP)
            && self.consumers.read_locked().is_empty()
    }
}

impl ClientInstance {
    pub(crate) fn register_producer(&self, producer: Arc<dyn ProducerInner>) -> Result<()> {
        let mut producers = self.registry.producers.write_locked();
        let group = producer.group().to_owned();
        if producers.contains_key(&group) {
            return Err(ClientError::DuplicateGroup(group));
        }
        producers.insert(group, producer);
        Ok(())
    }

    pub(crate) fn register_consumer(&self, consumer: Arc<dyn ConsumerInner>) -> Result<()> {
        let mut consumers = self.registry.consumers.write_locked();
        let group = consumer.group().to_owned();
        if consumers.contains_key(&group) {
            return Err(ClientError::DuplicateGroup(group));
        }
        consumers.insert(group, consumer);
        Ok(())
    }

    pub(crate) fn find_producer(&self, group: &str) -> Option<Arc<dyn ProducerInner>> {
        self.registry.producers.read_locked().get(group).cloned()
    }

    pub(crate) fn find_consumer(&self, group: &str) -> Option<Arc<dyn ConsumerInner>> {
        self.registry.consumers.read_locked().get(group).cloned()
    }

    /// Removes a producer group, tells every broker, and shuts the instance down when
    /// nothing uses it any more.
    pub(crate) async fn unregister_producer(&self, group: &str) {
        let removed = self
            .registry
            .producers
            .write_locked()
            .remove(group)
            .is_some();
        if removed {
            self.unregister_client(Some(group), None).await;
        }
        self.shutdown_if_unused().await;
    }

    pub(crate) async fn unregister_consumer(&self, group: &str) {
        let removed = self
            .registry
            .consumers
            .write_locked()
            .remove(group)
            .is_some();
        if removed {
            self.unregister_client(None, Some(group)).await;
        }
        self.shutdown_if_unused().await;
    }

    async fn unregister_client(&self, producer_group: Option<&str>, consumer_group: Option<&str>) {
        let header = UnregisterClientRequestHeader {
            client_id: self.client_id.clone(),
            producer_group: producer_group.map(str::to_owned),
            consumer_group: consumer_group.map(str::to_owned),
        };
        for addr in self.routes.all_broker_addrs(false) {
            if let Err(e) =
                api::unregister_client(&self.remoting, &addr, &header, self.api_timeout()).await
            {
                debug!(broker = %addr, error = %e, "unregister client failed");
            }
        }
    }

    async fn shutdown_if_unused(&self) {
        if self.registry.is_unused() {
            self.shutdown().await;
        }
    }
}
