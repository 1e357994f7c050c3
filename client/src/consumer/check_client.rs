//! CHECK_CLIENT_CONFIG before a consumer starts (Java `checkClientInBroker`): a
//! broker asked about each SQL92 subscription compiles it, so that an expression the
//! broker refuses (SUBSCRIPTION_PARSE_FAILED, with where it fails) or a broker without
//! property filters (SYSTEM_ERROR) fails `start()` instead of every later pull.
//!
//! A routing-key subscription is asked about the same way; a broker that refuses it
//! (Apache RocketMQ, which knows no `ROUTING` expression type) turns it into
//! client-side filtering instead of failing the start.
//!
//! One broker per topic is asked, as in Java: brokers of a cluster share their
//! configuration. A broker that cannot be reached is logged and skipped; its pulls
//! report the problem if there is one.

use serde::Serialize;
use tracing::warn;
use vostok_remoting::protocol::body::SubscriptionData;
use vostok_remoting::protocol::filter::is_tag_type;
use vostok_remoting::protocol::request_code;
use vostok_remoting::RemotingCommand;

use super::core::ConsumerCore;
use crate::api;
use crate::error::{ClientError, Result};
use crate::instance::ClientInstance;

/// Java `CheckClientRequestBody`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CheckClientRequestBody<'a> {
    client_id: &'a str,
    group: &'a str,
    subscription_data: &'a SubscriptionData,
}

/// Asks a broker of each SQL92- or routing-subscribed topic whether it accepts the
/// expression.
pub(crate) async fn check_client_in_broker(
    instance: &ClientInstance,
    core: &ConsumerCore,
) -> Result<()> {
    for topic in core.subscribed_topics() {
        let Some(sub) = core.subscription(&topic) else {
            continue;
        };
        if is_tag_type(&sub.data.expression_type) {
            continue;
        }
        let Some(addr) = instance.cached_route(&topic).and_then(|route| {
            route.broker_datas.iter().find_map(|b| {
                b.broker_addrs
                    .get(&0)
                    .or_else(|| b.broker_addrs.values().next())
                    .cloned()
            })
        }) else {
            continue;
        };
        let body = CheckClientRequestBody {
            client_id: instance.client_id(),
            group: &core.group,
            subscription_data: &sub.data,
        };
        let request = RemotingCommand::request(request_code::CHECK_CLIENT_CONFIG)
            .with_body(serde_json::to_vec(&body).unwrap_or_default());
        let answer = api::invoke(instance.remoting(), &addr, request, instance.api_timeout())
            .await
            .and_then(|response| api::expect_success(&addr, response));
        match answer {
            Ok(_) => {}
            Err(ClientError::Broker { code, remark, addr }) => {
                if sub.is_routing() {
                    tracing::debug!(topic = %topic, broker = %addr, code, remark = %remark, "routing keys refused");
                    core.filter_routing_on_client(&topic);
                    continue;
                }
                return Err(ClientError::Broker { code, remark, addr });
            }
            Err(e) => {
                warn!(topic = %topic, broker = %addr, error = %e, "cannot check the subscription with the broker")
            }
        }
    }
    Ok(())
}
