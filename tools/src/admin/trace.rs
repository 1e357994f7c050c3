//! `queryMsgTraceById`: a message's trace records (docs/trace.md), found through the
//! index of the trace topic's brokers by the message's id, and printed as RocketMQ's
//! tool prints them: the Pub records, then each consumer group's SubAfter records.
//! `--json` prints every record, SubBefore and EndTransaction included. A message
//! without records (its producer does not trace, or no broker has the trace topic) is
//! reported as such, not as the trace topic's missing route.

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;
use vostok_client::trace::data::{decode, TraceType};
use vostok_client::AdminClient;
use vostok_remoting::protocol::header::QueryMessageRequestHeader;
use vostok_remoting::protocol::message::property::{KEYS, KEY_SEPARATOR};
use vostok_remoting::protocol::response_code::TOPIC_NOT_EXIST;
use vostok_remoting::protocol::topic::TRACE_TOPIC;

use super::error::AdminError;
use super::message::query_route;
use super::output::{format_seconds, JsonFlag};

#[derive(Args, Debug, Clone)]
pub struct QueryMsgTraceByIdArgs {
    /// Message id (the UNIQ_KEY msgId a send returns).
    #[arg(short = 'i', long = "msgId", value_name = "ID")]
    pub msg_id: String,
    /// The trace topic.
    #[arg(short = 't', long = "traceTopic", default_value = TRACE_TOPIC)]
    pub trace_topic: String,
    /// Most trace messages asked of each broker.
    #[arg(short = 'c', long = "maxNum", value_name = "N", default_value_t = 64)]
    pub max_num: i32,
    /// Earliest store time of the trace messages, in ms since the epoch.
    #[arg(
        short = 'b',
        long = "beginTimestamp",
        value_name = "MS",
        default_value_t = 0
    )]
    pub begin_timestamp: i64,
    /// Latest store time of the trace messages, in ms since the epoch.
    #[arg(short = 'e', long = "endTimestamp", value_name = "MS", default_value_t = i64::MAX)]
    pub end_timestamp: i64,
}

/// One record about the message (Java `TraceView`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceView {
    pub trace_type: TraceType,
    pub msg_id: String,
    pub topic: String,
    pub tags: String,
    pub keys: String,
    pub group_name: String,
    /// The host that wrote the record (the trace message's born host).
    pub client_host: String,
    pub store_host: String,
    pub offset_msg_id: String,
    pub time_stamp: i64,
    pub cost_time: i32,
    pub status: &'static str,
    pub request_id: String,
    pub retry_times: i32,
    pub transaction_state: String,
}

pub async fn query_msg_trace_by_id(
    admin: &AdminClient,
    args: &QueryMsgTraceByIdArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let msg_id = args.msg_id.trim();
    let header = QueryMessageRequestHeader {
        topic: args.trace_topic.clone(),
        key: msg_id.to_owned(),
        max_num: args.max_num,
        begin_timestamp: args.begin_timestamp,
        end_timestamp: args.end_timestamp,
        unique_key_query: None,
    };
    let mut messages = match query_route(admin, &header).await {
        Ok(messages) => messages,
        // No broker has the trace topic: no producer of this cluster traces.
        Err(AdminError::Request { source, .. })
            if source.response_code() == Some(TOPIC_NOT_EXIST) =>
        {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    messages.retain(|m| {
        m.property(KEYS)
            .is_some_and(|keys| keys.split(KEY_SEPARATOR).any(|k| k == msg_id))
    });
    messages.sort_by_key(|m| (m.store_timestamp, m.commit_log_offset));
    let mut views = Vec::new();
    for m in &messages {
        let body = String::from_utf8_lossy(&m.body);
        for ctx in decode(&body) {
            let Some(bean) = ctx.beans.first() else {
                continue;
            };
            if bean.msg_id != msg_id {
                continue;
            }
            views.push(TraceView {
                trace_type: ctx.trace_type,
                msg_id: bean.msg_id.clone(),
                topic: bean.topic.clone(),
                tags: bean.tags.clone(),
                keys: bean.keys.clone(),
                group_name: ctx.group_name.clone(),
                client_host: m.born_host.ip().to_string(),
                store_host: bean.store_host.clone(),
                offset_msg_id: bean.offset_msg_id.clone(),
                time_stamp: ctx.time_stamp,
                cost_time: ctx.cost_time,
                status: if ctx.success { "success" } else { "failed" },
                request_id: ctx.request_id.clone(),
                retry_times: bean.retry_times,
                transaction_state: bean.transaction_state.clone(),
            });
        }
    }
    if views.is_empty() && !out.json {
        return Err(AdminError::NotFound(format!(
            "no trace recorded for this message (tracing is off for its producer, \
             or its records are not written yet): {msg_id} in {}",
            args.trace_topic
        )));
    }
    out.render(&views, |views| print_trace(views))
}

fn line(cells: [&str; 6]) -> String {
    format!(
        "{:<10} {:<20} {:<20} {:<20} {:<10} {:<10}\n",
        cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
    )
}

/// RocketMQ's layout: a table per Pub record, then one per consumer group of its
/// SubAfter records.
fn print_trace(views: &[TraceView]) -> String {
    let mut out = String::new();
    let mut groups: BTreeMap<&str, Vec<&TraceView>> = BTreeMap::new();
    for v in views {
        match v.trace_type {
            TraceType::Pub => {
                out.push_str(&line([
                    "#Type",
                    "#ProducerGroup",
                    "#ClientHost",
                    "#SendTime",
                    "#CostTimes",
                    "#Status",
                ]));
                out.push_str(&line([
                    "Pub",
                    &v.group_name,
                    &v.client_host,
                    &format_seconds(v.time_stamp),
                    &format!("{}ms", v.cost_time),
                    v.status,
                ]));
                out.push('\n');
            }
            TraceType::SubAfter => groups.entry(&v.group_name).or_default().push(v),
            _ => {}
        }
    }
    for subs in groups.values() {
        out.push_str(&line([
            "#Type",
            "#ConsumerGroup",
            "#ClientHost",
            "#ConsumerTime",
            "#CostTimes",
            "#Status",
        ]));
        for v in subs {
            out.push_str(&line([
                "Sub",
                &v.group_name,
                &v.client_host,
                &format_seconds(v.time_stamp),
                &format!("{}ms", v.cost_time),
                v.status,
            ]));
        }
        out.push('\n');
    }
    out
}
