//! The verbs that read single messages: `queryMsgByOffset` (by queue and offset,
//! with the tools' pull) and `queryMsgByUniqueKey` (by UNIQ_KEY through the index),
//! printed as RocketMQ's commands print them; and what the print verbs (`print`)
//! share: the JSON form of a message, time flags, offsets of a queue.

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;
use vostok_client::{AdminClient, MessageQueue, PullResult, PullStatus};
use vostok_remoting::protocol::message::property::KEYS;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::request_code::{
    GET_MAX_OFFSET, GET_MIN_OFFSET, PULL_MESSAGE, SEARCH_OFFSET_BY_TIMESTAMP,
};

use super::error::{during, AdminError};
use super::message::{describe, query_unique_key};
use super::output::JsonFlag;
use super::topic::route;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageJson {
    pub msg_id: String,
    pub offset_msg_id: String,
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub commit_log_offset: i64,
    pub tags: Option<String>,
    pub keys: Option<String>,
    pub born_timestamp: i64,
    pub store_timestamp: i64,
    pub born_host: String,
    pub store_host: String,
    pub reconsume_times: i32,
    pub properties: BTreeMap<String, String>,
    /// The body as UTF-8 (invalid bytes replaced).
    pub body: String,
}

impl From<&MessageExt> for MessageJson {
    fn from(m: &MessageExt) -> Self {
        MessageJson {
            msg_id: m.msg_id(),
            offset_msg_id: m.offset_msg_id(),
            topic: m.topic.clone(),
            queue_id: m.queue_id,
            queue_offset: m.queue_offset,
            commit_log_offset: m.commit_log_offset,
            tags: m.tags().map(str::to_owned),
            keys: m.property(KEYS).map(str::to_owned),
            born_timestamp: m.born_timestamp,
            store_timestamp: m.store_timestamp,
            born_host: m.born_host.to_string(),
            store_host: m.store_host.to_string(),
            reconsume_times: m.reconsume_times,
            properties: m
                .properties
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            body: String::from_utf8_lossy(&m.body).into_owned(),
        }
    }
}

/// Java's `MessageQueue.toString`.
pub(super) fn mq_text(mq: &MessageQueue) -> String {
    format!(
        "MessageQueue [topic={}, brokerName={}, queueId={}]",
        mq.topic, mq.broker_name, mq.queue_id
    )
}

/// Java's `PullStatus` names.
pub(super) fn status_name(s: PullStatus) -> &'static str {
    match s {
        PullStatus::Found => "FOUND",
        PullStatus::NoNewMsg => "NO_NEW_MSG",
        PullStatus::NoMatchedMsg => "NO_MATCHED_MSG",
        PullStatus::OffsetIllegal => "OFFSET_ILLEGAL",
    }
}

/// A time flag: ms since the epoch, or `yyyy-MM-dd#HH:mm:ss:SSS` (read as UTC).
pub fn parse_timestamp(value: &str) -> Result<i64, AdminError> {
    let v = value.trim();
    if let Ok(ms) = v.parse::<i64>() {
        return Ok(ms);
    }
    let bad = || AdminError::Invalid(format!("{v:?} is neither ms nor yyyy-MM-dd#HH:mm:ss:SSS"));
    let (date, time) = v.split_once('#').ok_or_else(bad)?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let t: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let (&[y, mo, day], &[h, mi, s, ms]) = (&d[..], &t[..]) else {
        return Err(bad());
    };
    // Days since the epoch of a proleptic Gregorian date (the inverse of the table's
    // civil-from-days).
    let (y, mo) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(days * 86_400_000 + h * 3_600_000 + mi * 60_000 + s * 1000 + ms)
}

/// The address of `broker_name` in `topic`'s route.
pub(super) async fn broker_addr(
    admin: &AdminClient,
    topic: &str,
    broker_name: &str,
) -> Result<String, AdminError> {
    let route = route(admin, topic).await?;
    route
        .broker(broker_name)
        .and_then(|b| b.select_addr())
        .map(str::to_owned)
        .ok_or_else(|| {
            AdminError::NotFound(format!(
                "broker {broker_name} is not in the route of {topic}"
            ))
        })
}

pub(super) async fn pull(
    admin: &AdminClient,
    addr: &str,
    group: Option<&str>,
    mq: &MessageQueue,
    expression: &str,
    offset: i64,
    n: i32,
) -> Result<PullResult, AdminError> {
    admin
        .pull(addr, group, mq, expression, offset, n)
        .await
        .map_err(during(PULL_MESSAGE))
}

/// `[min, max)` offsets of a queue, narrowed to store times `begin`/`end` when given.
pub(super) async fn offsets(
    admin: &AdminClient,
    addr: &str,
    mq: &MessageQueue,
    begin: Option<&str>,
    end: Option<&str>,
) -> Result<(i64, i64), AdminError> {
    let mut min = admin
        .min_offset(addr, mq)
        .await
        .map_err(during(GET_MIN_OFFSET))?;
    let mut max = admin
        .max_offset(addr, mq)
        .await
        .map_err(during(GET_MAX_OFFSET))?;
    if let Some(b) = begin {
        min = admin
            .search_offset(addr, mq, parse_timestamp(b)?)
            .await
            .map_err(during(SEARCH_OFFSET_BY_TIMESTAMP))?;
    }
    if let Some(e) = end {
        max = admin
            .search_offset(addr, mq, parse_timestamp(e)?)
            .await
            .map_err(during(SEARCH_OFFSET_BY_TIMESTAMP))?;
    }
    Ok((min, max))
}

#[derive(Args, Debug, Clone)]
pub struct QueryMsgByOffsetArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Broker name.
    #[arg(short = 'b', long = "brokerName", value_name = "NAME")]
    pub broker_name: String,
    /// Queue id.
    #[arg(short = 'i', long = "queueId", value_name = "ID")]
    pub queue_id: i32,
    /// Queue offset.
    #[arg(short = 'o', long = "offset")]
    pub offset: i64,
}

pub async fn query_msg_by_offset(
    admin: &AdminClient,
    args: &QueryMsgByOffsetArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let topic = args.topic.trim();
    let addr = broker_addr(admin, topic, args.broker_name.trim()).await?;
    let mq = MessageQueue::new(topic, args.broker_name.trim(), args.queue_id);
    let result = pull(admin, &addr, None, &mq, "*", args.offset, 1).await?;
    let Some(m) = result.messages.first() else {
        return Err(AdminError::NotFound(format!(
            "no message at offset {} of {} ({})",
            args.offset,
            mq_text(&mq),
            status_name(result.status)
        )));
    };
    out.render(&MessageJson::from(m), |_| describe(m))
}

#[derive(Args, Debug, Clone)]
pub struct QueryMsgByUniqueKeyArgs {
    /// The message id a send returns (UNIQ_KEY).
    #[arg(short = 'i', long = "msgId", value_name = "ID")]
    pub msg_id: String,
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Print every message found (a retried send may be stored twice), not only the
    /// first.
    #[arg(short = 'a', long = "showAll", default_value_t = false)]
    pub show_all: bool,
}

pub async fn query_msg_by_unique_key(
    admin: &AdminClient,
    args: &QueryMsgByUniqueKeyArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut found = query_unique_key(admin, args.topic.trim(), args.msg_id.trim()).await?;
    found.sort_by_key(|m| (m.store_timestamp, m.commit_log_offset));
    if found.is_empty() {
        return Err(AdminError::NotFound(format!(
            "no message with unique key {} in topic {}",
            args.msg_id, args.topic
        )));
    }
    if !args.show_all {
        found.truncate(1);
    }
    let json: Vec<MessageJson> = found.iter().map(MessageJson::from).collect();
    out.render(&json, |_| {
        found.iter().map(describe).collect::<Vec<_>>().join("\n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_both_forms() {
        assert_eq!(parse_timestamp("1700000000123").unwrap(), 1_700_000_000_123);
        assert_eq!(
            parse_timestamp("2023-11-14#22:13:20:123").unwrap(),
            1_700_000_000_123
        );
        assert_eq!(
            parse_timestamp("2000-02-29#00:00:00:000").unwrap(),
            951_782_400_000
        );
        assert!(parse_timestamp("yesterday").is_err());
        assert!(parse_timestamp("2023-11#22:13").is_err());
    }
}
