//! Tag expressions and tag hash codes (docs/message.md#tag-hash-code, `FilterAPI`);
//! SQL92 selectors in [`sql92`], routing-key binding keys in [`routing`], and the
//! [`PropertyFilter`] a broker evaluates on a record's properties for either.

pub mod routing;
pub mod sql92;

use std::collections::BTreeSet;

use super::body::{
    SubscriptionData, EXPRESSION_TYPE_ROUTING, EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_TAG, SUB_ALL,
};
use routing::{BindingKey, RoutingKeyError};
use sql92::{Sql92Error, Sql92Filter};

/// A compiled non-tag subscription, evaluated on a record's encoded properties.
#[derive(Debug)]
pub enum PropertyFilter {
    Sql92(Sql92Filter),
    Routing(BindingKey),
}

/// Why a non-tag subscription does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error(transparent)]
    Sql92(#[from] Sql92Error),
    #[error("Invalid binding key: {0}")]
    Routing(#[from] RoutingKeyError),
    #[error("unknown expression type {0:?}")]
    UnknownType(String),
}

impl PropertyFilter {
    /// Compiles `expression` of `expression_type` (`SQL92` or `ROUTING`).
    pub fn compile(expression_type: &str, expression: &str) -> Result<Self, FilterError> {
        match expression_type {
            EXPRESSION_TYPE_SQL92 => Ok(PropertyFilter::Sql92(Sql92Filter::compile(expression)?)),
            EXPRESSION_TYPE_ROUTING => Ok(PropertyFilter::Routing(BindingKey::parse(expression)?)),
            other => Err(FilterError::UnknownType(other.to_owned())),
        }
    }

    /// Whether a message passes, its properties looked up by name.
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            PropertyFilter::Sql92(f) => f.matches(lookup),
            PropertyFilter::Routing(k) => k.matches(
                lookup(routing::ROUTING_KEY)
                    .or_else(|| lookup(super::message::property::TAGS))
                    .unwrap_or(""),
            ),
        }
    }

    /// Whether the record with this encoded property string passes.
    pub fn matches_properties(&self, encoded: &str) -> bool {
        match self {
            PropertyFilter::Sql92(f) => f.matches_properties(encoded),
            PropertyFilter::Routing(k) => k.matches_properties(encoded),
        }
    }
}

/// Whether a broker serves `expression_type` only with `enablePropertyFilter`: SQL92
/// does; a routing key costs one split of one property and is always served.
pub fn needs_property_filter_switch(expression_type: &str) -> bool {
    !is_tag_type(expression_type) && expression_type != EXPRESSION_TYPE_ROUTING
}

/// `ExpressionType.isTagType`: tags, also spelt empty by old clients.
pub fn is_tag_type(expression_type: &str) -> bool {
    expression_type.is_empty() || expression_type == EXPRESSION_TYPE_TAG
}

/// Java's `String.hashCode` over UTF-16 code units.
pub fn java_hash(s: &str) -> i32 {
    let mut units = [0u16; 2];
    let mut h: i32 = 0;
    for c in s.chars() {
        for unit in c.encode_utf16(&mut units) {
            h = h.wrapping_mul(31).wrapping_add(*unit as i32);
        }
    }
    h
}

/// The consume-queue tag code of a message: the tag's hash, sign-extended; 0 without tag.
pub fn tags_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(t) if !t.is_empty() => java_hash(t) as i64,
        _ => 0,
    }
}

/// Splits `TagA || TagB` into its tags; `*` or blank means all (an empty set).
pub fn parse_tags(expression: &str) -> BTreeSet<String> {
    let expression = expression.trim();
    if expression.is_empty() || expression == SUB_ALL {
        return BTreeSet::new();
    }
    expression
        .split("||")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `FilterAPI.buildSubscriptionData` for a TAG expression.
pub fn build_subscription(topic: &str, expression: &str, sub_version: i64) -> SubscriptionData {
    let tags_set = parse_tags(expression);
    let code_set = tags_set.iter().map(|t| java_hash(t)).collect();
    let sub_string = if tags_set.is_empty() {
        SUB_ALL.to_owned()
    } else {
        expression.trim().to_owned()
    };
    SubscriptionData {
        class_filter_mode: false,
        code_set,
        expression_type: EXPRESSION_TYPE_TAG.to_owned(),
        sub_string,
        sub_version,
        tags_set,
        topic: topic.to_owned(),
    }
}

/// Broker-side tag filter on a consume-queue entry: passes everything for `*`, else a
/// tag code in the subscription's code set. Clients re-check the tag string.
pub fn matches_tags_code(sub: &SubscriptionData, tags_code: i64) -> bool {
    sub.sub_string == SUB_ALL
        || sub.sub_string.is_empty()
        || sub.code_set.contains(&(tags_code as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_test_vectors() {
        assert_eq!(java_hash("TagA"), 2598919);
        assert_eq!(java_hash("*"), 42);
        assert_eq!(java_hash("a"), 97);
        assert_eq!(java_hash("TopicTest#KEY1"), -1656969516);
        assert_eq!(java_hash(""), 0);
        // A character outside the BMP hashes as its two UTF-16 surrogates.
        assert_eq!(java_hash("😀"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn builds_subscriptions_like_filter_api() {
        let sub = build_subscription("T", " TagA || TagB ||", 1);
        assert_eq!(sub.tags_set.len(), 2);
        assert!(sub.code_set.contains(&2598919));
        assert!(matches_tags_code(&sub, 2598919));
        assert!(!matches_tags_code(&sub, 97));
        let all = build_subscription("T", "*", 1);
        assert_eq!(all.sub_string, "*");
        assert!(matches_tags_code(&all, 12345));
        assert_eq!(build_subscription("T", "", 1).sub_string, "*");
    }
}
