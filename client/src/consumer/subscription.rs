//! Subscriptions: what a consumer selects ([`MessageSelector`]) and what that means on
//! the broker (the `SubscriptionData` sent in heartbeats and pulls) and on the client
//! (the re-check of tags and routing keys on every pulled message).

use vostok_remoting::protocol::body::{
    SubscriptionData, EXPRESSION_TYPE_ROUTING, EXPRESSION_TYPE_SQL92, SUB_ALL,
};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::time::now_millis;

use super::wildcard::BindingKey;
use crate::error::{ClientError, Result};

/// What a subscription selects (Java `MessageSelector`, plus routing-key bindings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageSelector {
    /// `*` or `TagA || TagB`: filtered by tag hash on the broker, by tag on the client.
    Tag(String),
    /// SQL92 over message properties, evaluated by brokers that enable property
    /// filtering (`enablePropertyFilter`); others reject the subscription and the pulls
    /// fail with the broker's code, logged.
    Sql92(String),
    /// An AMQP-style binding key (`orders.*.eu`, `orders.#`; docs/amqp.md) over the
    /// message's routing key. Filtered by the broker (expression type `ROUTING`); against
    /// a broker that refuses it, on the client, with the same rules.
    RoutingKey(String),
}

impl MessageSelector {
    pub fn by_tag(expression: impl Into<String>) -> Self {
        MessageSelector::Tag(expression.into())
    }

    pub fn by_sql(expression: impl Into<String>) -> Self {
        MessageSelector::Sql92(expression.into())
    }

    pub fn by_routing_key(binding_key: impl Into<String>) -> Self {
        MessageSelector::RoutingKey(binding_key.into())
    }

    /// Refuses an invalid binding key before anything is sent.
    pub(crate) fn validate(&self) -> Result<()> {
        if let MessageSelector::RoutingKey(key) = self {
            BindingKey::parse(key).map_err(|e| ClientError::InvalidArgument(e.to_string()))?;
        }
        Ok(())
    }
}

/// One subscribed topic: what the broker filters on, and the client-side binding key.
#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    pub data: SubscriptionData,
    pub pattern: Option<BindingKey>,
}

impl Subscription {
    /// `topic` is already namespaced; a routing selector was validated.
    pub fn new(topic: &str, selector: &MessageSelector) -> Self {
        let version = now_millis();
        match selector {
            MessageSelector::Tag(expr) => Subscription {
                data: build_subscription(topic, expr, version),
                pattern: None,
            },
            MessageSelector::Sql92(expr) => {
                let mut data = build_subscription(topic, SUB_ALL, version);
                data.expression_type = EXPRESSION_TYPE_SQL92.to_owned();
                data.sub_string = expr.clone();
                Subscription {
                    data,
                    pattern: None,
                }
            }
            MessageSelector::RoutingKey(key) => {
                let mut data = build_subscription(topic, SUB_ALL, version);
                data.expression_type = EXPRESSION_TYPE_ROUTING.to_owned();
                data.sub_string = key.clone();
                Subscription {
                    data,
                    pattern: BindingKey::parse(key).ok(),
                }
            }
        }
    }

    /// Whether the broker is asked to filter by routing key.
    pub fn is_routing(&self) -> bool {
        self.data.expression_type == EXPRESSION_TYPE_ROUTING
    }

    /// The same binding filtered on the client only: every message of the topic is
    /// pulled (a broker without routing-key filters), under a newer version.
    pub fn client_side(&self) -> Subscription {
        Subscription {
            data: build_subscription(
                &self.data.topic,
                SUB_ALL,
                now_millis().max(self.data.sub_version + 1),
            ),
            pattern: self.pattern.clone(),
        }
    }

    /// The client-side re-check: exact tags (hash collisions) and binding keys.
    pub fn accepts(&self, msg: &MessageExt) -> bool {
        if let Some(key) = &self.pattern {
            return key.matches(routing_key(msg));
        }
        let tag = msg.tags().unwrap_or("");
        self.data.expression_type == EXPRESSION_TYPE_SQL92
            || self.data.tags_set.is_empty()
            || self.data.tags_set.contains(tag)
    }
}

/// A received message's routing key: its `ROUTING_KEY` property, else its tag.
pub(crate) fn routing_key(msg: &MessageExt) -> &str {
    msg.properties
        .get(super::wildcard::ROUTING_KEY)
        .or_else(|| msg.tags())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_filter_on_the_client() {
        let tag = |t: &str| {
            let mut props = vostok_remoting::protocol::message::Properties::new();
            props.insert("TAGS", t);
            props
        };
        let make = |t: &str| {
            let host = "127.0.0.1:1".parse().unwrap();
            MessageExt::new("T", 0, bytes::Bytes::new(), tag(t), host)
        };
        let by_tag = Subscription::new("T", &MessageSelector::by_tag("TagA || TagB"));
        assert!(by_tag.accepts(&make("TagA")));
        assert!(!by_tag.accepts(&make("TagC")));
        let pattern = Subscription::new("T", &MessageSelector::by_routing_key("order.*.paid"));
        assert_eq!(pattern.data.expression_type, "ROUTING");
        assert_eq!(
            pattern.data.sub_string, "order.*.paid",
            "the broker is asked to filter"
        );
        assert!(pattern.accepts(&make("order.eu.paid")));
        assert!(!pattern.accepts(&make("order.eu.x.paid")));
        let mut keyed = make("other");
        keyed.properties.insert("ROUTING_KEY", "order.us.paid");
        assert!(pattern.accepts(&keyed), "the routing key property wins");
        let fallback = pattern.client_side();
        assert_eq!(
            (
                fallback.data.expression_type.as_str(),
                fallback.data.sub_string.as_str()
            ),
            ("TAG", "*"),
            "against a broker without routing keys everything is pulled"
        );
        assert!(fallback.data.sub_version > pattern.data.sub_version);
        assert!(fallback.accepts(&make("order.eu.paid")));
        assert!(!fallback.accepts(&make("order.eu.x.paid")));
        assert!(MessageSelector::by_routing_key("order.#.#")
            .validate()
            .is_err());
        assert!(MessageSelector::by_routing_key("ord*.x")
            .validate()
            .is_err());
        assert!(MessageSelector::by_routing_key("order.#")
            .validate()
            .is_ok());
        let sql = Subscription::new("T", &MessageSelector::by_sql("a > 1"));
        assert_eq!(sql.data.expression_type, "SQL92");
        assert!(sql.accepts(&make("anything")));
    }
}
