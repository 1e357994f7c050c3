//! `queryMsgByKey` and `queryMsgById`: messages found through a broker's index or by
//! commitlog offset, through the SDK's admin layer; `decodeMessageId`: what a unique
//! message id tells without asking anyone.

use clap::Args;
use vostok_client::AdminClient;
use vostok_remoting::protocol::header::QueryMessageRequestHeader;
use vostok_remoting::protocol::message::id::{decode_offset_msg_id, decode_uniq_id};
use vostok_remoting::protocol::message::property::{KEYS, KEY_SEPARATOR};
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::request_code::{QUERY_MESSAGE, VIEW_MESSAGE_BY_ID};

use super::error::{during, AdminError};
use super::output::JsonFlag;
use super::read::MessageJson;
use super::table::format_millis;
use super::topic::route;

#[derive(Args, Debug, Clone)]
pub struct QueryMsgByKeyArgs {
    /// Topic name.
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// One of the message's keys.
    #[arg(short = 'k', long = "msgKey", value_name = "KEY")]
    pub key: String,
    /// Most messages asked of each broker.
    #[arg(short = 'c', long = "maxNum", value_name = "N", default_value_t = 64)]
    pub max_num: i32,
    /// Earliest store time, in ms since the epoch.
    #[arg(
        short = 'b',
        long = "beginTimestamp",
        value_name = "MS",
        default_value_t = 0
    )]
    pub begin_timestamp: i64,
    /// Latest store time, in ms since the epoch.
    #[arg(short = 'e', long = "endTimestamp", value_name = "MS", default_value_t = i64::MAX)]
    pub end_timestamp: i64,
}

#[derive(Args, Debug, Clone)]
pub struct QueryMsgByIdArgs {
    /// Offset message id(s), comma-separated.
    #[arg(short = 'i', long = "msgId", value_name = "ID")]
    pub msg_id: String,
    /// Look ids that are not offset ids up as unique keys (`UNIQ_KEY`) in this topic.
    #[arg(short = 't', long = "topic")]
    pub topic: Option<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DecodeMessageIdArgs {
    /// Unique message id (the msgId a send returns).
    #[arg(short = 'i', long = "messageId", value_name = "ID")]
    pub msg_id: String,
}

/// The client address, process id and time a unique id holds (Apache's
/// `DecodeMessageId` prints the first and the last).
pub async fn decode_message_id(
    _admin: &AdminClient,
    args: &DecodeMessageIdArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let id = args.msg_id.trim();
    let info = decode_uniq_id(id, vostok_remoting::support::time::now_millis())
        .map_err(|e| AdminError::Invalid(e.to_string()))?;
    let doc = serde_json::json!({
        "msgId": id,
        "ip": info.ip.to_string(),
        "pid": info.pid,
        "timestamp": info.nearly_time_ms,
        "date": format_millis(info.nearly_time_ms),
    });
    out.render(&doc, |_| {
        format!(
            "ip={}\npid={}\ndate={}\n",
            info.ip,
            info.pid,
            format_millis(info.nearly_time_ms)
        )
    })
}

/// Answers from several brokers arrive in broker order; show them by store time, then
/// commitlog offset.
fn sort(messages: &mut [MessageExt]) {
    messages.sort_by_key(|m| (m.store_timestamp, m.commit_log_offset));
}

/// QUERY_MESSAGE by key to every broker of the topic's route. The index is a hash, so
/// messages whose `KEYS` do not hold the key are dropped, as the Java client does.
pub async fn query_msg_by_key(
    admin: &AdminClient,
    args: &QueryMsgByKeyArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let header = QueryMessageRequestHeader {
        topic: args.topic.clone(),
        key: args.key.clone(),
        max_num: args.max_num,
        begin_timestamp: args.begin_timestamp,
        end_timestamp: args.end_timestamp,
        unique_key_query: None,
    };
    let mut found = query_route(admin, &header).await?;
    found.retain(|m| {
        m.property(KEYS)
            .is_some_and(|keys| keys.split(KEY_SEPARATOR).any(|k| k == args.key))
    });
    if found.is_empty() {
        return Err(AdminError::NotFound(format!(
            "no message with key {} in topic {}",
            args.key, args.topic
        )));
    }
    sort(&mut found);
    render_messages(out, &found)
}

/// VIEW_MESSAGE_BY_ID to the store host of each offset message id. Unique keys have
/// the same 32-hex-digit form as IPv4 offset ids, so with `-t` each id is first looked
/// up as a unique key in that topic (QUERY_MESSAGE to the route's brokers, which are
/// known to answer) and read as an offset id only when that finds nothing.
pub async fn query_msg_by_id(
    admin: &AdminClient,
    args: &QueryMsgByIdArgs,
    out: JsonFlag,
) -> Result<String, AdminError> {
    let mut found = Vec::new();
    for id in args
        .msg_id
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if let Some(topic) = &args.topic {
            let mut messages = query_unique_key(admin, topic, id).await?;
            if !messages.is_empty() {
                sort(&mut messages);
                found.extend(messages);
                continue;
            }
        }
        let (store_host, offset) = match (decode_offset_msg_id(id), &args.topic) {
            (Ok(decoded), _) => decoded,
            (Err(_), Some(topic)) => {
                return Err(AdminError::NotFound(format!(
                    "no message with unique key {id} in topic {topic}"
                )))
            }
            (Err(e), None) => {
                return Err(AdminError::Invalid(format!(
                    "{id} is not an offset message id ({e}); pass -t TOPIC to look it up as a unique key"
                )))
            }
        };
        let viewed = admin
            .view_message(&store_host.to_string(), offset)
            .await
            .map_err(during(VIEW_MESSAGE_BY_ID));
        match viewed {
            Ok(message) => found.push(message),
            Err(e) => {
                return Err(match &args.topic {
                    Some(topic) => AdminError::NotFound(format!(
                        "no message with unique key {id} in topic {topic}, nor as an offset id: {e}"
                    )),
                    None => e,
                })
            }
        }
    }
    if found.is_empty() {
        return Err(AdminError::Invalid("-i holds no message id".into()));
    }
    render_messages(out, &found)
}

/// The messages as RocketMQ's `Name: value` records, or a JSON array.
fn render_messages(out: JsonFlag, messages: &[MessageExt]) -> Result<String, AdminError> {
    let json: Vec<MessageJson> = messages.iter().map(MessageJson::from).collect();
    out.render(&json, |_| describe_all(messages))
}

/// QUERY_MESSAGE by unique key (`UNIQ_KEY`) to the brokers of `topic`.
pub(crate) async fn query_unique_key(
    admin: &AdminClient,
    topic: &str,
    id: &str,
) -> Result<Vec<MessageExt>, AdminError> {
    let header = QueryMessageRequestHeader {
        topic: topic.to_owned(),
        key: id.to_owned(),
        max_num: 32,
        begin_timestamp: 0,
        end_timestamp: i64::MAX,
        unique_key_query: Some(true),
    };
    let mut messages = query_route(admin, &header).await?;
    messages.retain(|m| m.properties.uniq_key() == Some(id));
    Ok(messages)
}

/// QUERY_MESSAGE to one address of each broker name in the topic's route.
pub(crate) async fn query_route(
    admin: &AdminClient,
    header: &QueryMessageRequestHeader,
) -> Result<Vec<MessageExt>, AdminError> {
    let route = route(admin, &header.topic).await?;
    let mut out = Vec::new();
    let mut brokers: Vec<_> = route.broker_datas.iter().collect();
    brokers.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    for broker in brokers {
        if let Some(addr) = broker.select_addr() {
            let found = admin
                .query_message(addr, header)
                .await
                .map_err(during(QUERY_MESSAGE))?;
            out.extend(found);
        }
    }
    Ok(out)
}

fn describe_all(messages: &[MessageExt]) -> String {
    messages.iter().map(describe).collect::<Vec<_>>().join("\n")
}

/// One message as `Name: value` lines (RocketMQ's `queryMsgById` layout).
pub fn describe(m: &MessageExt) -> String {
    let mut properties: Vec<(&str, &str)> = m.properties.iter().collect();
    properties.sort();
    let properties: Vec<String> = properties.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let body = match sysflag::compression(m.sys_flag) {
        Some(c) => format!("{} ({c:?} compressed)", m.body.len()),
        None => m.body.len().to_string(),
    };
    let lines = [
        ("Message ID", m.msg_id()),
        ("Offset Message ID", m.offset_msg_id()),
        ("Topic", m.topic.clone()),
        ("Tags", format!("[{}]", m.tags().unwrap_or(""))),
        ("Keys", format!("[{}]", m.property(KEYS).unwrap_or(""))),
        ("Queue ID", m.queue_id.to_string()),
        ("Queue Offset", m.queue_offset.to_string()),
        ("CommitLog Offset", m.commit_log_offset.to_string()),
        ("Reconsume Times", m.reconsume_times.to_string()),
        ("Born Timestamp", format_millis(m.born_timestamp)),
        ("Store Timestamp", format_millis(m.store_timestamp)),
        ("Born Host", m.born_host.to_string()),
        ("Store Host", m.store_host.to_string()),
        ("System Flag", m.sys_flag.to_string()),
        ("Body Length", body),
        ("Properties", format!("{{{}}}", properties.join(", "))),
    ];
    lines
        .iter()
        .map(|(name, value)| format!("{name:<20}{value}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use vostok_remoting::protocol::message::Properties;

    #[test]
    fn describes_every_field() {
        let mut properties = Properties::new();
        properties.insert("TAGS", "TagA");
        properties.insert("KEYS", "k1 k2");
        properties.insert("UNIQ_KEY", "ABC");
        let m = MessageExt {
            queue_offset: 7,
            born_timestamp: 1_700_000_000_000,
            born_host: "127.0.0.1:5000".parse().unwrap(),
            store_timestamp: 1_700_000_000_001,
            commit_log_offset: 1234,
            ..MessageExt::new(
                "T",
                3,
                Bytes::from_static(b"hello"),
                properties,
                "127.0.0.1:10911".parse().unwrap(),
            )
        };
        let text = describe(&m);
        for line in [
            "Message ID          ABC\n",
            "Topic               T\n",
            "Tags                [TagA]\n",
            "Keys                [k1 k2]\n",
            "Queue ID            3\n",
            "Queue Offset        7\n",
            "Store Timestamp     2023-11-14T22:13:20.001Z\n",
            "Body Length         5\n",
            "Properties          {KEYS=k1 k2, TAGS=TagA, UNIQ_KEY=ABC}\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
    }
}
