//! `resetOffsetByTime` and `skipAccumulatedMessage`: move a consumer group's offsets of
//! a topic to a time (or to the queues' ends) on every master of the topic's route.
//! With clients online the broker does it and tells them
//! (INVOKE_BROKER_TO_RESET_OFFSET); with nobody online the tool commits the offsets
//! itself (UPDATE_CONSUMER_OFFSET), as RocketMQ's `ResetOffsetByTimeOldCommand` does.

use clap::Args;
use serde::Serialize;
use vostok_client::{AdminClient, ClientError, MessageQueue};
use vostok_remoting::protocol::request_code::{
    GET_MAX_OFFSET, INVOKE_BROKER_TO_RESET_OFFSET, QUERY_CONSUMER_OFFSET,
    SEARCH_OFFSET_BY_TIMESTAMP, UPDATE_CONSUMER_OFFSET,
};
use vostok_remoting::protocol::response_code::CONSUMER_NOT_ONLINE;
use vostok_remoting::support::time::now_millis;

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::read::parse_timestamp;
use super::topic::{broker_queues, route};

#[derive(Args, Debug, Clone)]
pub struct ResetOffsetByTimeArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "group")]
    pub group: String,
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// `now`, ms since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS (UTC).
    #[arg(short = 's', long = "timestamp")]
    pub timestamp: String,
    /// Also move offsets forward (else only back).
    #[arg(short = 'f', long = "force", value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub force: bool,
}

#[derive(Args, Debug, Clone)]
pub struct SkipAccumulatedMessageArgs {
    /// Consumer group.
    #[arg(short = 'g', long = "group")]
    pub group: String,
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Also move offsets forward (else only back).
    #[arg(short = 'f', long = "force", value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub force: bool,
}

/// One queue after the reset.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueReset {
    pub broker_name: String,
    pub queue_id: i32,
    pub offset: i64,
    /// How: `broker` (clients told) or `tool` (nobody online; committed directly).
    pub by: &'static str,
}

/// Moves the group's offsets of `topic` to `timestamp` (`-1`: the queues' ends).
async fn reset(
    admin: &AdminClient,
    group: &str,
    topic: &str,
    timestamp: i64,
    force: bool,
) -> Result<Vec<QueueReset>, AdminError> {
    let route = route(admin, topic).await?;
    let mut out = Vec::new();
    for (broker, addr, queues) in broker_queues(&route) {
        let answer = admin
            .reset_offset_by_timestamp(&addr, topic, group, timestamp, force)
            .await;
        match answer {
            Ok(table) => {
                out.extend(
                    table
                        .offset_table
                        .into_iter()
                        .map(|(mq, offset)| QueueReset {
                            broker_name: mq.broker_name,
                            queue_id: mq.queue_id,
                            offset,
                            by: "broker",
                        }),
                )
            }
            Err(e) if e.response_code() == Some(CONSUMER_NOT_ONLINE) => {
                for q in 0..queues {
                    let mq = MessageQueue::new(topic, broker.as_str(), q);
                    let offset = offline_reset(admin, &addr, group, &mq, timestamp, force).await?;
                    out.push(QueueReset {
                        broker_name: broker.clone(),
                        queue_id: q,
                        offset,
                        by: "tool",
                    });
                }
            }
            Err(e) => return Err(during(INVOKE_BROKER_TO_RESET_OFFSET)(e)),
        }
    }
    out.sort_by(|a, b| (&a.broker_name, a.queue_id).cmp(&(&b.broker_name, b.queue_id)));
    Ok(out)
}

/// One queue of a group with nobody online: the offset at the time (only backwards
/// unless `force`), committed by the tool.
async fn offline_reset(
    admin: &AdminClient,
    addr: &str,
    group: &str,
    mq: &MessageQueue,
    timestamp: i64,
    force: bool,
) -> Result<i64, AdminError> {
    let committed = admin
        .query_consumer_offset(addr, group, mq)
        .await
        .map_err(during(QUERY_CONSUMER_OFFSET))?;
    let at_time = if timestamp == -1 {
        admin
            .max_offset(addr, mq)
            .await
            .map_err(during(GET_MAX_OFFSET))?
    } else {
        admin
            .search_offset(addr, mq, timestamp)
            .await
            .map_err(during(SEARCH_OFFSET_BY_TIMESTAMP))?
    };
    let offset = match committed {
        Some(c) if !force && at_time >= c => c,
        _ => at_time,
    };
    admin
        .update_consumer_offset(addr, group, mq, offset)
        .await
        .map_err(|e: ClientError| during(UPDATE_CONSUMER_OFFSET)(e))?;
    Ok(offset)
}

fn table(rows: &[QueueReset]) -> String {
    let mut out = format!(
        "{:<40}  {:<40}  {:<40}\n",
        "#brokerName", "#queueId", "#offset"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<40}  {:<40}  {:<40}\n",
            r.broker_name, r.queue_id, r.offset
        ));
    }
    out
}

pub async fn reset_offset_by_time(
    admin: &AdminClient,
    args: &ResetOffsetByTimeArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let raw = args.timestamp.trim();
    let timestamp = if raw == "now" {
        now_millis()
    } else {
        parse_timestamp(raw)?
    };
    let (group, topic) = (args.group.trim(), args.topic.trim());
    let rows = reset(admin, group, topic, timestamp, args.force).await?;
    out.render(&rows, |rows| {
        format!(
            "start reset consumer offset by specified, group[{group}], topic[{topic}], force[{}], \
             timestamp(string)[{raw}], timestamp(long)[{timestamp}]\n{}",
            args.force,
            table(rows)
        )
    })
}

pub async fn skip_accumulated_message(
    admin: &AdminClient,
    args: &SkipAccumulatedMessageArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let rows = reset(admin, args.group.trim(), args.topic.trim(), -1, args.force).await?;
    out.render(&rows, |rows| table(rows))
}
