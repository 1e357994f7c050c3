//! Subscriptions: what a consumer selects ([`MessageSelector`]) and what that means on
//! the broker (the `SubscriptionData` sent in heartbeats and pulls) and on the client
//! (the re-check of tags and routing-key patterns on every pulled message).

use vostok_remoting::protocol::body::{SubscriptionData, EXPRESSION_TYPE_SQL92, SUB_ALL};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::support::time::now_millis;

use super::wildcard::RoutingPattern;

/// What a subscription selects (Java `MessageSelector`, plus routing-key patterns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageSelector {
    /// `*` or `TagA || TagB`: filtered by tag hash on the broker, by tag on the client.
    Tag(String),
    /// SQL92 over message properties, evaluated by brokers that enable property
    /// filtering (`enablePropertyFilter`); others reject the subscription and the pulls
    /// fail with the broker's code, logged.
    Sql92(String),
    /// A dot-separated routing-key pattern on the tag (`*` one word, `#` zero or more),
    /// matched on the client; the broker filters by tag hash only when the pattern has
    /// no wildcard.
    RoutingKey(String),
}

impl MessageSelector {
    pub fn by_tag(expression: impl Into<String>) -> Self {
        MessageSelector::Tag(expression.into())
    }

    pub fn by_sql(expression: impl Into<String>) -> Self {
        MessageSelector::Sql92(expression.into())
    }

    pub fn by_routing_key(pattern: impl Into<String>) -> Self {
        MessageSelector::RoutingKey(pattern.into())
    }
}

/// One subscribed topic: what the broker filters on, and the client-side pattern.
#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    pub data: SubscriptionData,
    pub pattern: Option<RoutingPattern>,
}

impl Subscription {
    /// `topic` is already namespaced.
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
            MessageSelector::RoutingKey(p) => {
                let pattern = RoutingPattern::new(p);
                let broker_expr = if pattern.is_literal() {
                    p.as_str()
                } else {
                    SUB_ALL
                };
                Subscription {
                    data: build_subscription(topic, broker_expr, version),
                    pattern: Some(pattern),
                }
            }
        }
    }

    /// The client-side re-check: exact tags (hash collisions) and routing patterns.
    pub fn accepts(&self, msg: &MessageExt) -> bool {
        let tag = msg.tags().unwrap_or("");
        if self.data.expression_type != EXPRESSION_TYPE_SQL92
            && !self.data.tags_set.is_empty()
            && !self.data.tags_set.contains(tag)
        {
            return false;
        }
        self.pattern.as_ref().is_none_or(|p| p.matches(tag))
    }
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
        let make = |t: &str| MessageExt {
            topic: "T".into(),
            flag: 0,
            properties: tag(t),
            body: bytes::Bytes::new(),
            queue_id: 0,
            store_size: 0,
            queue_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_timestamp: 0,
            store_host: "127.0.0.1:1".parse().unwrap(),
            commit_log_offset: 0,
            body_crc: 0,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        let by_tag = Subscription::new("T", &MessageSelector::by_tag("TagA || TagB"));
        assert!(by_tag.accepts(&make("TagA")));
        assert!(!by_tag.accepts(&make("TagC")));
        let pattern = Subscription::new("T", &MessageSelector::by_routing_key("order.*.paid"));
        assert_eq!(
            pattern.data.sub_string, "*",
            "wildcards are matched on the client"
        );
        assert!(pattern.accepts(&make("order.eu.paid")));
        assert!(!pattern.accepts(&make("order.eu.x.paid")));
        let literal = Subscription::new("T", &MessageSelector::by_routing_key("a.b"));
        assert_eq!(
            literal.data.sub_string, "a.b",
            "a literal key is filtered by the broker"
        );
        let sql = Subscription::new("T", &MessageSelector::by_sql("a > 1"));
        assert_eq!(sql.data.expression_type, "SQL92");
        assert!(sql.accepts(&make("anything")));
    }
}
