//! Heartbeat and NotifyClientTermination (Apache's `ClientActivity`), and the
//! registration of a session in the broker's client registry, which the settings
//! exchange does first and every heartbeat refreshes: a producer under each topic it
//! publishes to (the topic is its producer group, as in Apache's proxy), a consumer in
//! its group with its subscriptions. So `mqadmin` lists gRPC clients beside remoting
//! ones, and the transaction check service finds gRPC producers.

use std::time::Instant;

use vostok_remoting::protocol::body::{
    ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData, EXPRESSION_TYPE_ROUTING,
};
use vostok_remoting::protocol::filter::build_subscription;
use vostok_remoting::protocol::topic;
use vostok_remoting::protocol::version;
use vostok_remoting::support::time::now_millis;

use super::context::RequestContext;
use super::endpoint::GrpcService;
use super::proto::settings::PubSub;
use super::proto::{
    ClientType, Code, FilterType, HeartbeatRequest, HeartbeatResponse,
    NotifyClientTerminationRequest, NotifyClientTerminationResponse, Resource, Settings, Status,
    SubscriptionEntry,
};
use super::session::Session;
use super::status::{ok, status};
use crate::ops::clients;
use crate::state::client_registry::{ClientChannelInfo, ConsumerRegistration, OverLimit};
use crate::state::consumer_filter::ExpressionMessageFilter;
use crate::state::Broker;

/// A topic name the broker accepts, or ILLEGAL_TOPIC.
pub(crate) fn valid_topic(name: &str) -> Result<(), Status> {
    topic::validate_topic(name).map_err(|reason| status(Code::IllegalTopic, reason))
}

/// A group name the broker accepts, or ILLEGAL_CONSUMER_GROUP.
pub(crate) fn valid_group(name: &str) -> Result<(), Status> {
    topic::validate_group(name).map_err(|reason| status(Code::IllegalConsumerGroup, reason))
}

/// The filter type of a routing-key subscription (docs/amqp.md): a value the Apache
/// protocol leaves free, next to TAG (1) and SQL (2).
pub(crate) const FILTER_TYPE_ROUTING: i32 = 3;

/// A tag or routing-key subscription; SQL92 filters are refused, and an invalid
/// binding key is ILLEGAL_FILTER_EXPRESSION.
pub(crate) fn subscription_of(
    topic: &str,
    filter: Option<&super::proto::FilterExpression>,
) -> Result<SubscriptionData, Status> {
    let (kind, expression) = filter
        .map(|f| (f.r#type, f.expression.as_str()))
        .unwrap_or((FilterType::Tag as i32, "*"));
    if kind == FilterType::Sql as i32 {
        return Err(status(
            Code::IllegalFilterExpression,
            "SQL92 filtering is not supported by this broker",
        ));
    }
    if kind == FILTER_TYPE_ROUTING {
        return ExpressionMessageFilter::routing(topic, expression)
            .map(|f| f.subscription().clone())
            .map_err(|e| status(Code::IllegalFilterExpression, e.to_string()));
    }
    let expression = if expression.trim().is_empty() {
        "*"
    } else {
        expression
    };
    Ok(build_subscription(topic, expression, now_millis()))
}

/// The filter a pull or a receive applies for `filter` (see [`subscription_of`]).
pub(crate) fn filter_of(
    topic: &str,
    filter: Option<&super::proto::FilterExpression>,
) -> Result<ExpressionMessageFilter, Status> {
    let sub = subscription_of(topic, filter)?;
    if sub.expression_type == EXPRESSION_TYPE_ROUTING {
        return ExpressionMessageFilter::routing(topic, &sub.sub_string)
            .map_err(|e| status(Code::IllegalFilterExpression, e.to_string()));
    }
    Ok(ExpressionMessageFilter::new(sub, None))
}

/// A registration refused by a bound of docs/limits.md#groups-and-topics.
fn over_limit(over: OverLimit) -> Status {
    status(Code::BadRequest, over.0)
}

fn channel_info(session: &Session) -> ClientChannelInfo {
    ClientChannelInfo {
        channel: session.channel.clone(),
        client_id: session.client_id.clone(),
        language: session.language,
        version: version::V5_0_0,
        last_update: Instant::now(),
    }
}

/// Registers (or refreshes) the session under its settings. `group` is the group a
/// heartbeat names, checked against the settings' one.
pub(crate) fn register(
    broker: &Broker,
    session: &Session,
    settings: &Settings,
    group: Option<&Resource>,
) -> Result<(), Status> {
    let ctx = &session.context;
    let client_type = ClientType::try_from(settings.client_type.unwrap_or_default())
        .unwrap_or(ClientType::Unspecified);
    match &settings.pub_sub {
        Some(PubSub::Publishing(publishing)) => {
            for t in &publishing.topics {
                let name = ctx.name_of(Some(t));
                valid_topic(&name)?;
                broker
                    .consumers
                    .clients
                    .register_producer(&name, channel_info(session))
                    .map_err(over_limit)?;
            }
            Ok(())
        }
        Some(PubSub::Subscription(subscription)) => {
            let name = ctx.name_of(group.or(subscription.group.as_ref()));
            valid_group(&name)?;
            let consume_type = match client_type {
                ClientType::PushConsumer => ConsumeType::ConsumePassively,
                _ => ConsumeType::ConsumeActively,
            };
            let subscriptions = subscription
                .subscriptions
                .iter()
                .map(|SubscriptionEntry { topic, expression }| {
                    subscription_of(&ctx.name_of(topic.as_ref()), expression.as_ref())
                })
                .collect::<Result<Vec<_>, _>>()?;
            let changed = clients::register_consumer(
                &broker.consumers,
                &broker.storage.topics,
                channel_info(session),
                ConsumerRegistration {
                    group: name.clone(),
                    consume_type,
                    message_model: MessageModel::Clustering,
                    consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
                    subscriptions,
                },
            )
            .map_err(over_limit)?;
            if changed {
                let (consumers, config, life) = (&broker.consumers, &broker.config, &broker.life);
                clients::notify_consumer_ids_changed(consumers, config, life, vec![name]);
            }
            Ok(())
        }
        None => Err(status(
            Code::UnrecognizedClientType,
            "there is no publishing or subscription data in settings",
        )),
    }
}

pub(crate) async fn heartbeat(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    let session = svc.sessions.get(&ctx.client_id);
    let Some((session, settings)) = session.and_then(|s| s.settings().map(|set| (s, set))) else {
        return HeartbeatResponse {
            status: Some(status(
                Code::UnrecognizedClientType,
                "cannot find client settings for this client",
            )),
        };
    };
    let result = register(&svc.broker, &session, &settings, request.group.as_ref());
    HeartbeatResponse {
        status: Some(result.err().unwrap_or_else(ok)),
    }
}

pub(crate) async fn notify_client_termination(
    svc: &GrpcService,
    ctx: &RequestContext,
    _request: NotifyClientTerminationRequest,
) -> NotifyClientTerminationResponse {
    let closed = svc.sessions.close(&svc.broker, &ctx.client_id);
    let status = match closed {
        Some(_) => ok(),
        None => status(
            Code::UnrecognizedClientType,
            "cannot find client settings for this client",
        ),
    };
    NotifyClientTerminationResponse {
        status: Some(status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::proto::FilterExpression;
    use vostok_store::MessageFilter;

    fn routing(expression: &str) -> FilterExpression {
        FilterExpression {
            r#type: FILTER_TYPE_ROUTING,
            expression: expression.to_owned(),
        }
    }

    #[test]
    fn routing_filters_are_served_and_bad_binding_keys_refused() {
        let filter = filter_of("T", Some(&routing("orders.*.eu"))).expect("a valid binding key");
        assert_eq!(filter.subscription().expression_type, "ROUTING");
        assert!(filter.is_matched_by_commit_log("ROUTING_KEY\u{1}orders.new.eu\u{2}"));
        assert!(filter.is_matched_by_commit_log("TAGS\u{1}orders.paid.eu\u{2}"));
        assert!(!filter.is_matched_by_commit_log("TAGS\u{1}orders.paid.us\u{2}"));
        let sub = subscription_of("T", Some(&routing("orders.#"))).expect("valid");
        assert_eq!(
            (sub.expression_type.as_str(), sub.sub_string.as_str()),
            ("ROUTING", "orders.#")
        );
        for bad in ["orders.#.#", "ord*.eu", ""] {
            let refused = filter_of("T", Some(&routing(bad))).expect_err(bad);
            assert!(
                refused.message.contains("binding key"),
                "{bad}: {}",
                refused.message
            );
        }
        let tags = filter_of("T", None).expect("tags");
        assert!(tags.is_matched_by_commit_log("TAGS\u{1}anything\u{2}"));
    }
}
