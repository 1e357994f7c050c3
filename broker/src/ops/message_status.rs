//! "Where is my message" (docs/operations.md#message-status), for VOSTOK_MESSAGE_STATUS
//! and the console's message search: for a message found by
//! id or key, where it is stored and, for each group that consumes its topic here,
//! whether the group's filter takes it, whether it was consumed, retried,
//! dead-lettered, or removed, from this broker's own tables.
//!
//! What a group did is read from what it left here: its committed offset (past the
//! message: consumed), a live POP checkpoint holding it (in flight), copies of it in
//! `%RETRY%group` (each a redelivery; found by its unique id in the index) and in
//! `%DLQ%group`. The filter is the subscription of the group's online consumers;
//! without one online it is not known.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use vostok_remoting::protocol::body::{GroupDelivery, MessageStatus, MessageStatusBody};
use vostok_remoting::protocol::filter::{is_tag_type, matches_tags_code, tags_code};
use vostok_remoting::protocol::message::id::{create_offset_msg_id, decode_offset_msg_id};
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;

use super::{Refusal, Refused};
use vostok_store::MessageStore;

use crate::state::pop::PopState;
use crate::state::{Broker, Consumers, Storage};

/// Most messages one lookup by key reports.
const MAX_FOUND: i32 = 32;

/// What cannot be known from the broker, said once per answer.
const UNKNOWABLE: [&str; 4] = [
    "Whether a consumer's code processed a message successfully: the broker sees only \
     the committed offset (push and pull consumers commit the lowest unprocessed offset, \
     every few seconds) or the POP ack.",
    "Broadcasting consumers keep their offsets on the client: the broker shows no \
     progress for them.",
    "The filter of a group none of whose consumers is online: subscriptions live in \
     heartbeats, not on disk.",
    "Messages retention deleted, and retries older than the index's reach.",
];

/// The messages to look for: by id (offset or unique), by key, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FindMessage {
    pub(crate) topic: String,
    pub(crate) msg_id: Option<String>,
    pub(crate) key: Option<String>,
}

/// What a lookup reads: the broker's name and address (for the answer), the storage,
/// the consumer tables and the POP checkpoints.
#[derive(Clone, Copy)]
pub(crate) struct Lookup<'a> {
    pub(crate) broker_name: &'a str,
    pub(crate) broker_addr: SocketAddr,
    pub(crate) storage: &'a Storage,
    pub(crate) consumers: &'a Consumers,
    pub(crate) pop: &'a PopState,
}

impl<'a> Lookup<'a> {
    /// The broker's tables a lookup reads.
    pub(crate) fn of(b: &'a Broker) -> Self {
        Lookup {
            broker_name: &b.config.broker_name,
            broker_addr: b.broker_addr,
            storage: &b.storage,
            consumers: &b.consumers,
            pop: &b.pop,
        }
    }
}

/// The status of every message of the topic with the id or key asked for; a request
/// with neither is refused.
pub(crate) fn message_status(
    tables: Lookup<'_>,
    request: &FindMessage,
) -> Result<MessageStatusBody, Refusal> {
    let msg_id = request.msg_id.as_deref().filter(|s| !s.is_empty());
    let key = request.key.as_deref().filter(|s| !s.is_empty());
    if msg_id.is_none() && key.is_none() {
        return Err(Refusal::new(Refused::InvalidParameter, "give msgId or key"));
    }
    Ok(Status(tables).find(&request.topic, msg_id, key))
}

/// Groups that consume `topic_name` here: committed offsets or online subscriptions.
pub(crate) fn groups_of_topic(consumers: &Consumers, topic_name: &str) -> BTreeSet<String> {
    let mut groups: BTreeSet<String> = consumers
        .offsets
        .topic_groups()
        .into_iter()
        .filter(|(t, _)| t == topic_name)
        .map(|(_, g)| g)
        .collect();
    for (group, info) in consumers.clients.consumer_groups() {
        if info.subscriptions.contains_key(topic_name) {
            groups.insert(group);
        }
    }
    groups
}

/// The messages of `topic_name` with message id `id`: an offset id names a commitlog
/// position of this broker; a unique (client) id is indexed as a key.
pub(crate) fn messages_by_id(store: &MessageStore, topic_name: &str, id: &str) -> Vec<MessageExt> {
    if let Ok((_, offset)) = decode_offset_msg_id(id) {
        if let Some(m) = store.look_message_by_offset(offset) {
            if m.topic == topic_name {
                return vec![m];
            }
        }
    }
    find_by_key(store, topic_name, id)
}

fn find_by_key(store: &MessageStore, topic_name: &str, key: &str) -> Vec<MessageExt> {
    store
        .query_message(topic_name, key, MAX_FOUND, 0, i64::MAX)
        .messages
        .iter()
        .filter_map(|raw| MessageExt::decode(raw, false).ok())
        .collect()
}

/// The tables one lookup reads.
struct Status<'a>(Lookup<'a>);

impl Status<'_> {
    fn find(&self, topic_name: &str, msg_id: Option<&str>, key: Option<&str>) -> MessageStatusBody {
        let mut found: Vec<MessageExt> = Vec::new();
        if let Some(id) = msg_id.filter(|s| !s.is_empty()) {
            found.extend(messages_by_id(&self.0.storage.store, topic_name, id));
        }
        if let Some(k) = key.filter(|s| !s.is_empty()) {
            for m in self.find_by_key(topic_name, k) {
                if !found
                    .iter()
                    .any(|f| f.commit_log_offset == m.commit_log_offset)
                {
                    found.push(m);
                }
            }
        }
        found.sort_by_key(|m| (m.queue_id, m.queue_offset));
        MessageStatusBody {
            broker_name: self.0.broker_name.to_owned(),
            broker_addr: self.0.broker_addr.to_string(),
            messages: found.iter().map(|m| self.status_of(m)).collect(),
            unknowable: UNKNOWABLE.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// The messages of `topic_name` with id `id`: an offset message id (a commitlog
    /// position of this broker) or a unique (client) id, which is indexed as a key.
    fn find_by_key(&self, topic_name: &str, key: &str) -> Vec<MessageExt> {
        find_by_key(&self.0.storage.store, topic_name, key)
    }

    fn status_of(&self, m: &MessageExt) -> MessageStatus {
        let removed = self
            .0
            .storage
            .removals
            .is_removed(&m.topic, m.queue_id, m.queue_offset);
        let uniq = m
            .properties
            .get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            .unwrap_or("")
            .to_owned();
        let groups = groups_of_topic(self.0.consumers, &m.topic)
            .into_iter()
            .map(|g| self.delivery(m, &uniq, removed, g))
            .collect();
        MessageStatus {
            topic: m.topic.clone(),
            queue_id: m.queue_id,
            queue_offset: m.queue_offset,
            commit_log_offset: m.commit_log_offset,
            msg_id: create_offset_msg_id(m.store_host, m.commit_log_offset),
            uniq_key: uniq,
            keys: m.properties.get(property::KEYS).unwrap_or("").to_owned(),
            tags: m.properties.get(property::TAGS).unwrap_or("").to_owned(),
            store_timestamp: m.store_timestamp,
            born_timestamp: m.born_timestamp,
            body_size: m.body.len() as i32,
            removed,
            groups,
        }
    }

    /// `(expression type, expression, match | filtered | unknown)` for `group`.
    fn filter_verdict(&self, m: &MessageExt, group: &str) -> (String, String, &'static str) {
        let Some(sub) = self
            .0
            .consumers
            .clients
            .consumer_group(group)
            .and_then(|info| info.subscriptions.get(&m.topic).cloned())
        else {
            return (String::new(), String::new(), "unknown");
        };
        let verdict = if is_tag_type(&sub.expression_type) {
            let code = tags_code(m.properties.get(property::TAGS));
            matches_tags_code(&sub, code)
        } else {
            match self.0.consumers.filters.get(&m.topic, group) {
                Some(data) => match &data.compiled {
                    Ok(f) => f.matches_properties(&m.properties.encode()),
                    Err(_) => false,
                },
                None => {
                    return (sub.expression_type, sub.sub_string, "unknown");
                }
            }
        };
        let word = if verdict { "match" } else { "filtered" };
        (sub.expression_type, sub.sub_string, word)
    }

    fn delivery(&self, m: &MessageExt, uniq: &str, removed: bool, group: String) -> GroupDelivery {
        let (expression_type, expression, filter) = self.filter_verdict(m, &group);
        let committed = self.0.consumers.offsets.query(&group, &m.topic, m.queue_id);
        let consumed = committed > m.queue_offset;
        let in_flight =
            self.0
                .pop
                .checkpoints()
                .holds_unacked(&m.topic, &group, m.queue_id, m.queue_offset);
        let (mut retries, mut reconsume_times, mut retry_consumed) = (0, 0, false);
        let (mut in_dlq, mut dlq_msg_id) = (false, String::new());
        if !uniq.is_empty() {
            let retry_topic = topic::retry_topic(&group);
            let mut newest: Option<MessageExt> = None;
            for copy in self.find_by_key(&retry_topic, uniq) {
                retries += 1;
                reconsume_times = reconsume_times.max(copy.reconsume_times);
                if newest
                    .as_ref()
                    .is_none_or(|n| copy.queue_offset > n.queue_offset)
                {
                    newest = Some(copy);
                }
            }
            // A redelivery still waiting out its delay level sits in the schedule topic.
            for copy in self.find_by_key(topic::SCHEDULE_TOPIC, uniq) {
                if copy.properties.get(property::REAL_TOPIC) == Some(retry_topic.as_str()) {
                    retries += 1;
                    reconsume_times = reconsume_times.max(copy.reconsume_times);
                    newest = None;
                    retry_consumed = false;
                }
            }
            if let Some(n) = newest {
                retry_consumed = self
                    .0
                    .consumers
                    .offsets
                    .query(&group, &retry_topic, n.queue_id)
                    > n.queue_offset;
            }
            if let Some(d) = self.find_by_key(&topic::dlq_topic(&group), uniq).first() {
                in_dlq = true;
                dlq_msg_id = create_offset_msg_id(d.store_host, d.commit_log_offset);
                reconsume_times = reconsume_times.max(d.reconsume_times);
            }
        }
        let (state, explanation) = if removed {
            (
                "removed",
                "removed by an operator: no consumer receives it".to_owned(),
            )
        } else if in_dlq {
            (
                "dead-lettered",
                format!(
                    "retried {retries} times, then moved to {}",
                    topic::dlq_topic(&group)
                ),
            )
        } else if filter == "filtered" {
            (
                "filtered",
                "the group's subscription does not take it: it is skipped, never delivered"
                    .to_owned(),
            )
        } else if in_flight {
            ("in-flight", "popped and not acknowledged yet".to_owned())
        } else if consumed && retries > 0 && !retry_consumed {
            (
                "retrying",
                format!("delivered, failed; {retries} redelivery copies in the retry topic, the last not consumed yet"),
            )
        } else if consumed {
            let extra = if retries > 0 {
                format!(" after {retries} redeliveries")
            } else {
                String::new()
            };
            (
                "consumed",
                format!(
                    "delivered and acknowledged{extra}: committed offset {committed} is past it"
                ),
            )
        } else {
            (
                "waiting",
                format!(
                    "not consumed yet: committed offset {} is at or before it",
                    if committed < 0 {
                        "(none)".to_owned()
                    } else {
                        committed.to_string()
                    }
                ),
            )
        };
        GroupDelivery {
            group,
            expression,
            expression_type,
            filter: filter.to_owned(),
            state: state.to_owned(),
            committed_offset: committed,
            retries,
            reconsume_times,
            retry_consumed,
            in_dlq,
            dlq_msg_id,
            explanation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::browse::tests::stored;
    use super::super::testing::broker;
    use super::*;

    fn find(topic: &str, msg_id: Option<&str>, key: Option<&str>) -> FindMessage {
        FindMessage {
            topic: topic.to_owned(),
            msg_id: msg_id.map(str::to_owned),
            key: key.map(str::to_owned),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_message_is_waiting_then_consumed_for_a_group_with_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let m = stored(b, "ops-status", 1).await.remove(0);
        let id = create_offset_msg_id(m.store_host, m.commit_log_offset);
        b.consumers
            .offsets
            .commit("ops-status-group", "ops-status", 0, 0);
        let body = message_status(Lookup::of(b), &find("ops-status", Some(&id), None)).unwrap();
        assert_eq!(body.messages.len(), 1);
        let groups = &body.messages[0].groups;
        assert_eq!(groups.len(), 1);
        assert_eq!(
            (groups[0].group.as_str(), groups[0].state.as_str()),
            ("ops-status-group", "waiting")
        );
        b.consumers
            .offsets
            .commit("ops-status-group", "ops-status", 0, 1);
        let body = message_status(Lookup::of(b), &find("ops-status", Some(&id), None)).unwrap();
        assert_eq!(body.messages[0].groups[0].state, "consumed");
        let other =
            message_status(Lookup::of(b), &find("ops-status-other", Some(&id), None)).unwrap();
        assert!(other.messages.is_empty(), "another topic's message");
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lookup_without_id_or_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let refusal = message_status(
            Lookup::of(handle.broker()),
            &find("ops-status", Some(""), None),
        )
        .unwrap_err();
        assert_eq!(refusal.kind, Refused::InvalidParameter);
        handle.shutdown().await;
    }
}
