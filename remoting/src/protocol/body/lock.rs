//! LOCK_BATCH_MQ and UNLOCK_BATCH_MQ bodies (docs/commands.md#queue-locks).

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A queue of a topic on one broker. Ordered as Java's `MessageQueue.compareTo`:
/// topic, broker name, queue id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    pub topic: String,
    pub broker_name: String,
    pub queue_id: i32,
}

impl MessageQueue {
    pub fn new(topic: impl Into<String>, broker_name: impl Into<String>, queue_id: i32) -> Self {
        MessageQueue {
            topic: topic.into(),
            broker_name: broker_name.into(),
            queue_id,
        }
    }
}

impl fmt::Display for MessageQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MessageQueue [topic={}, brokerName={}, queueId={}]",
            self.topic, self.broker_name, self.queue_id
        )
    }
}

/// Body of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    pub client_id: String,
    pub consumer_group: String,
    #[serde(default)]
    pub mq_set: BTreeSet<MessageQueue>,
    #[serde(default)]
    pub only_this_broker: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockBatchResponseBody {
    #[serde(rename = "lockOKMQSet", default)]
    pub lock_ok_mq_set: BTreeSet<MessageQueue>,
}
