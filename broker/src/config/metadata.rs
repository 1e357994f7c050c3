//! Bounds on what clients make the broker create and hold (**Vostok**;
//! docs/limits.md#groups-and-topics): subscription groups and topics created on
//! first use (`autoCreateSubscriptionGroup`, `autoCreateTopicEnable`), and the
//! groups a client connection registers in by its heartbeats. Each is bounded per
//! client connection and in total, so that no client (and no number of them) can grow
//! the tables, their files and the name-server registration without end.

use crate::error::BrokerError;

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

impl MetadataLimits {
    fn fields(&mut self) -> [(&'static str, &mut usize); 7] {
        [
            ("maxSubscriptionGroupNum", &mut self.max_subscription_groups),
            ("maxTopicNum", &mut self.max_topics),
            ("maxProducerGroupNum", &mut self.max_producer_groups),
            (
                "maxConsumerGroupNumPerClient",
                &mut self.max_consumer_groups_per_client,
            ),
            (
                "maxProducerGroupNumPerClient",
                &mut self.max_producer_groups_per_client,
            ),
            (
                "maxAutoCreateGroupNumPerClient",
                &mut self.max_auto_created_groups_per_client,
            ),
            (
                "maxAutoCreateTopicNumPerClient",
                &mut self.max_auto_created_topics_per_client,
            ),
        ]
    }

    /// Applies one key; false when it is not one of these. Every bound is at least 1:
    /// switching creation off is `autoCreateSubscriptionGroup` / `autoCreateTopicEnable`.
    pub fn apply_property(&mut self, key: &str, v: &str) -> Result<bool, BrokerError> {
        let Some((_, field)) = self.fields().into_iter().find(|(k, _)| *k == key) else {
            return Ok(false);
        };
        *field = match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(BrokerError::Config {
                    key: key.to_owned(),
                    reason: format!("expected a whole number of at least 1, got {v:?}"),
                })
            }
        };
        Ok(true)
    }

    pub fn to_properties(&self) -> Vec<(String, String)> {
        self.clone()
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_zero_is_refused() {
        let mut limits = MetadataLimits::default();
        assert!(limits.apply_property("maxTopicNum", "5").unwrap());
        assert!(limits
            .apply_property("maxAutoCreateGroupNumPerClient", " 7 ")
            .unwrap());
        assert!(!limits.apply_property("maxTopicNumber", "5").unwrap());
        assert!(limits.apply_property("maxProducerGroupNum", "0").is_err());
        assert!(limits.apply_property("maxProducerGroupNum", "-1").is_err());
        assert_eq!(limits.max_topics, 5);
        assert_eq!(limits.max_auto_created_groups_per_client, 7);
        let props = limits.to_properties();
        assert_eq!(props.len(), 7);
        let mut back = MetadataLimits::default();
        for (k, v) in &props {
            assert!(back.apply_property(k, v).unwrap(), "{k}");
        }
        assert_eq!(back, limits);
    }
}
