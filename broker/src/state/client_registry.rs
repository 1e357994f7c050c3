//! Connected producers and consumers by group (`ConsumerManager`, `ProducerManager`).
//!
//! Heartbeats register a client's channel in its groups, with the consumer's
//! subscriptions. A closed channel leaves every group at once; a channel silent for
//! `channelExpiredTimeout` is dropped by the housekeeping scan. Methods that change a
//! consumer group's membership return the groups to notify (NOTIFY_CONSUMER_IDS_CHANGED).

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData,
};
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::{Channel, LanguageCode};

/// One client connection in a group.
#[derive(Debug, Clone)]
pub struct ClientChannelInfo {
    pub channel: Channel,
    pub client_id: String,
    pub language: LanguageCode,
    pub version: i32,
    pub last_update: Instant,
}

/// A consumer group as heartbeats describe it.
#[derive(Debug, Clone)]
pub struct ConsumerGroupInfo {
    pub channels: HashMap<u64, ClientChannelInfo>,
    pub subscriptions: HashMap<String, SubscriptionData>,
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
}

impl ConsumerGroupInfo {
    /// Client ids of the live channels, sorted and unique.
    pub fn client_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .channels
            .values()
            .map(|c| c.client_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

/// What a consumer heartbeat registers.
pub struct ConsumerRegistration {
    pub group: String,
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    pub subscriptions: Vec<SubscriptionData>,
}

#[derive(Default)]
pub struct ClientRegistry {
    consumers: RwLock<HashMap<String, ConsumerGroupInfo>>,
    producers: RwLock<HashMap<String, HashMap<u64, ClientChannelInfo>>>,
}

impl ClientRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers or refreshes a consumer channel and its subscriptions. Returns true when
    /// the group's set of client ids changed.
    pub fn register_consumer(&self, info: ClientChannelInfo, reg: ConsumerRegistration) -> bool {
        let mut consumers = self.consumers.write_locked();
        let group = consumers
            .entry(reg.group.clone())
            .or_insert_with(|| ConsumerGroupInfo {
                channels: HashMap::new(),
                subscriptions: HashMap::new(),
                consume_type: reg.consume_type,
                message_model: reg.message_model,
                consume_from_where: reg.consume_from_where,
            });
        group.consume_type = reg.consume_type;
        group.message_model = reg.message_model;
        group.consume_from_where = reg.consume_from_where;
        let before = group.client_ids();
        group.channels.insert(info.channel.id(), info);
        // Keep the newest version of each subscription; drop topics no longer subscribed.
        let mut fresh: HashMap<String, SubscriptionData> = HashMap::new();
        for sub in reg.subscriptions {
            match group.subscriptions.get(&sub.topic) {
                Some(old) if old.sub_version > sub.sub_version => {
                    fresh.insert(sub.topic.clone(), old.clone());
                }
                _ => {
                    fresh.insert(sub.topic.clone(), sub);
                }
            }
        }
        group.subscriptions = fresh;
        before != group.client_ids()
    }

    /// Removes a channel from a consumer group; true when the group's ids changed.
    pub fn unregister_consumer(&self, group: &str, channel: &Channel) -> bool {
        let mut consumers = self.consumers.write_locked();
        let Some(info) = consumers.get_mut(group) else {
            return false;
        };
        let before = info.client_ids();
        info.channels.remove(&channel.id());
        let changed = before != info.client_ids();
        if info.channels.is_empty() {
            consumers.remove(group);
        }
        changed
    }

    pub fn register_producer(&self, group: &str, info: ClientChannelInfo) {
        self.producers
            .write_locked()
            .entry(group.to_owned())
            .or_default()
            .insert(info.channel.id(), info);
    }

    pub fn unregister_producer(&self, group: &str, channel: &Channel) {
        let mut producers = self.producers.write_locked();
        if let Some(channels) = producers.get_mut(group) {
            channels.remove(&channel.id());
            if channels.is_empty() {
                producers.remove(group);
            }
        }
    }

    pub fn consumer_group(&self, group: &str) -> Option<ConsumerGroupInfo> {
        self.consumers.read_locked().get(group).cloned()
    }

    /// The online groups subscribing to `topic` (Apache's `queryTopicConsumeByWho`).
    pub fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        self.consumers
            .read_locked()
            .iter()
            .filter(|(_, g)| g.subscriptions.contains_key(topic))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The online clustering groups subscribing to `topic`: those whose progress the
    /// broker keeps (broadcasting consumers keep theirs themselves).
    pub fn clustering_groups_subscribing(&self, topic: &str) -> Vec<String> {
        self.consumers
            .read_locked()
            .iter()
            .filter(|(_, g)| {
                g.message_model == MessageModel::Clustering && g.subscriptions.contains_key(topic)
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Every online consumer group, cloned (admin listings, metrics).
    pub fn consumer_groups(&self) -> Vec<(String, ConsumerGroupInfo)> {
        self.consumers
            .read_locked()
            .iter()
            .map(|(g, info)| (g.clone(), info.clone()))
            .collect()
    }

    /// Every connected application (the operators' "connected clients" list), producers
    /// first, sorted by group and client id.
    pub fn connected_clients(&self) -> Vec<vostok_remoting::protocol::body::ConnectedClient> {
        use vostok_remoting::protocol::body::ConnectedClient;
        let row =
            |role: &str, group: &str, c: &ClientChannelInfo, consume_type: &str| ConnectedClient {
                role: role.to_owned(),
                group: group.to_owned(),
                client_id: c.client_id.clone(),
                addr: c.channel.peer_addr().to_string(),
                language: c.language.name().to_owned(),
                version: c.version,
                last_heartbeat_ms_ago: c.last_update.elapsed().as_millis() as i64,
                consume_type: consume_type.to_owned(),
            };
        let mut out = Vec::new();
        for (group, clients) in self.producer_groups() {
            out.extend(clients.iter().map(|c| row("producer", &group, c, "")));
        }
        for (group, info) in self.consumer_groups() {
            let mode = match info.consume_type {
                ConsumeType::ConsumeActively => "pull",
                ConsumeType::ConsumePassively => "push",
                ConsumeType::ConsumePop => "pop",
            };
            out.extend(
                info.channels
                    .values()
                    .map(|c| row("consumer", &group, c, mode)),
            );
        }
        out.sort_by(|a, b| {
            (a.role.as_str() != "producer", &a.group, &a.client_id).cmp(&(
                b.role.as_str() != "producer",
                &b.group,
                &b.client_id,
            ))
        });
        out
    }

    /// Every online producer, by group.
    pub fn producer_groups(&self) -> Vec<(String, Vec<ClientChannelInfo>)> {
        self.producers
            .read_locked()
            .iter()
            .map(|(g, infos)| (g.clone(), infos.values().cloned().collect()))
            .collect()
    }

    pub fn consumer_ids(&self, group: &str) -> Vec<String> {
        self.consumers
            .read_locked()
            .get(group)
            .map(ConsumerGroupInfo::client_ids)
            .unwrap_or_default()
    }

    pub fn consumer_channels(&self, group: &str) -> Vec<Channel> {
        self.consumers
            .read_locked()
            .get(group)
            .map(|g| g.channels.values().map(|c| c.channel.clone()).collect())
            .unwrap_or_default()
    }

    pub fn producer_connections(&self, group: &str) -> Vec<ClientChannelInfo> {
        self.producers
            .read_locked()
            .get(group)
            .map(|g| g.values().cloned().collect())
            .unwrap_or_default()
    }

    /// A live channel of a producer group, for transaction check-backs.
    pub fn producer_channel(&self, group: &str) -> Option<Channel> {
        let producers = self.producers.read_locked();
        let live: Vec<&ClientChannelInfo> = producers
            .get(group)?
            .values()
            .filter(|c| !c.channel.is_closed())
            .collect();
        if live.is_empty() {
            return None;
        }
        Some(live[rand::random_range(0..live.len())].channel.clone())
    }

    /// The newest live connection of a producer of client `client_id` (whatever its
    /// group), where replies to its requests are pushed.
    pub fn producer_channel_of_client(&self, client_id: &str) -> Option<Channel> {
        self.producers
            .read_locked()
            .values()
            .flat_map(HashMap::values)
            .filter(|c| c.client_id == client_id && !c.channel.is_closed())
            .max_by_key(|c| c.last_update)
            .map(|c| c.channel.clone())
    }

    /// Drops a closed channel from every group; returns the consumer groups whose ids changed.
    pub fn on_channel_closed(&self, channel: &Channel) -> Vec<String> {
        self.remove_channels(|c| c.channel.id() == channel.id())
    }

    /// Drops channels not refreshed within `timeout`, closing them; returns the consumer
    /// groups whose ids changed.
    pub fn scan_expired(&self, now: Instant, timeout: Duration) -> Vec<String> {
        self.remove_channels(|c| {
            let expired = now.saturating_duration_since(c.last_update) > timeout;
            if expired {
                tracing::info!(client = %c.client_id, peer = %c.channel.peer_addr(), "client channel expired");
                c.channel.close();
            }
            expired
        })
    }

    fn remove_channels(&self, mut doomed: impl FnMut(&ClientChannelInfo) -> bool) -> Vec<String> {
        let mut changed = Vec::new();
        {
            let mut consumers = self.consumers.write_locked();
            consumers.retain(|name, group| {
                let before = group.client_ids();
                group.channels.retain(|_, c| !doomed(c));
                if before != group.client_ids() {
                    changed.push(name.clone());
                }
                !group.channels.is_empty()
            });
        }
        let mut producers = self.producers.write_locked();
        producers.retain(|_, channels| {
            channels.retain(|_, c| !doomed(c));
            !channels.is_empty()
        });
        changed
    }
}
