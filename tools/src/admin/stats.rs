//! `statsAll`: for every topic (retry and DLQ topics aside) and each group consuming
//! it, the backlog and the in/out rates and 24-hour counts, as RocketMQ's command
//! prints them. Rates and counts come from VIEW_BROKER_STATS_DATA (the last minute's
//! rate, the day's count); a broker that keeps no such counters (a Vostok broker with
//! neither the exporter nor the console on) answers REQUEST_CODE_NOT_SUPPORTED, and
//! those cells print `-` (and are `null` in `--json`) rather than a made-up zero.

use std::collections::BTreeSet;

use clap::Args;
use serde::Serialize;
use vostok_client::admin::stats::BrokerStatsData;
use vostok_client::AdminClient;
use vostok_remoting::protocol::request_code::{
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_CONSUME_STATS, QUERY_TOPIC_CONSUME_BY_WHO,
};
use vostok_remoting::protocol::response_code::REQUEST_CODE_NOT_SUPPORTED;
use vostok_remoting::protocol::topic::{DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::topic::route;

#[derive(Args, Debug, Clone)]
pub struct StatsAllArgs {
    /// Only topics with messages in or out in the last 24 hours (or whose rates are
    /// unknown).
    #[arg(short = 'a', long = "activeTopic", default_value_t = false)]
    pub active_topic: bool,
    /// Only this topic.
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
    /// Only the topics and groups of this namespace.
    #[arg(long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
}

/// One row: a topic and one of its groups (or none).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsRow {
    pub topic: String,
    pub consumer_group: Option<String>,
    pub accumulation: i64,
    pub in_tps: Option<f64>,
    pub out_tps: Option<f64>,
    pub in_msg_24_hour: Option<i64>,
    pub out_msg_24_hour: Option<i64>,
}

/// The sum over `masters` of one statistic; `None` when a broker does not keep it.
async fn stats(
    admin: &AdminClient,
    masters: &[String],
    name: &str,
    key: &str,
) -> Option<(f64, i64)> {
    let mut tps = 0.0;
    let mut sum = 0;
    for addr in masters {
        match admin.view_broker_stats_data(addr, name, key).await {
            Ok(d) => {
                let d: BrokerStatsData = d;
                tps += d.stats_minute.tps;
                sum += d.sum_24h();
            }
            Err(e) if e.response_code() == Some(REQUEST_CODE_NOT_SUPPORTED) => return None,
            // RocketMQ skips a broker that cannot answer (a key it never saw).
            Err(_) => {}
        }
    }
    Some((tps, sum))
}

async fn topic_rows(admin: &AdminClient, topic: &str) -> Result<Vec<StatsRow>, AdminError> {
    let route = route(admin, topic).await?;
    let masters: Vec<String> = route
        .broker_datas
        .iter()
        .filter_map(|b| b.master_addr().map(str::to_owned))
        .collect();
    let mut groups = BTreeSet::new();
    for addr in &masters {
        let list = admin
            .query_topic_consume_by_who(addr, topic)
            .await
            .map_err(during(QUERY_TOPIC_CONSUME_BY_WHO))?;
        groups.extend(list.group_list);
    }
    let put = stats(admin, &masters, "TOPIC_PUT_NUMS", topic).await;
    if groups.is_empty() {
        return Ok(vec![StatsRow {
            topic: topic.to_owned(),
            consumer_group: None,
            accumulation: 0,
            in_tps: put.map(|p| p.0),
            out_tps: None,
            in_msg_24_hour: put.map(|p| p.1),
            out_msg_24_hour: None,
        }]);
    }
    let mut rows = Vec::new();
    for group in groups {
        let get = stats(
            admin,
            &masters,
            "GROUP_GET_NUMS",
            &format!("{topic}@{group}"),
        )
        .await;
        let mut accumulation = 0;
        for addr in &masters {
            let consume = admin
                .examine_consume_stats(addr, &group, Some(topic))
                .await
                .map_err(during(GET_CONSUME_STATS))?;
            accumulation += consume
                .offset_table
                .values()
                .map(|o| o.broker_offset - o.consumer_offset)
                .sum::<i64>();
        }
        rows.push(StatsRow {
            topic: topic.to_owned(),
            consumer_group: Some(group),
            accumulation: accumulation.max(0),
            in_tps: put.map(|p| p.0),
            out_tps: get.map(|g| g.0),
            in_msg_24_hour: put.map(|p| p.1),
            out_msg_24_hour: get.map(|g| g.1),
        });
    }
    Ok(rows)
}

/// Active: messages in or out in 24 hours; a row whose counts are unknown is kept.
fn active(r: &StatsRow) -> bool {
    let out_known = r.consumer_group.is_none() || r.out_msg_24_hour.is_some();
    match r.in_msg_24_hour {
        Some(i) if out_known => i > 0 || r.out_msg_24_hour.is_some_and(|o| o > 0),
        _ => true,
    }
}

fn text(rows: &[StatsRow]) -> String {
    let mut out = format!(
        "{:<64}  {:<64} {:>12} {:>11} {:>11} {:>14} {:>14}\n",
        "#Topic",
        "#Consumer Group",
        "#Accumulation",
        "#InTPS",
        "#OutTPS",
        "#InMsg24Hour",
        "#OutMsg24Hour"
    );
    let tps = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    let count = |v: Option<i64>| v.map_or("-".to_owned(), |v| v.to_string());
    for r in rows {
        let (group, out_tps, out_msgs) = match &r.consumer_group {
            Some(g) => (g.as_str(), tps(r.out_tps), count(r.out_msg_24_hour)),
            None => ("", String::new(), "NO_CONSUMER".to_owned()),
        };
        out.push_str(&format!(
            "{:<64}  {:<64} {:>12} {:>11} {:>11} {:>14} {:>14}\n",
            r.topic,
            group,
            r.accumulation,
            tps(r.in_tps),
            out_tps,
            count(r.in_msg_24_hour),
            out_msgs
        ));
    }
    out
}

pub async fn stats_all(
    admin: &AdminClient,
    args: &StatsAllArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let topics = admin
        .fetch_all_topic_list()
        .await
        .map_err(during(GET_ALL_TOPIC_LIST_FROM_NAMESERVER))?
        .topic_list;
    let mut rows = Vec::new();
    for topic in topics {
        if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
        {
            continue;
        }
        if args.topic.as_deref().is_some_and(|t| t.trim() != topic)
            || !super::topic::shown(args.namespace.as_deref(), &topic)
        {
            continue;
        }
        // RocketMQ skips a topic it cannot describe (no route any more).
        match topic_rows(admin, &topic).await {
            Ok(r) => rows.extend(r),
            Err(AdminError::Request { .. }) if args.topic.is_none() => {}
            Err(e) => return Err(e),
        }
    }
    if args.active_topic {
        rows.retain(active);
    }
    out.render(&rows, |rows| text(rows))
}
