//! The verbs that print many messages without consuming them as a group: `printMsg`
//! (every queue of a topic), `printMsgByQueue` (one queue, with tag counts) and
//! `consumeMessage` (pull a number of messages), with the tools' pull (group
//! `TOOLS_CONSUMER` unless `-g`), printed as RocketMQ's commands print them.

use std::collections::BTreeMap;

use clap::Args;
use serde::Serialize;
use vostok_client::{AdminClient, MessageQueue, PullStatus};
use vostok_remoting::protocol::message::MessageExt;

use super::error::AdminError;
use super::output::JsonFlag;
use super::read::{broker_addr, mq_text, offsets, pull, status_name, MessageJson};
use super::topic::{broker_queues, route};

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

pub async fn print_msg(
    admin: &AdminClient,
    args: &PrintMsgArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
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
    out.render(&all, |_| text)
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
    out: JsonFlag,
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
    out.render(&contents, |_| text)
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
}

pub async fn consume_message(
    admin: &AdminClient,
    args: &ConsumeMessageArgs,
    out: JsonFlag,
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
    out.render(&all, |_| text)
}
