//! Connected producers and consumers by group (`ConsumerManager`, `ProducerManager`).
//!
//! Heartbeats register a client's channel in its groups, with the consumer's
//! subscriptions. A closed channel leaves every group at once; a channel silent for
//! `channelExpiredTimeout` is dropped by the housekeeping scan. Methods that change a
//! consumer group's membership return the groups to notify (NOTIFY_CONSUMER_IDS_CHANGED).
//!
//! The registry also keeps, per client connection, how many groups it is in and how
//! many groups and topics its requests made the broker create, and refuses what
//! would pass the bounds of [`MetadataLimits`] (docs/limits.md#groups-and-topics).

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData,
};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::{Channel, LanguageCode};

use crate::config::MetadataLimits;

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

/// A registration or creation refused by a bound, with the remark for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverLimit(pub String);

/// What the broker creates on a client's behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creation {
    Group,
    Topic,
}

/// One client connection's share: the groups it is in, what it had created.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    consumer_groups: usize,
    producer_groups: usize,
    created_groups: usize,
    created_topics: usize,
}

impl Usage {
    fn is_empty(&self) -> bool {
        self.consumer_groups == 0
            && self.producer_groups == 0
            && self.created_groups == 0
            && self.created_topics == 0
    }
}

pub struct ClientRegistry {
    consumers: RwLock<HashMap<String, ConsumerGroupInfo>>,
    producers: RwLock<HashMap<String, HashMap<u64, ClientChannelInfo>>>,
    /// By channel id. Taken after `consumers` or `producers`, never before.
    usage: Mutex<HashMap<u64, Usage>>,
    limits: MetadataLimits,
}

impl ClientRegistry {
    pub fn new(limits: MetadataLimits) -> Self {
        ClientRegistry {
            consumers: RwLock::default(),
            producers: RwLock::default(),
            usage: Mutex::default(),
            limits,
        }
    }

    /// Registers or refreshes a consumer channel and its subscriptions. Returns true when
    /// the group's set of client ids changed; refused when the channel would be in more
    /// than `maxConsumerGroupNumPerClient` groups.
    pub fn register_consumer(
        &self,
        info: ClientChannelInfo,
        reg: ConsumerRegistration,
    ) -> Result<bool, OverLimit> {
        let mut consumers = self.consumers.write_locked();
        let id = info.channel.id();
        if consumers
            .get(&reg.group)
            .is_none_or(|g| !g.channels.contains_key(&id))
        {
            let mut usage = self.usage.locked();
            let usage = usage.entry(id).or_default();
            let max = self.limits.max_consumer_groups_per_client;
            if usage.consumer_groups >= max {
                return Err(OverLimit(format!(
                    "consumer group {} not registered: this client is in {} consumer groups \
                     (maxConsumerGroupNumPerClient={max})",
                    reg.group, usage.consumer_groups
                )));
            }
            usage.consumer_groups += 1;
        }
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
        Ok(before != group.client_ids())
    }

    /// Removes a channel from a consumer group; true when the group's ids changed.
    pub fn unregister_consumer(&self, group: &str, channel: &Channel) -> bool {
        let mut consumers = self.consumers.write_locked();
        let Some(info) = consumers.get_mut(group) else {
            return false;
        };
        let before = info.client_ids();
        if info.channels.remove(&channel.id()).is_some() {
            self.leave(channel.id(), |u| &mut u.consumer_groups);
        }
        let changed = before != info.client_ids();
        if info.channels.is_empty() {
            consumers.remove(group);
        }
        changed
    }

    /// Registers or refreshes a producer channel; refused when the channel would be in
    /// more than `maxProducerGroupNumPerClient` groups, or the group is new and the
    /// broker has `maxProducerGroupNum` online.
    pub fn register_producer(&self, group: &str, info: ClientChannelInfo) -> Result<(), OverLimit> {
        let mut producers = self.producers.write_locked();
        let id = info.channel.id();
        let channels = producers.get(group);
        if channels.is_none_or(|c| !c.contains_key(&id)) {
            let max = self.limits.max_producer_groups;
            if channels.is_none() && producers.len() >= max {
                return Err(OverLimit(format!(
                    "producer group {group} not registered: the broker has {} producer groups \
                     online (maxProducerGroupNum={max})",
                    producers.len()
                )));
            }
            let mut usage = self.usage.locked();
            let usage = usage.entry(id).or_default();
            let max = self.limits.max_producer_groups_per_client;
            if usage.producer_groups >= max {
                return Err(OverLimit(format!(
                    "producer group {group} not registered: this client is in {} producer groups \
                     (maxProducerGroupNumPerClient={max})",
                    usage.producer_groups
                )));
            }
            usage.producer_groups += 1;
        }
        producers
            .entry(group.to_owned())
            .or_default()
            .insert(id, info);
        Ok(())
    }

    pub fn unregister_producer(&self, group: &str, channel: &Channel) {
        let mut producers = self.producers.write_locked();
        if let Some(channels) = producers.get_mut(group) {
            if channels.remove(&channel.id()).is_some() {
                self.leave(channel.id(), |u| &mut u.producer_groups);
            }
            if channels.is_empty() {
                producers.remove(group);
            }
        }
    }

    /// Counts one more group or topic created for the client on `channel`, or refuses
    /// when it had `maxAutoCreate*NumPerClient` created. A reservation whose creation
    /// does not happen is given back with [`ClientRegistry::release_creation`]. A
    /// closed channel (a client gone, or a request without a connection of its own)
    /// is not counted: nothing would forget its count. (A channel is marked closed
    /// before [`ClientRegistry::on_channel_closed`] runs, so checking under the lock
    /// that call takes leaves no count behind.)
    pub fn reserve_creation(&self, channel: &Channel, what: Creation) -> Result<(), OverLimit> {
        let mut usage = self.usage.locked();
        if channel.is_closed() {
            return Ok(());
        }
        let usage = usage.entry(channel.id()).or_default();
        let (count, max, noun, key) = match what {
            Creation::Group => (
                &mut usage.created_groups,
                self.limits.max_auto_created_groups_per_client,
                "subscription groups",
                "maxAutoCreateGroupNumPerClient",
            ),
            Creation::Topic => (
                &mut usage.created_topics,
                self.limits.max_auto_created_topics_per_client,
                "topics",
                "maxAutoCreateTopicNumPerClient",
            ),
        };
        if *count >= max {
            return Err(OverLimit(format!(
                "this client had {count} {noun} created ({key}={max})"
            )));
        }
        *count += 1;
        Ok(())
    }

    pub fn release_creation(&self, channel: &Channel, what: Creation) {
        self.leave(channel.id(), |u| match what {
            Creation::Group => &mut u.created_groups,
            Creation::Topic => &mut u.created_topics,
        });
    }

    /// Takes one from a count of the channel's usage, forgetting a channel left with
    /// nothing.
    fn leave(&self, id: u64, count: impl FnOnce(&mut Usage) -> &mut usize) {
        let mut usage = self.usage.locked();
        if let Some(u) = usage.get_mut(&id) {
            let c = count(u);
            *c = c.saturating_sub(1);
            if u.is_empty() {
                usage.remove(&id);
            }
        }
    }

    pub fn consumer_group(&self, group: &str) -> Option<ConsumerGroupInfo> {
        self.consumers.read_locked().get(group).cloned()
    }

    /// What a pull needs of an online group, without copying the group: its message
    /// model and its subscription to `topic` (`None` inside when it has none). Every
    /// pull asks this, twice for a held one, and [`Self::consumer_group`] copies every
    /// member's channel and client id (O(members) per pull).
    pub fn consumer_subscription(
        &self,
        group: &str,
        topic: &str,
    ) -> Option<(MessageModel, Option<SubscriptionData>)> {
        let consumers = self.consumers.read_locked();
        let info = consumers.get(group)?;
        Some((info.message_model, info.subscriptions.get(topic).cloned()))
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

    /// Drops a closed channel from every group, and its counts; returns the consumer
    /// groups whose ids changed.
    pub fn on_channel_closed(&self, channel: &Channel) -> Vec<String> {
        let changed = self.remove_channels(|c| c.channel.id() == channel.id());
        self.usage.locked().remove(&channel.id());
        changed
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
                group.channels.retain(|&id, c| {
                    let gone = doomed(c);
                    if gone {
                        self.leave(id, |u| &mut u.consumer_groups);
                    }
                    !gone
                });
                if before != group.client_ids() {
                    changed.push(name.clone());
                }
                !group.channels.is_empty()
            });
        }
        let mut producers = self.producers.write_locked();
        producers.retain(|_, channels| {
            channels.retain(|&id, c| {
                let gone = doomed(c);
                if gone {
                    self.leave(id, |u| &mut u.producer_groups);
                }
                !gone
            });
            !channels.is_empty()
        });
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> ClientChannelInfo {
        let addr = "127.0.0.1:1".parse().unwrap();
        let channel = Channel::detached(addr, addr, 1).0;
        ClientChannelInfo {
            client_id: format!("client-{}", channel.id()),
            channel,
            language: LanguageCode::Java,
            version: 0,
            last_update: Instant::now(),
        }
    }

    fn consumer(group: &str) -> ConsumerRegistration {
        ConsumerRegistration {
            group: group.into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            subscriptions: Vec::new(),
        }
    }

    fn limits() -> MetadataLimits {
        MetadataLimits {
            max_producer_groups: 3,
            max_consumer_groups_per_client: 2,
            max_producer_groups_per_client: 2,
            max_auto_created_groups_per_client: 1,
            ..MetadataLimits::default()
        }
    }

    /// A pull's view of its group: the model and the one subscription it asks for,
    /// the same as in the whole group's copy.
    #[test]
    fn consumer_subscription_is_the_groups_subscription_to_the_topic() {
        let registry = ClientRegistry::new(MetadataLimits::default());
        let mut reg = consumer("g");
        reg.message_model = MessageModel::Broadcasting;
        reg.subscriptions = vec![
            vostok_remoting::protocol::filter::build_subscription("T1", "a || b", 7),
            vostok_remoting::protocol::filter::build_subscription("T2", "*", 8),
        ];
        registry.register_consumer(client(), reg).unwrap();
        let (model, sub) = registry.consumer_subscription("g", "T1").unwrap();
        assert_eq!(model, MessageModel::Broadcasting);
        let sub = sub.unwrap();
        assert_eq!(sub.sub_string, "a || b");
        assert_eq!(sub.sub_version, 7);
        assert_eq!(
            Some(&sub),
            registry
                .consumer_group("g")
                .unwrap()
                .subscriptions
                .get("T1")
        );
        assert_eq!(registry.consumer_subscription("g", "T3").unwrap().1, None);
        assert!(registry.consumer_subscription("other", "T1").is_none());
    }

    #[test]
    fn a_client_is_in_at_most_its_share_of_groups_until_it_leaves_one() {
        let registry = ClientRegistry::new(limits());
        let (a, b) = (client(), client());
        assert!(registry
            .register_consumer(a.clone(), consumer("g1"))
            .unwrap());
        assert!(registry
            .register_consumer(a.clone(), consumer("g2"))
            .unwrap());
        // A refresh of a group it is in is not a new one.
        assert!(!registry
            .register_consumer(a.clone(), consumer("g1"))
            .unwrap());
        let refused = registry
            .register_consumer(a.clone(), consumer("g3"))
            .unwrap_err();
        assert!(
            refused.0.contains("maxConsumerGroupNumPerClient=2"),
            "{refused:?}"
        );
        assert!(registry.consumer_group("g3").is_none());
        // Another client has its own share.
        assert!(registry
            .register_consumer(b.clone(), consumer("g3"))
            .unwrap());
        registry.unregister_consumer("g2", &a.channel);
        assert!(registry
            .register_consumer(a.clone(), consumer("g3"))
            .unwrap());

        registry.register_producer("p1", a.clone()).unwrap();
        registry.register_producer("p2", a.clone()).unwrap();
        registry.register_producer("p1", a.clone()).unwrap();
        let refused = registry.register_producer("p3", a.clone()).unwrap_err();
        assert!(
            refused.0.contains("maxProducerGroupNumPerClient=2"),
            "{refused:?}"
        );
        registry.register_producer("p3", b.clone()).unwrap();
        let refused = registry.register_producer("p4", b.clone()).unwrap_err();
        assert!(refused.0.contains("maxProducerGroupNum=3"), "{refused:?}");
        // Closing the channel gives back everything it held.
        registry.on_channel_closed(&a.channel);
        registry.register_producer("p4", b.clone()).unwrap();
        assert!(registry.usage.locked().get(&a.channel.id()).is_none());
        assert!(registry
            .register_consumer(a.clone(), consumer("g4"))
            .unwrap());
    }

    #[test]
    fn creations_are_counted_per_client_and_released_when_they_do_not_happen() {
        let registry = ClientRegistry::new(limits());
        let (a, b) = (client(), client());
        registry
            .reserve_creation(&a.channel, Creation::Group)
            .unwrap();
        let refused = registry
            .reserve_creation(&a.channel, Creation::Group)
            .unwrap_err();
        assert!(
            refused.0.contains("maxAutoCreateGroupNumPerClient=1"),
            "{refused:?}"
        );
        registry
            .reserve_creation(&a.channel, Creation::Topic)
            .unwrap();
        registry
            .reserve_creation(&b.channel, Creation::Group)
            .unwrap();
        registry.release_creation(&a.channel, Creation::Group);
        registry
            .reserve_creation(&a.channel, Creation::Group)
            .unwrap();
        // Leaving its groups does not give back what the client had created.
        registry
            .register_consumer(a.clone(), consumer("g"))
            .unwrap();
        registry.unregister_consumer("g", &a.channel);
        assert!(registry
            .reserve_creation(&a.channel, Creation::Group)
            .is_err());
        // Closing the connection does (a new connection is a new client).
        registry.on_channel_closed(&a.channel);
        assert!(registry.usage.locked().get(&a.channel.id()).is_none());
        // A closed channel is not counted: nothing would forget its count.
        a.channel.close();
        for _ in 0..3 {
            registry
                .reserve_creation(&a.channel, Creation::Group)
                .unwrap();
        }
        assert!(registry.usage.locked().get(&a.channel.id()).is_none());
    }

    #[test]
    fn expired_channels_give_back_the_groups_they_were_in() {
        let registry = ClientRegistry::new(limits());
        let a = client();
        registry
            .register_consumer(a.clone(), consumer("g"))
            .unwrap();
        registry.register_producer("p", a.clone()).unwrap();
        registry.scan_expired(
            Instant::now() + Duration::from_secs(10),
            Duration::from_secs(1),
        );
        assert!(a.channel.is_closed());
        assert!(registry.consumer_group("g").is_none());
        assert!(registry.usage.locked().is_empty());
    }
}
