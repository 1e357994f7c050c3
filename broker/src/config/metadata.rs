//! Bounds on what clients make the broker create and hold (**Vostok**;
//! docs/limits.md#groups-and-topics): subscription groups and topics created on
//! first use (`autoCreateSubscriptionGroup`, `autoCreateTopicEnable`), and the
//! groups a client connection registers in by its heartbeats. Each is bounded per
//! client connection and in total, so that no client (and no number of them) can grow
//! the tables, their files and the name-server registration without end.

use vostok_remoting::config_key;
use vostok_remoting::support::keys::{AtLeast, Section, Table};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataLimits {
    /// `maxSubscriptionGroupNum`: no subscription group is created on first use once
    /// the broker holds this many (an operator may still create more).
    pub max_subscription_groups: usize,
    /// `maxTopicNum`: no topic is created by a send once the broker holds this many
    /// (an operator may still create more). Retry and dead-letter topics follow their
    /// groups, which `maxSubscriptionGroupNum` bounds.
    pub max_topics: usize,
    /// `maxProducerGroupNum`: producer groups online at once.
    pub max_producer_groups: usize,
    /// `maxConsumerGroupNumPerClient`: consumer groups one client connection is in.
    pub max_consumer_groups_per_client: usize,
    /// `maxProducerGroupNumPerClient`: producer groups one client connection is in.
    pub max_producer_groups_per_client: usize,
    /// `maxAutoCreateGroupNumPerClient`: subscription groups created on first use by
    /// the requests of one client connection.
    pub max_auto_created_groups_per_client: usize,
    /// `maxAutoCreateTopicNumPerClient`: topics created by the sends of one client
    /// connection.
    pub max_auto_created_topics_per_client: usize,
}

impl Default for MetadataLimits {
    fn default() -> Self {
        MetadataLimits {
            max_subscription_groups: 10_000,
            max_topics: 30_000,
            max_producer_groups: 10_000,
            max_consumer_groups_per_client: 1_000,
            max_producer_groups_per_client: 1_000,
            max_auto_created_groups_per_client: 1_000,
            max_auto_created_topics_per_client: 1_000,
        }
    }
}

/// A bound of at least 1: switching creation off is `autoCreateSubscriptionGroup` /
/// `autoCreateTopicEnable`.
const AT_LEAST_ONE: AtLeast<usize> = AtLeast(1);

/// The bounds.
pub static KEYS: Table<MetadataLimits> = Table {
    keys: &[
        config_key!("maxSubscriptionGroupNum", max_subscription_groups: AT_LEAST_ONE, "no subscription group is created on first use once the broker holds this many"),
        config_key!("maxTopicNum", max_topics: AT_LEAST_ONE, "no topic is created by a send once the broker holds this many"),
        config_key!("maxProducerGroupNum", max_producer_groups: AT_LEAST_ONE, "producer groups online at once"),
        config_key!("maxConsumerGroupNumPerClient", max_consumer_groups_per_client: AT_LEAST_ONE, "consumer groups one client connection is in"),
        config_key!("maxProducerGroupNumPerClient", max_producer_groups_per_client: AT_LEAST_ONE, "producer groups one client connection is in"),
        config_key!("maxAutoCreateGroupNumPerClient", max_auto_created_groups_per_client: AT_LEAST_ONE, "subscription groups created on first use by one client connection"),
        config_key!("maxAutoCreateTopicNumPerClient", max_auto_created_topics_per_client: AT_LEAST_ONE, "topics created by the sends of one client connection"),
    ],
    nested: &[],
};

impl Section for MetadataLimits {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_zero_is_refused() {
        let mut limits = MetadataLimits::default();
        assert!(limits.set_key("maxTopicNum", "5").unwrap());
        assert!(limits
            .set_key("maxAutoCreateGroupNumPerClient", " 7 ")
            .unwrap());
        assert!(!limits.set_key("maxTopicNumber", "5").unwrap());
        assert!(limits.set_key("maxProducerGroupNum", "0").is_err());
        assert!(limits.set_key("maxProducerGroupNum", "-1").is_err());
        assert_eq!(limits.max_topics, 5);
        assert_eq!(limits.max_auto_created_groups_per_client, 7);
        let props = limits.key_values();
        assert_eq!(props.len(), 7);
        let mut back = MetadataLimits::default();
        for (k, v) in &props {
            assert!(back.set_key(k, v).unwrap(), "{k}");
        }
        assert_eq!(back, limits);
    }
}
