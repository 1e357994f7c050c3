//! What a user confined to namespaces is answered (docs/security.md#namespaces): the
//! administrative reads it may make ([`vostok_auth::Access::Scoped`] in `access`) give
//! only the rows of its namespaces, and its heartbeats may register no producer group
//! of another namespace.
//!
//! The lists are narrowed after the processor built them, so every processor answers
//! everyone alike and the confinement lives in this one place. A body this module
//! cannot read back is not handed out: the confined user gets a SYSTEM_ERROR instead.

use vostok_auth::namespace::Confinement;
use vostok_auth::{Access, Denied, Resource};
use vostok_remoting::protocol::body::{
    ConsumeStats, ConsumeStatsList, HeartbeatData, SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
};
use vostok_remoting::protocol::{json, request_code as code, response_code};
use vostok_remoting::RemotingCommand;

/// `response` to request `code`, narrowed to the namespaces of `confinement`.
pub(super) fn narrow(
    code: i32,
    response: RemotingCommand,
    confinement: &Confinement,
) -> RemotingCommand {
    if response.code != response_code::SUCCESS || response.body.is_empty() {
        return response;
    }
    let admits = |name: &str| confinement.admits(name);
    let body = match code {
        code::GET_ALL_TOPIC_CONFIG => json::from_slice::<TopicConfigSerializeWrapper>(
            "TopicConfigSerializeWrapper",
            &response.body,
        )
        .map(|mut w| {
            w.topic_config_table.retain(|t, _| admits(t));
            if let Some(m) = &mut w.topic_queue_mapping_detail_map {
                m.retain(|t, _| admits(t));
            }
            if let Some(m) = &mut w.topic_queue_mapping_info_map {
                m.retain(|t, _| admits(t));
            }
            json::to_vec(&w)
        })
        .map_err(|e| e.to_string()),
        code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => {
            json::from_slice::<SubscriptionGroupWrapper>("SubscriptionGroupWrapper", &response.body)
                .map(|mut w| {
                    w.subscription_group_table.retain(|g, _| admits(g));
                    json::to_vec(&w)
                })
                .map_err(|e| e.to_string())
        }
        code::GET_BROKER_CONSUME_STATS => ConsumeStatsList::decode(&response.body)
            .map(|mut list| {
                for groups in &mut list.consume_stats_list {
                    groups.retain(|g, _| admits(g));
                    for stats in groups.values_mut().flatten() {
                        retain_topics(stats, confinement);
                    }
                }
                list.consume_stats_list.retain(|groups| !groups.is_empty());
                let all = || {
                    list.consume_stats_list
                        .iter()
                        .flat_map(|m| m.values().flatten())
                };
                list.total_diff = all().map(ConsumeStats::total_diff).sum();
                list.total_inflight_diff = all().map(ConsumeStats::total_inflight_diff).sum();
                list.encode()
            })
            .map_err(|e| e.to_string()),
        code::GET_CONSUME_STATS => ConsumeStats::decode(&response.body)
            .map(|mut stats| {
                retain_topics(&mut stats, confinement);
                stats.encode().into_bytes()
            })
            .map_err(|e| e.to_string()),
        code::QUERY_TOPIC_CONSUME_BY_WHO => {
            json::from_slice::<GroupList>("GroupList", &response.body)
                .map(|mut list| {
                    list.group_list.retain(|g| admits(g));
                    json::to_vec(&list)
                })
                .map_err(|e| e.to_string())
        }
        _ => return response,
    };
    match body {
        Ok(body) => response.with_body(body),
        Err(reason) => {
            tracing::warn!(code, %reason, "a confined user's list could not be narrowed");
            RemotingCommand::response(
                response_code::SYSTEM_ERROR,
                Some(format!(
                    "the answer to {} could not be narrowed to your namespace",
                    code::name(code)
                )),
            )
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupList {
    #[serde(default)]
    group_list: std::collections::BTreeSet<String>,
}

fn retain_topics(stats: &mut ConsumeStats, confinement: &Confinement) {
    stats
        .offset_table
        .retain(|mq, _| confinement.admits(&mq.topic));
}

/// Refuses a HEART_BEAT of `user` that registers a producer group outside its
/// namespaces (its consumer groups and subscriptions are the guard's: they need
/// permissions); client-internal groups such as `CLIENT_INNER_PRODUCER` pass.
pub(super) fn check_heartbeat(
    request: &RemotingCommand,
    user: &str,
    confinement: &Confinement,
) -> Result<(), Denied> {
    if request.code != code::HEART_BEAT {
        return Ok(());
    }
    // The guard has read the body already: one it cannot read was refused there.
    let Ok(data) = HeartbeatData::decode(&request.body) else {
        return Ok(());
    };
    let groups = data
        .producer_data_set
        .iter()
        .map(|p| Resource::group(&p.group_name))
        .collect();
    confinement.check(user, request.code, &Access::Names(groups))
}
