//! Compiled SQL92 and routing-key subscriptions (`ConsumerFilterManager`,
//! docs/semantics.md#sql92, docs/amqp.md) and the pull filter built from a subscription
//! (`ExpressionMessageFilter`).
//!
//! A consumer's SQL92 or binding-key expression is compiled once per (topic, group, subscription
//! version): when its heartbeat registers it, or when a pull or a POP request carries
//! it. Pulls then evaluate the compiled tree against each record's property string.
//! A compile error is kept too, so that the consumer's pulls say where its expression
//! fails. Apache's bloom-filter bitmaps in the consume-queue extension are not kept:
//! every candidate record is evaluated.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tracing::{info, warn};
use vostok_remoting::protocol::body::{SubscriptionData, EXPRESSION_TYPE_ROUTING};
pub(crate) use vostok_remoting::protocol::filter::is_tag_type;
use vostok_remoting::protocol::filter::matches_tags_code;
use vostok_remoting::protocol::filter::{FilterError, PropertyFilter};
use vostok_remoting::support::sync::RwLockExt;
use vostok_store::MessageFilter;

/// One group's compiled expression for one topic (Java `ConsumerFilterData`).
#[derive(Debug)]
pub(crate) struct ConsumerFilterData {
    pub expression: String,
    pub expression_type: String,
    /// The subscription version it was compiled for.
    pub client_version: i64,
    pub compiled: Result<Arc<PropertyFilter>, FilterError>,
}

/// (topic, group) → compiled expression.
#[derive(Default)]
pub(crate) struct ConsumerFilterManager {
    table: RwLock<HashMap<(String, String), Arc<ConsumerFilterData>>>,
}

impl ConsumerFilterManager {
    /// Registers a group's subscriptions from its heartbeat; its entries for topics it
    /// no longer subscribes to are dropped.
    pub fn register(&self, group: &str, subscriptions: &[SubscriptionData]) {
        for sub in subscriptions {
            if !is_tag_type(&sub.expression_type) {
                self.compile(group, sub);
            }
        }
        let mut table = self.table.write_locked();
        table.retain(|(topic, g), _| {
            g != group
                || subscriptions
                    .iter()
                    .any(|s| &s.topic == topic && !is_tag_type(&s.expression_type))
        });
    }

    /// Forgets a group that has no consumer left.
    pub fn unregister_group(&self, group: &str) {
        self.table.write_locked().retain(|(_, g), _| g != group);
    }

    pub fn get(&self, topic: &str, group: &str) -> Option<Arc<ConsumerFilterData>> {
        self.table
            .read_locked()
            .get(&(topic.to_owned(), group.to_owned()))
            .cloned()
    }

    /// The compiled form of `sub` for `group`, compiling only when the table holds no
    /// entry for this expression. An older version never replaces a newer one with a
    /// different expression (Apache's rule for heartbeats racing each other).
    pub fn compile(&self, group: &str, sub: &SubscriptionData) -> Arc<ConsumerFilterData> {
        let key = (sub.topic.clone(), group.to_owned());
        let old = self.table.read_locked().get(&key).cloned();
        let data = match old {
            Some(old)
                if old.expression == sub.sub_string
                    && old.expression_type == sub.expression_type =>
            {
                if old.client_version >= sub.sub_version {
                    return old;
                }
                Arc::new(ConsumerFilterData {
                    expression: old.expression.clone(),
                    expression_type: old.expression_type.clone(),
                    client_version: sub.sub_version,
                    compiled: old.compiled.clone(),
                })
            }
            // Compiled for this caller only.
            Some(old) if sub.sub_version <= old.client_version => return Arc::new(build(sub)),
            _ => {
                let data = Arc::new(build(sub));
                match &data.compiled {
                    Ok(_) => {
                        info!(group, topic = %sub.topic, expression = %sub.sub_string, "consumer filter registered")
                    }
                    Err(e) => {
                        warn!(group, topic = %sub.topic, expression = %sub.sub_string, error = %e, "consumer filter does not compile")
                    }
                }
                data
            }
        };
        self.table.write_locked().insert(key, data.clone());
        data
    }
}

/// Compiles `sub` (SQL92 or ROUTING; other types keep an error).
fn build(sub: &SubscriptionData) -> ConsumerFilterData {
    let compiled = PropertyFilter::compile(&sub.expression_type, &sub.sub_string).map(Arc::new);
    ConsumerFilterData {
        expression: sub.sub_string.clone(),
        expression_type: sub.expression_type.clone(),
        client_version: sub.sub_version,
        compiled,
    }
}

/// What a pull (or a POP) filters by: tag codes on the consume queue for a tag
/// subscription, the compiled expression on each record's properties for SQL92 and
/// ROUTING (Java `ExpressionMessageFilter`).
#[derive(Debug, Clone)]
pub(crate) struct ExpressionMessageFilter {
    subscription: SubscriptionData,
    sql: Option<Arc<PropertyFilter>>,
}

impl ExpressionMessageFilter {
    /// The filter of a one-off routing-key subscription (a POP or a gRPC receive names
    /// its binding key with each request): compiled here, not kept in the table.
    pub fn routing(topic: &str, binding_key: &str) -> Result<Self, FilterError> {
        let mut sub = vostok_remoting::protocol::filter::build_subscription(topic, "*", 0);
        sub.expression_type = EXPRESSION_TYPE_ROUTING.to_owned();
        sub.sub_string = binding_key.to_owned();
        let compiled = PropertyFilter::compile(EXPRESSION_TYPE_ROUTING, binding_key)?;
        Ok(ExpressionMessageFilter::new(sub, Some(Arc::new(compiled))))
    }

    /// A tag filter for a tag subscription; `sql` must be given for the others.
    pub fn new(subscription: SubscriptionData, sql: Option<Arc<PropertyFilter>>) -> Self {
        ExpressionMessageFilter { subscription, sql }
    }

    pub fn subscription(&self) -> &SubscriptionData {
        &self.subscription
    }
}

impl MessageFilter for ExpressionMessageFilter {
    fn is_matched_by_consume_queue(&self, tags_code: i64) -> bool {
        self.sql.is_some() || matches_tags_code(&self.subscription, tags_code)
    }

    fn is_matched_by_commit_log(&self, properties: &str) -> bool {
        self.sql
            .as_ref()
            .is_none_or(|f| f.matches_properties(properties))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::protocol::body::EXPRESSION_TYPE_SQL92;
    use vostok_remoting::protocol::filter::build_subscription;

    fn sql(topic: &str, expression: &str, version: i64) -> SubscriptionData {
        let mut sub = build_subscription(topic, "*", version);
        sub.expression_type = EXPRESSION_TYPE_SQL92.to_owned();
        sub.sub_string = expression.to_owned();
        sub
    }

    #[test]
    fn compiles_once_per_expression_and_keeps_errors() {
        let m = ConsumerFilterManager::default();
        m.register(
            "g",
            &[sql("T", "a > 1", 1), build_subscription("U", "*", 1)],
        );
        let first = m.get("T", "g").expect("registered");
        assert!(first.compiled.is_ok());
        assert!(
            m.get("U", "g").is_none(),
            "tag subscriptions compile nothing"
        );
        // A newer version of the same expression reuses the compiled tree.
        let again = m.compile("g", &sql("T", "a > 1", 2));
        assert_eq!(again.client_version, 2);
        assert!(Arc::ptr_eq(
            again.compiled.as_ref().unwrap(),
            first.compiled.as_ref().unwrap()
        ));
        // An older version with another expression does not replace it.
        m.compile("g", &sql("T", "b = 1", 1));
        assert_eq!(m.get("T", "g").unwrap().expression, "a > 1");
        // A bad expression is kept with its error.
        m.register("g", &[sql("T", "a >", 3)]);
        let bad = m.get("T", "g").unwrap();
        assert!(matches!(
            bad.compiled.as_ref().unwrap_err(),
            FilterError::Sql92(e) if e.position == 3
        ));
        m.register("g", &[]);
        assert!(m.get("T", "g").is_none(), "unsubscribed topics are dropped");
        m.register("g", &[sql("T", "a > 1", 4)]);
        m.unregister_group("g");
        assert!(m.get("T", "g").is_none());
    }

    #[test]
    fn filters_by_tags_or_by_properties() {
        let tags = ExpressionMessageFilter::new(build_subscription("T", "A || B", 1), None);
        assert!(tags.is_matched_by_consume_queue(i64::from(
            vostok_remoting::protocol::filter::java_hash("A")
        )));
        assert!(!tags.is_matched_by_consume_queue(1));
        assert!(tags.is_matched_by_commit_log("x"));
        let compiled = Arc::new(PropertyFilter::compile("SQL92", "a = 'x'").unwrap());
        let sql = ExpressionMessageFilter::new(sql("T", "a = 'x'", 1), Some(compiled));
        assert!(sql.is_matched_by_consume_queue(1));
        assert!(sql.is_matched_by_commit_log("a\u{1}x\u{2}"));
        assert!(!sql.is_matched_by_commit_log("a\u{1}y\u{2}"));
    }

    #[test]
    fn routing_subscriptions_filter_by_routing_key() {
        let m = ConsumerFilterManager::default();
        let mut sub = build_subscription("T", "*", 1);
        sub.expression_type = "ROUTING".to_owned();
        sub.sub_string = "orders.*.eu".to_owned();
        m.register("g", std::slice::from_ref(&sub));
        let data = m.get("T", "g").expect("registered");
        let compiled = data.compiled.clone().expect("a valid binding key");
        let filter = ExpressionMessageFilter::new(sub.clone(), Some(compiled));
        assert!(filter.is_matched_by_consume_queue(0));
        assert!(filter.is_matched_by_commit_log("ROUTING_KEY\u{1}orders.new.eu\u{2}"));
        assert!(filter.is_matched_by_commit_log("TAGS\u{1}orders.new.eu\u{2}"));
        assert!(!filter.is_matched_by_commit_log("ROUTING_KEY\u{1}orders.new.us\u{2}"));
        assert!(!filter.is_matched_by_commit_log("ROUTING_KEY\u{1}orders.eu\u{2}"));
        sub.sub_string = "orders.#.#".to_owned();
        sub.sub_version = 2;
        m.register("g", &[sub]);
        assert!(matches!(
            m.get("T", "g").unwrap().compiled.as_ref().unwrap_err(),
            FilterError::Routing(_)
        ));
    }
}
