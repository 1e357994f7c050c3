//! Subscription groups and topics a client's request creates on first use
//! (`autoCreateSubscriptionGroup`, `autoCreateTopicEnable`), bounded per client
//! connection and in total (docs/limits.md#groups-and-topics): every front end and
//! operation creates them through these two functions, so that no request path escapes
//! the bounds.

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::Channel;

use crate::state::client_registry::{ClientRegistry, Creation};
use crate::state::subscription::SubscriptionGroupConfig;
use crate::state::topic::TopicConfigManager;
use crate::state::Consumers;
pub(crate) use crate::state::NotCreated;

/// The group's config, created when the broker may create it for the client on
/// `client` (`None`: for the broker itself); else why it was not.
pub(crate) fn find_or_create_group(
    consumers: &Consumers,
    group: &str,
    client: Option<&Channel>,
) -> Result<SubscriptionGroupConfig, NotCreated> {
    if let Some(found) = consumers.subscriptions.get(group) {
        return Ok(found);
    }
    counted(&consumers.clients, client, Creation::Group, || {
        consumers.subscriptions.find_or_create(group)
    })
}

/// `topic` for a send of the client on `client` (`None`: a client without a
/// connection of its own), created from `default_topic` when the broker may; else
/// why it was not.
pub(crate) fn create_topic_in_send(
    topics: &TopicConfigManager,
    clients: &ClientRegistry,
    client: Option<&Channel>,
    topic: &str,
    default_topic: &str,
    queue_nums: i32,
    topic_sys_flag: i32,
) -> Result<TopicConfig, NotCreated> {
    if let Some(found) = topics.get(topic) {
        return Ok(found);
    }
    counted(clients, client, Creation::Topic, || {
        topics.create_in_send(topic, default_topic, queue_nums, topic_sys_flag)
    })
}

/// Runs `create` within the client's share of creations; a creation that did not
/// happen (refused, or another request's came first) is not counted.
fn counted<T>(
    clients: &ClientRegistry,
    client: Option<&Channel>,
    what: Creation,
    create: impl FnOnce() -> Result<(T, bool), NotCreated>,
) -> Result<T, NotCreated> {
    if let Some(channel) = client {
        clients
            .reserve_creation(channel, what)
            .map_err(|over| NotCreated::OverLimit(over.0))?;
    }
    let outcome = create();
    if let Some(channel) = client.filter(|_| !matches!(outcome, Ok((_, true)))) {
        clients.release_creation(channel, what);
    }
    outcome.map(|(found, _)| found)
}

#[cfg(test)]
mod tests {
    use vostok_remoting::protocol::topic::AUTO_CREATE_TOPIC_KEY_TOPIC;

    use super::*;
    use crate::config::MetadataLimits;
    use crate::BrokerConfig;

    /// The consumer tables and the topic table alone, in `dir`, with a share of one
    /// creation of each kind per client connection.
    fn tables(dir: &std::path::Path) -> (Consumers, TopicConfigManager) {
        let mut config = BrokerConfig::default();
        config.store.store_path_root_dir = dir.to_path_buf();
        let limits = MetadataLimits {
            max_auto_created_groups_per_client: 1,
            max_auto_created_topics_per_client: 1,
            ..MetadataLimits::default()
        };
        let consumers = Consumers {
            subscriptions: crate::state::subscription::SubscriptionGroupManager::load(&config),
            request_modes: crate::state::request_mode::MessageRequestModeManager::load(&config),
            offsets: crate::state::offset::ConsumerOffsetManager::load(&config),
            clients: ClientRegistry::new(limits),
            filters: Default::default(),
            locks: Default::default(),
            long_polling: crate::state::long_polling::LongPolling::new(),
        };
        (consumers, TopicConfigManager::load(&config))
    }

    fn connection() -> Channel {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 40001));
        Channel::detached(addr, addr, 1).0
    }

    #[test]
    fn a_connection_creates_within_its_share_and_a_client_without_one_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let (consumers, topics) = tables(dir.path());
        let conn = connection();
        find_or_create_group(&consumers, "g1", Some(&conn)).unwrap();
        // Finding what exists costs nothing.
        find_or_create_group(&consumers, "g1", Some(&conn)).unwrap();
        assert!(matches!(
            find_or_create_group(&consumers, "g2", Some(&conn)),
            Err(NotCreated::OverLimit(_))
        ));
        // A client known by no connection (a gRPC client before its settings) creates
        // within the broker's totals only.
        find_or_create_group(&consumers, "g2", None).unwrap();
        find_or_create_group(&consumers, "g3", None).unwrap();

        let send = |topic: &str, client: Option<&Channel>| {
            create_topic_in_send(
                &topics,
                &consumers.clients,
                client,
                topic,
                AUTO_CREATE_TOPIC_KEY_TOPIC,
                4,
                0,
            )
        };
        assert_eq!(send("t1", Some(&conn)).unwrap().write_queue_nums, 4);
        assert!(matches!(
            send("t2", Some(&conn)),
            Err(NotCreated::OverLimit(_))
        ));
        assert!(send("t2", None).is_ok());
        // A template that does not exist creates nothing and uses no share.
        let other = connection();
        assert!(matches!(
            create_topic_in_send(
                &topics,
                &consumers.clients,
                Some(&other),
                "t3",
                "none",
                4,
                0
            ),
            Err(NotCreated::NotAllowed(_))
        ));
        assert!(send("t3", Some(&other)).is_ok());
    }
}
