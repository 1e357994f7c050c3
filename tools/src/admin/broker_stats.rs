//! `brokerConsumeStats`: every subscription group's backlog on one broker
//! (GET_BROKER_CONSUME_STATS), queue by queue, as RocketMQ's tool prints it.

use clap::Args;
use serde::Serialize;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::GET_BROKER_CONSUME_STATS;

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::table::{format_millis, Table};

#[derive(Args, Debug, Clone)]
pub struct BrokerConsumeStatsArgs {
    /// The broker.
    #[arg(short = 'b', long = "brokerAddr", value_name = "ADDR")]
    pub broker_addr: String,
    /// Accepted for Apache's command line; the request is bounded by `--timeout-ms`.
    #[arg(short = 't', long = "timeoutMillis", value_name = "MS")]
    pub timeout_millis: Option<u64>,
    /// Only queues at least this far behind.
    #[arg(short = 'l', long = "level", value_name = "DIFF", default_value_t = 0)]
    pub level: i64,
    /// `true`: ordered topics only.
    #[arg(short = 'o', long = "order", value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set)]
    pub order: bool,
}

/// One queue of one group.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct QueueBacklog {
    topic: String,
    group: String,
    broker_name: String,
    queue_id: i32,
    broker_offset: i64,
    consumer_offset: i64,
    diff: i64,
    /// Store time of the last message the group consumed there (0: none yet).
    last_timestamp: i64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokerBacklog {
    broker_addr: String,
    queues: Vec<QueueBacklog>,
    total_diff: i64,
    total_inflight_diff: i64,
}

/// **Vostok differs:** Apache leaves out the queues a group has not consumed from
/// yet (no last time), which hides a group that never started; they are shown here.
pub async fn broker_consume_stats(
    admin: &AdminClient,
    args: &BrokerConsumeStatsArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let list = admin
        .fetch_consume_stats_in_broker(&args.broker_addr, args.order)
        .await
        .map_err(during(GET_BROKER_CONSUME_STATS))?;
    let mut queues = Vec::new();
    for groups in &list.consume_stats_list {
        for (group, stats) in groups {
            for s in stats {
                for (mq, o) in &s.offset_table {
                    let diff = o.broker_offset - o.consumer_offset;
                    if diff < args.level {
                        continue;
                    }
                    queues.push(QueueBacklog {
                        topic: mq.topic.clone(),
                        group: group.clone(),
                        broker_name: mq.broker_name.clone(),
                        queue_id: mq.queue_id,
                        broker_offset: o.broker_offset,
                        consumer_offset: o.consumer_offset,
                        diff,
                        last_timestamp: o.last_timestamp,
                    });
                }
            }
        }
    }
    let backlog = BrokerBacklog {
        broker_addr: if list.broker_addr.is_empty() {
            args.broker_addr.clone()
        } else {
            list.broker_addr.clone()
        },
        queues,
        total_diff: list.total_diff,
        total_inflight_diff: list.total_inflight_diff,
    };
    out.render(&backlog, |b| {
        let mut t = Table::new(&[
            "#Topic",
            "#Group",
            "#Broker Name",
            "#QID",
            "#Broker Offset",
            "#Consumer Offset",
            "#Diff",
            "#LastTime",
        ]);
        for q in &b.queues {
            t.row(vec![
                q.topic.clone(),
                q.group.clone(),
                q.broker_name.clone(),
                q.queue_id.to_string(),
                q.broker_offset.to_string(),
                q.consumer_offset.to_string(),
                q.diff.to_string(),
                format_millis(q.last_timestamp),
            ]);
        }
        format!("{}\nDiff Total: {}\n", t.render(), b.total_diff)
    })
}
