//! Answers of Vostok's operations requests (docs/commands.md#vostok-operations), JSON.

use serde::{Deserialize, Serialize};

/// VOSTOK_MESSAGE_STATUS answer: every stored message that matched, and what the
/// broker cannot know.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageStatusBody {
    pub broker_name: String,
    pub broker_addr: String,
    pub messages: Vec<MessageStatus>,
    /// What cannot be known from this broker, in plain words.
    pub unknowable: Vec<String>,
}

/// One stored message and its fate per group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageStatus {
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub commit_log_offset: i64,
    /// Offset message id.
    pub msg_id: String,
    /// The producer's unique id (`UNIQ_KEY`), empty when absent.
    pub uniq_key: String,
    pub keys: String,
    pub tags: String,
    pub store_timestamp: i64,
    pub born_timestamp: i64,
    pub body_size: i32,
    /// Removed by an operator: no group receives it.
    pub removed: bool,
    pub groups: Vec<GroupDelivery>,
}

/// One subscribed group's view of a message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupDelivery {
    pub group: String,
    /// The online subscription's expression (`TAG` or `SQL92`), empty when no
    /// consumer of the group is online.
    pub expression: String,
    pub expression_type: String,
    /// `match`, `filtered` or `unknown`.
    pub filter: String,
    /// `consumed`, `in-flight`, `waiting`, `filtered`, `removed`, `dead-lettered`.
    pub state: String,
    /// The group's committed offset on the queue, -1 when none.
    pub committed_offset: i64,
    /// Copies in the group's retry topic (each one a redelivery).
    pub retries: i32,
    /// Highest reconsume count seen among the copies.
    pub reconsume_times: i32,
    /// Committed offset past the newest retry copy: the last redelivery was consumed.
    pub retry_consumed: bool,
    /// The message is in the group's DLQ.
    pub in_dlq: bool,
    /// The DLQ copy's offset message id, for a resend.
    pub dlq_msg_id: String,
    /// A sentence saying the above in words.
    pub explanation: String,
}

/// VOSTOK_BROWSE_MESSAGES answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowseBody {
    pub messages: Vec<BrowsedMessage>,
}

/// A waiting message, not consumed by browsing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowsedMessage {
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub msg_id: String,
    pub uniq_key: String,
    pub keys: String,
    pub tags: String,
    pub store_timestamp: i64,
    pub reconsume_times: i32,
    pub body_size: i32,
    /// The body's first bytes as text (lossy UTF-8).
    pub body_preview: String,
}

/// VOSTOK_GET_GROUP_LAG answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupLagBody {
    pub group: String,
    /// Broker time of the figures, ms.
    pub now: i64,
    pub queues: Vec<QueueLagEntry>,
    /// Messages in the group's DLQ.
    pub dlq_messages: i64,
}

/// One queue's lag.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueLagEntry {
    pub topic: String,
    pub queue_id: i32,
    pub broker_offset: i64,
    /// -1 when the group never committed here.
    pub consumer_offset: i64,
    pub lag: i64,
    /// Store time of the oldest unconsumed message, 0 when nothing is behind.
    pub oldest_store_timestamp: i64,
    pub latency_ms: i64,
    pub inflight: i64,
}

/// VOSTOK_GET_CONNECTED_CLIENTS answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectedClientsBody {
    pub clients: Vec<ConnectedClient>,
}

/// One connected application.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectedClient {
    /// `producer` or `consumer`.
    pub role: String,
    pub group: String,
    pub client_id: String,
    pub addr: String,
    pub language: String,
    pub version: i32,
    /// Milliseconds since its last heartbeat.
    pub last_heartbeat_ms_ago: i64,
    /// Consumers: `push`, `pull` or `pop`; empty for producers.
    pub consume_type: String,
}

/// VOSTOK_REMOVE_MESSAGE and VOSTOK_RESEND_DLQ_MESSAGE answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationResultBody {
    pub msg_id: String,
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
}
