//! `consumerProgress`: a group's committed offset against each queue's max offset,
//! and, from a Vostok broker (VOSTOK_GET_GROUP_LAG), how long the oldest unconsumed
//! message has waited (`#LagTime`), the group's retry queues and its DLQ count.

use clap::Args;
use serde::Serialize;
use std::collections::BTreeSet;

use vostok_client::{AdminClient, MessageQueue};
use vostok_remoting::protocol::request_code::{
    GET_CONSUMER_CONNECTION_LIST, GET_CONSUME_STATS, QUERY_CONSUMER_OFFSET, VOSTOK_GET_GROUP_LAG,
};
use vostok_remoting::protocol::response_code::{CONSUMER_NOT_ONLINE, REQUEST_CODE_NOT_SUPPORTED};
use vostok_remoting::protocol::topic;

use super::cluster::cluster_info;
use super::error::{during, unless_answered, AdminError};
use super::output::JsonFlag;
use super::table::Table;
use super::topic::{broker_queues, max_offset, route};

#[derive(Args, Debug, Clone)]
pub struct ConsumerProgressArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "groupName", value_name = "GROUP")]
    pub group: String,
    /// Only this topic; needed when no broker can tell the group's topics (the group is
    /// offline and the broker serves no GET_CONSUME_STATS).
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
}

/// Topics from `-t`, else from the brokers: the subscriptions of the online group
/// (GET_CONSUMER_CONNECTION_LIST), else the topics it has offsets for
/// (GET_CONSUME_STATS). Then GET_MAX_OFFSET and QUERY_CONSUMER_OFFSET per queue.
pub async fn consumer_progress(
    admin: &AdminClient,
    args: &ConsumerProgressArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    topic::validate_group(&args.group).map_err(AdminError::Invalid)?;
    let topics = match &args.topic {
        Some(t) => [t.clone()].into(),
        None => group_topics(admin, &args.group).await?,
    };
    let mut rows: Vec<ProgressRow> = Vec::new();
    let mut dlq_total = 0i64;
    let mut retry_rows = Vec::new();
    for topic in &topics {
        let route = route(admin, topic).await?;
        for (broker_name, addr, queues) in broker_queues(&route) {
            let lag = unless_answered(
                admin.group_lag(&addr, &args.group, Some(topic)).await,
                &[REQUEST_CODE_NOT_SUPPORTED],
            )
            .map_err(during(VOSTOK_GET_GROUP_LAG))?;
            let lag_secs = |t: &str, q: i32| {
                lag.as_ref()
                    .and_then(|l| l.queues.iter().find(|e| e.topic == t && e.queue_id == q))
                    .map(|e| e.latency_ms as f64 / 1000.0)
            };
            if let Some(l) = &lag {
                dlq_total = dlq_total.max(l.dlq_messages);
                for e in l.queues.iter().filter(|e| topic::is_retry_topic(&e.topic)) {
                    retry_rows.push(ProgressRow {
                        topic: e.topic.clone(),
                        broker_name: broker_name.clone(),
                        queue_id: e.queue_id,
                        broker_offset: e.broker_offset,
                        consumer_offset: (e.consumer_offset >= 0).then_some(e.consumer_offset),
                        diff: e.lag,
                        lag_secs: lag_secs(&e.topic, e.queue_id),
                    });
                }
            }
            for queue_id in 0..queues {
                let mq = MessageQueue::new(topic, &broker_name, queue_id);
                let broker_offset = max_offset(admin, &addr, &mq).await?;
                let consumer_offset = admin
                    .query_consumer_offset(&addr, &args.group, &mq)
                    .await
                    .map_err(during(QUERY_CONSUMER_OFFSET))?;
                // A queue the group never committed counts from 0, as RocketMQ's
                // consume stats do.
                let diff = broker_offset - consumer_offset.unwrap_or(0).max(0);
                rows.push(ProgressRow {
                    topic: topic.clone(),
                    broker_name: broker_name.clone(),
                    queue_id,
                    broker_offset,
                    consumer_offset,
                    diff,
                    lag_secs: lag_secs(topic, queue_id),
                });
            }
        }
    }
    let diff_total = rows.iter().map(|r| r.diff).sum();
    retry_rows.dedup();
    rows.extend(retry_rows);
    let progress = Progress {
        group: args.group.clone(),
        queues: rows,
        diff_total,
        dlq_messages: dlq_total,
    };
    out.render(&progress, progress_text)
}

/// A group's progress on one queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressRow {
    pub topic: String,
    pub broker_name: String,
    pub queue_id: i32,
    pub broker_offset: i64,
    /// `None`: the group never committed an offset on this queue.
    pub consumer_offset: Option<i64>,
    pub diff: i64,
    /// How long the oldest unconsumed message has waited (a Vostok broker only).
    pub lag_secs: Option<f64>,
}

/// `consumerProgress` as `--json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub group: String,
    pub queues: Vec<ProgressRow>,
    pub diff_total: i64,
    pub dlq_messages: i64,
}

fn progress_text(p: &Progress) -> String {
    let mut table = Table::new(&[
        "#Topic",
        "#Broker Name",
        "#QID",
        "#Broker Offset",
        "#Consumer Offset",
        "#Diff",
        "#LagTime",
    ]);
    for r in &p.queues {
        table.row(vec![
            r.topic.clone(),
            r.broker_name.clone(),
            r.queue_id.to_string(),
            r.broker_offset.to_string(),
            r.consumer_offset.map(|o| o.to_string()).unwrap_or_default(),
            r.diff.to_string(),
            r.lag_secs.map(|s| format!("{s:.1}s")).unwrap_or_default(),
        ]);
    }
    let mut out = table.render();
    out.push_str(&format!("\nDiff Total: {}\n", p.diff_total));
    if p.dlq_messages > 0 {
        out.push_str(&format!(
            "DLQ: {} messages in %DLQ%{}\n",
            p.dlq_messages, p.group
        ));
    }
    out
}

/// The non-retry topics of `group`, as the master brokers know them.
async fn group_topics(admin: &AdminClient, group: &str) -> Result<BTreeSet<String>, AdminError> {
    let info = cluster_info(admin).await?;
    let masters: Vec<String> = info
        .broker_addr_table
        .values()
        .filter_map(|b| b.master_addr().map(str::to_owned))
        .collect();
    let mut topics = BTreeSet::new();
    for addr in &masters {
        let connection = unless_answered(
            admin.examine_consumer_connection_info(addr, group).await,
            &[CONSUMER_NOT_ONLINE, REQUEST_CODE_NOT_SUPPORTED],
        )
        .map_err(during(GET_CONSUMER_CONNECTION_LIST))?;
        if let Some(connection) = connection {
            topics.extend(connection.subscription_table.into_keys());
        }
    }
    if topics.is_empty() {
        for addr in &masters {
            let stats = unless_answered(
                admin.examine_consume_stats(addr, group, None).await,
                &[REQUEST_CODE_NOT_SUPPORTED],
            )
            .map_err(during(GET_CONSUME_STATS))?;
            if let Some(stats) = stats {
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
