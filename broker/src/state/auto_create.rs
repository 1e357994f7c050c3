//! Subscription groups and topics a client's request creates on first use
//! (`autoCreateSubscriptionGroup`, `autoCreateTopicEnable`), bounded per client
//! connection and in total (docs/limits.md#groups-and-topics): every front end creates
//! them through these two methods, so that no request path escapes the bounds.

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::Channel;

use super::client_registry::Creation;
use super::subscription::SubscriptionGroupConfig;
use super::Broker;

/// Why a group or topic was not created on first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotCreated {
    /// Creation on first use is off, or the name or template does not allow it.
    NotAllowed(String),
    /// A bound was reached (docs/limits.md#groups-and-topics).
    OverLimit(String),
}

impl std::fmt::Display for NotCreated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotCreated::NotAllowed(reason) | NotCreated::OverLimit(reason) => f.write_str(reason),
        }
    }
}

impl Broker {
    /// The group's config, created when the broker may create it for the client on
    /// `client` (`None`: for the broker itself); else why it was not.
    pub(crate) fn find_or_create_group(
        &self,
        group: &str,
        client: Option<&Channel>,
    ) -> Result<SubscriptionGroupConfig, NotCreated> {
        if let Some(found) = self.consumers.subscriptions.get(group) {
            return Ok(found);
        }
        self.counted(client, Creation::Group, || {
            self.consumers.subscriptions.find_or_create(group)
        })
    }

    /// `topic` for a send of the client on `client` (`None`: a client without a
    /// connection of its own), created from `default_topic` when the broker may; else
    /// why it was not.
    pub(crate) fn create_topic_in_send(
        &self,
        client: Option<&Channel>,
        topic: &str,
        default_topic: &str,
        queue_nums: i32,
        topic_sys_flag: i32,
    ) -> Result<TopicConfig, NotCreated> {
        if let Some(found) = self.storage.topics.get(topic) {
            return Ok(found);
        }
        self.counted(client, Creation::Topic, || {
            self.storage
                .topics
                .create_in_send(topic, default_topic, queue_nums, topic_sys_flag)
        })
    }

    /// Runs `create` within the client's share of creations; a creation that did not
    /// happen (refused, or another request's came first) is not counted.
    fn counted<T>(
        &self,
        client: Option<&Channel>,
        what: Creation,
        create: impl FnOnce() -> Result<(T, bool), NotCreated>,
    ) -> Result<T, NotCreated> {
        if let Some(channel) = client {
            self.consumers
                .clients
                .reserve_creation(channel, what)
                .map_err(|over| NotCreated::OverLimit(over.0))?;
        }
        let outcome = create();
        if let Some(channel) = client.filter(|_| !matches!(outcome, Ok((_, true)))) {
            self.consumers.clients.release_creation(channel, what);
        }
        outcome.map(|(found, _)| found)
    }
}
