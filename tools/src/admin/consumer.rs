//! `consumerProgress`: a group's committed offset against each queue's max offset.

use std::collections::BTreeSet;

use vostok_remoting::protocol::topic;

use super::args::ConsumerProgressArgs;
use super::rpc::Admin;
use super::table::Table;
use super::topic::broker_queues;
use super::AdminError;

/// Topics from `-t`, else from the brokers: the subscriptions of the online group
/// (GET_CONSUMER_CONNECTION_LIST), else the topics it has offsets for
/// (GET_CONSUME_STATS). Then GET_MAX_OFFSET and QUERY_CONSUMER_OFFSET per queue.
pub async fn consumer_progress(
    admin: &Admin,
    args: &ConsumerProgressArgs,
) -> Result<String, AdminError> {
    topic::validate_group(&args.group).map_err(AdminError::Invalid)?;
    let topics = match &args.topic {
        Some(t) => [t.clone()].into(),
        None => group_topics(admin, &args.group).await?,
    };
    let mut table = Table::new(&[
        "#Topic",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
    ]);
    let mut diff_total = 0i64;
    for topic in &topics {
        let route = admin.topic_route(topic).await?;
        for (broker_name, addr, queues) in broker_queues(&route) {
            for queue_id in 0..queues {
                let broker_offset = admin.max_offset(&addr, topic, queue_id).await?;
                let consumer_offset = admin
                    .consumer_offset(&addr, &args.group, topic, queue_id)
                    .await?;
                // A queue the group never committed counts from 0, as RocketMQ's
                // consume stats do.
                let diff = broker_offset - consumer_offset.unwrap_or(0).max(0);
                diff_total += diff;
                table.row(vec![
                    topic.clone(),
                    broker_name.clone(),
                    queue_id.to_string(),
                    broker_offset.to_string(),
                    consumer_offset.map(|o| o.to_string()).unwrap_or_default(),
                    diff.to_string(),
                ]);
            }
        }
    }
    let mut out = table.render();
    out.push_str(&format!("\nDiff Total: {diff_total}\n"));
    Ok(out)
}

/// The non-retry topics of `group`, as the master brokers know them.
async fn group_topics(admin: &Admin, group: &str) -> Result<BTreeSet<String>, AdminError> {
    let info = admin.cluster_info().await?;
    let masters: Vec<String> = info
        .broker_addr_table
        .values()
        .filter_map(|b| b.master_addr().map(str::to_owned))
        .collect();
    let mut topics = BTreeSet::new();
    for addr in &masters {
        if let Some(connection) = admin.consumer_connection(addr, group).await? {
            topics.extend(connection.subscription_table.into_keys());
        }
    }
    if topics.is_empty() {
        for addr in &masters {
            if let Some(stats) = admin.consume_stats(addr, group, None).await? {
                topics.extend(stats.offset_table.into_keys().map(|mq| mq.topic));
            }
        }
    }
    topics.retain(|t| !topic::is_retry_topic(t));
    if topics.is_empty() {
        return Err(AdminError::NotFound(format!(
            "consumer group {group} is not online and has no offsets on any broker; pass -t TOPIC"
        )));
    }
    Ok(topics)
}
