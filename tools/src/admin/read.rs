//! The verbs that read messages without consuming them as a group: `queryMsgByOffset`
//! (one message by queue and offset), `queryMsgByUniqueKey` (by UNIQ_KEY through the
//! index), `printMsg` (every queue of a topic), `printMsgByQueue` (one queue, with tag
//! counts) and `consumeMessage` (pull a number of messages), with the tools' pull
//! (group `TOOLS_CONSUMER` unless `-g`), printed as RocketMQ's commands print them.

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;
use vostok_client::{AdminClient, MessageQueue, PullResult, PullStatus};
use vostok_remoting::protocol::message::property::KEYS;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::request_code::{
    GET_MAX_OFFSET, GET_MIN_OFFSET, PULL_MESSAGE, SEARCH_OFFSET_BY_TIMESTAMP,
};

use super::message::{describe, query_unique_key};
use super::output::JsonFlag;
use super::topic::{broker_queues, route};
use super::{during, AdminError};

/// A message for `--json`.
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
fn mq_text(mq: &MessageQueue) -> String {
    format!(
        "MessageQueue [topic={}, brokerName={}, queueId={}]",
        mq.topic, mq.broker_name, mq.queue_id
    )
}

/// Java's `PullStatus` names.
fn status_name(s: PullStatus) -> &'static str {
    match s {
        PullStatus::Found => "FOUND",
        PullStatus::NoNewMsg => "NO_NEW_MSG",
        PullStatus::NoMatchedMsg => "NO_MATCHED_MSG",
        PullStatus::OffsetIllegal => "OFFSET_ILLEGAL",
    }
}

/// One message as RocketMQ's print verbs show it: `MSGID: id MessageExt [...] BODY: body`.
fn print_line(m: &MessageExt, broker_name: &str, print_body: bool) -> String {
    let mut props: Vec<(&str, &str)> = m.properties.iter().collect();
    props.sort();
    let props: Vec<String> = props.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let body = if print_body {
        String::from_utf8_lossy(&m.body).into_owned()
    } else {
        "NOT PRINT BODY".to_owned()
    };
    format!(
        "MSGID: {} MessageExt [brokerName={broker_name}, queueId={}, storeSize={}, queueOffset={}, \
         sysFlag={}, bornTimestamp={}, bornHost=/{}, storeTimestamp={}, storeHost=/{}, msgId={}, \
         commitLogOffset={}, bodyCRC={}, reconsumeTimes={}, preparedTransactionOffset={}, \
         toString()=Message{{topic='{}', flag={}, properties={{{}}}, body=[{} bytes]}}] BODY: {body}\n",
        m.msg_id(),
        m.queue_id,
        m.store_size,
        m.queue_offset,
        m.sys_flag,
        m.born_timestamp,
        m.born_host,
        m.store_timestamp,
        m.store_host,
        m.offset_msg_id(),
        m.commit_log_offset,
        m.body_crc,
        m.reconsume_times,
        m.prepared_transaction_offset,
        m.topic,
        m.flag,
        props.join(", "),
        m.body.len(),
    )
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
async fn broker_addr(
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

async fn pull(
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
async fn offsets(
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
    #[command(flatten)]
    pub output: JsonFlag,
}

pub async fn query_msg_by_offset(
    admin: &AdminClient,
    args: &QueryMsgByOffsetArgs,
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
    args.output.render(&MessageJson::from(m), |_| describe(m))
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
    #[command(flatten)]
    pub output: JsonFlag,
}

pub async fn query_msg_by_unique_key(
    admin: &AdminClient,
    args: &QueryMsgByUniqueKeyArgs,
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
    args.output.render(&json, |_| {
        found.iter().map(describe).collect::<Vec<_>>().join("\n")
    })
}

#[derive(Args, Debug, Clone)]
pub struct PrintMsgArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Tag expression (`TagA || TagB`).
    #[arg(short = 's', long = "subExpression", default_value = "*")]
    pub sub_expression: String,
    /// From this store time: ms, or yyyy-MM-dd#HH:mm:ss:SSS (UTC).
    #[arg(short = 'b', long = "beginTimestamp")]
    pub begin: Option<String>,
    /// Up to this store time.
    #[arg(short = 'e', long = "endTimestamp")]
    pub end: Option<String>,
    /// Print bodies.
    #[arg(
        short = 'd',
        long = "printBody",
        value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set
    )]
    pub print_body: bool,
    #[command(flatten)]
    pub output: JsonFlag,
}

/// Reads `[min, max)` of a queue 32 at a time, RocketMQ's loop: the messages, and the
/// status line the loop ended with (None when it reached `max`).
async fn read_queue(
    admin: &AdminClient,
    addr: &str,
    group: Option<&str>,
    mq: &MessageQueue,
    expression: &str,
    (min, max): (i64, i64),
    mut on_status: impl FnMut(PullStatus, i64),
) -> Result<Vec<MessageExt>, AdminError> {
    let mut out = Vec::new();
    let mut offset = min;
    while offset < max {
        let n = i32::try_from((max - offset).min(32)).unwrap_or(32);
        let result = pull(admin, addr, group, mq, expression, offset, n).await?;
        offset = result.next_begin_offset.max(offset + 1);
        match result.status {
            PullStatus::Found => out.extend(result.messages),
            PullStatus::NoMatchedMsg => on_status(result.status, offset),
            PullStatus::NoNewMsg | PullStatus::OffsetIllegal => {
                on_status(result.status, offset);
                break;
            }
        }
    }
    Ok(out)
}

pub async fn print_msg(admin: &AdminClient, args: &PrintMsgArgs) -> Result<String, AdminError> {
    let topic = args.topic.trim();
    let route = route(admin, topic).await?;
    let mut text = String::new();
    let mut all = Vec::new();
    for (broker, addr, queues) in broker_queues(&route) {
        for queue_id in 0..queues {
            let mq = MessageQueue::new(topic, broker.as_str(), queue_id);
            let range = offsets(
                admin,
                &addr,
                &mq,
                args.begin.as_deref(),
                args.end.as_deref(),
            )
            .await?;
            text.push_str(&format!(
                "minOffset={}, maxOffset={}, {}\n",
                range.0,
                range.1,
                mq_text(&mq)
            ));
            let mut status_lines = String::new();
            let msgs = read_queue(
                admin,
                &addr,
                None,
                &mq,
                &args.sub_expression,
                range,
                |s, o| {
                    let what = if s == PullStatus::NoMatchedMsg {
                        "no matched msg"
                    } else {
                        "print msg finished"
                    };
                    status_lines.push_str(&format!(
                        "{} {what}. status={}, offset={o}\n",
                        mq_text(&mq),
                        status_name(s)
                    ));
                },
            )
            .await?;
            for m in &msgs {
                text.push_str(&print_line(m, &broker, args.print_body));
            }
            text.push_str(&status_lines);
            text.push_str("--------------------------------------------------------\n");
            all.extend(msgs.iter().map(MessageJson::from));
        }
    }
    args.output.render(&all, |_| text)
}

#[derive(Args, Debug, Clone)]
pub struct PrintMsgByQueueArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Broker name.
    #[arg(short = 'a', long = "brokerName", value_name = "NAME")]
    pub broker_name: String,
    /// Queue id.
    #[arg(short = 'i', long = "queueId", value_name = "ID")]
    pub queue_id: i32,
    /// Tag expression.
    #[arg(short = 's', long = "subExpression", default_value = "*")]
    pub sub_expression: String,
    /// From this store time: ms, or yyyy-MM-dd#HH:mm:ss:SSS (UTC).
    #[arg(short = 'b', long = "beginTimestamp")]
    pub begin: Option<String>,
    /// Up to this store time.
    #[arg(short = 'e', long = "endTimestamp")]
    pub end: Option<String>,
    /// Print the messages.
    #[arg(
        short = 'p',
        long = "printMsg",
        value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set
    )]
    pub print_msg: bool,
    /// Print bodies.
    #[arg(
        short = 'd',
        long = "printBody",
        value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set
    )]
    pub print_body: bool,
    /// Count the messages by tag.
    #[arg(
        short = 'f',
        long = "calculate",
        value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set
    )]
    pub calculate: bool,
    #[command(flatten)]
    pub output: JsonFlag,
}

#[derive(Serialize)]
struct QueueContents {
    messages: Vec<MessageJson>,
    /// Messages per tag, most frequent first.
    tags: Vec<(String, u64)>,
}

pub async fn print_msg_by_queue(
    admin: &AdminClient,
    args: &PrintMsgByQueueArgs,
) -> Result<String, AdminError> {
    let topic = args.topic.trim();
    let broker = args.broker_name.trim();
    let addr = broker_addr(admin, topic, broker).await?;
    let mq = MessageQueue::new(topic, broker, args.queue_id);
    let range = offsets(
        admin,
        &addr,
        &mq,
        args.begin.as_deref(),
        args.end.as_deref(),
    )
    .await?;
    let msgs = read_queue(
        admin,
        &addr,
        None,
        &mq,
        &args.sub_expression,
        range,
        |_, _| {},
    )
    .await?;
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for m in &msgs {
        *counts.entry(m.tags().unwrap_or("").to_owned()).or_default() += 1;
    }
    let mut tags: Vec<(String, u64)> = counts.into_iter().collect();
    tags.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut text = String::new();
    if args.print_msg {
        for m in &msgs {
            text.push_str(&print_line(m, broker, args.print_body));
        }
    }
    if args.calculate {
        for (tag, n) in &tags {
            text.push_str(&format!("Tag: {tag:<30} Count: {n}\n"));
        }
    }
    let contents = QueueContents {
        messages: msgs.iter().map(MessageJson::from).collect(),
        tags,
    };
    args.output.render(&contents, |_| text)
}

#[derive(Args, Debug, Clone)]
pub struct ConsumeMessageArgs {
    /// Topic.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Only this broker (with -i, only that queue).
    #[arg(short = 'b', long = "brokerName", value_name = "NAME")]
    pub broker_name: Option<String>,
    /// Only this queue of the broker.
    #[arg(
        short = 'i',
        long = "queueId",
        value_name = "ID",
        requires = "broker_name"
    )]
    pub queue_id: Option<i32>,
    /// Start at this queue offset (with -i).
    #[arg(short = 'o', long = "offset", requires = "queue_id")]
    pub offset: Option<i64>,
    /// Pull as this consumer group (default TOOLS_CONSUMER).
    #[arg(short = 'g', long = "consumerGroup", value_name = "GROUP")]
    pub group: Option<String>,
    /// From this store time: ms, or yyyy-MM-dd#HH:mm:ss:SSS (UTC).
    #[arg(short = 's', long = "beginTimestamp")]
    pub begin: Option<String>,
    /// Up to this store time.
    #[arg(short = 'e', long = "endTimestamp")]
    pub end: Option<String>,
    /// Most messages to read.
    #[arg(
        short = 'c',
        long = "MessageNumber",
        value_name = "N",
        default_value_t = 128
    )]
    pub count: i64,
    #[command(flatten)]
    pub output: JsonFlag,
}

pub async fn consume_message(
    admin: &AdminClient,
    args: &ConsumeMessageArgs,
) -> Result<String, AdminError> {
    if args.count <= 0 {
        return Err(AdminError::Invalid("-c must be positive".into()));
    }
    let topic = args.topic.trim();
    let route = route(admin, topic).await?;
    let mut queues = Vec::new();
    for (broker, addr, n) in broker_queues(&route) {
        if args
            .broker_name
            .as_deref()
            .is_some_and(|b| b.trim() != broker)
        {
            continue;
        }
        for q in 0..n {
            if args.queue_id.is_none_or(|want| want == q) {
                queues.push((MessageQueue::new(topic, broker.as_str(), q), addr.clone()));
            }
        }
    }
    if queues.is_empty() {
        return Err(AdminError::NotFound(format!("no such queue of {topic}")));
    }
    let mut text = String::new();
    let mut all = Vec::new();
    let mut left = args.count;
    for (mq, addr) in &queues {
        if left == 0 {
            break;
        }
        let (mut min, max) =
            offsets(admin, addr, mq, args.begin.as_deref(), args.end.as_deref()).await?;
        if let Some(o) = args.offset {
            if o >= max {
                text.push_str(&format!("{} no matched msg, offset={o}\n", mq_text(mq)));
                continue;
            }
            min = min.max(o);
        }
        let max = if max - min > left {
            text.push_str(&format!(
                "The older {left} message of the {} queue will be provided\n",
                mq.queue_id
            ));
            min + left
        } else {
            max
        };
        let msgs = read_queue(
            admin,
            addr,
            args.group.as_deref(),
            mq,
            "*",
            (min, max),
            |_, _| {},
        )
        .await?;
        left -= i64::try_from(msgs.len()).unwrap_or(left);
        if !msgs.is_empty() {
            text.push_str("Consume ok\n");
        }
        for m in &msgs {
            text.push_str(&print_line(m, &mq.broker_name, true));
        }
        all.extend(msgs.iter().map(MessageJson::from));
    }
    args.output.render(&all, |_| text)
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
