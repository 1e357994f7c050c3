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
