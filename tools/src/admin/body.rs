//! Admin answer bodies that `vostok_remoting::protocol::body` does not carry, as the
//! Java broker writes them: `TopicStatsTable` (GET_TOPIC_STATS_INFO), `ConsumeStats`
//! (GET_CONSUME_STATS) and `ConsumerConnection` (GET_CONSUMER_CONNECTION_LIST).
//!
//! fastjson writes a `Map<MessageQueue, V>` with the `MessageQueue` objects themselves
//! as keys, which is not JSON:
//!
//! ```text
//! {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":3,...},...}}
//! ```
//!
//! [`quote_object_keys`] turns such keys into strings holding the key's JSON text, so
//! that serde reads the map; each key is then parsed as a `MessageQueue`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use vostok_remoting::protocol::body::{Connection, MessageQueue};
use vostok_remoting::protocol::json;
use vostok_remoting::DecodeError;

/// One queue of GET_TOPIC_STATS_INFO (`TopicOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    pub min_offset: i64,
    pub max_offset: i64,
    #[serde(default)]
    pub last_update_timestamp: i64,
}

/// GET_TOPIC_STATS_INFO body: offsets of each queue, ordered as `MessageQueue`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicStatsTable {
    pub offset_table: BTreeMap<MessageQueue, TopicOffset>,
}

impl TopicStatsTable {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let raw: RawTable<TopicOffset> = decode_queue_map("TopicStatsTable", body)?;
        Ok(TopicStatsTable {
            offset_table: raw.queues("TopicStatsTable")?,
        })
    }
}

/// One queue of GET_CONSUME_STATS (`OffsetWrapper`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    pub broker_offset: i64,
    pub consumer_offset: i64,
    #[serde(default)]
    pub last_timestamp: i64,
}

/// GET_CONSUME_STATS body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumeStats {
    pub offset_table: BTreeMap<MessageQueue, OffsetWrapper>,
    pub consume_tps: f64,
}

impl ConsumeStats {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let raw: RawTable<OffsetWrapper> = decode_queue_map("ConsumeStats", body)?;
        Ok(ConsumeStats {
            consume_tps: raw.consume_tps,
            offset_table: raw.queues("ConsumeStats")?,
        })
    }
}

/// GET_CONSUMER_CONNECTION_LIST body; only what `mqadmin` reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    #[serde(default)]
    pub connection_set: Vec<Connection>,
    /// Subscriptions by topic (retry topics included).
    #[serde(default)]
    pub subscription_table: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTable<V> {
    #[serde(default = "BTreeMap::new")]
    offset_table: BTreeMap<String, V>,
    #[serde(default)]
    consume_tps: f64,
}

impl<V> RawTable<V> {
    fn queues(self, what: &'static str) -> Result<BTreeMap<MessageQueue, V>, DecodeError> {
        self.offset_table
            .into_iter()
            .map(|(key, v)| Ok((parse_message_queue(what, &key)?, v)))
            .collect()
    }
}

fn decode_queue_map<T: DeserializeOwned>(
    what: &'static str,
    body: &[u8],
) -> Result<T, DecodeError> {
    let text = std::str::from_utf8(body).map_err(|e| DecodeError::Invalid {
        what,
        reason: format!("not UTF-8: {e}"),
    })?;
    json::from_slice(what, quote_object_keys(text).as_bytes())
}

/// A `MessageQueue` key: its JSON object text, or Java's `toString` form
/// (`MessageQueue [topic=T, brokerName=b, queueId=0]`) that some writers use.
fn parse_message_queue(what: &'static str, key: &str) -> Result<MessageQueue, DecodeError> {
    if let Ok(mq) = serde_json::from_str::<MessageQueue>(key) {
        return Ok(mq);
    }
    let bad = || DecodeError::Invalid {
        what,
        reason: format!("offsetTable key {key:?} is not a MessageQueue"),
    };
    let inner = key
        .strip_prefix("MessageQueue [")
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(bad)?;
    let mut topic = None;
    let mut broker_name = None;
    let mut queue_id = None;
    for part in inner.split(", ") {
        match part.split_once('=') {
            Some(("topic", v)) => topic = Some(v),
            Some(("brokerName", v)) => broker_name = Some(v),
            Some(("queueId", v)) => queue_id = v.parse().ok(),
            _ => {}
        }
    }
    match (topic, broker_name, queue_id) {
        (Some(t), Some(b), Some(q)) => Ok(MessageQueue::new(t, b, q)),
        _ => Err(bad()),
    }
}

#[derive(Clone, Copy)]
enum Frame {
    Object { expect_key: bool },
    Array,
}

/// Rewrites object keys that are objects into JSON strings of their text; everything
/// else is copied as is. Input without such keys is returned borrowed.
pub fn quote_object_keys(input: &str) -> Cow<'_, str> {
    let bytes = input.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let at_key = matches!(stack.last(), Some(Frame::Object { expect_key: true }));
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i);
                set_expect_key(&mut stack, false);
                continue;
            }
            b'{' if at_key => {
                let end = object_end(bytes, i);
                let buf = out.get_or_insert_with(|| String::with_capacity(input.len() + 64));
                buf.push_str(&input[copied..i]);
                // Serialising a string cannot fail.
                buf.push_str(&serde_json::to_string(&input[i..end]).expect("a string serialises"));
                copied = end;
                set_expect_key(&mut stack, false);
                i = end;
                continue;
            }
            b'{' => stack.push(Frame::Object { expect_key: true }),
            b'[' => stack.push(Frame::Array),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => set_expect_key(&mut stack, true),
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => set_expect_key(&mut stack, false),
        }
        i += 1;
    }
    match out {
        Some(mut buf) => {
            buf.push_str(&input[copied..]);
            Cow::Owned(buf)
        }
        None => Cow::Borrowed(input),
    }
}

fn set_expect_key(stack: &mut [Frame], expect: bool) {
    if let Some(Frame::Object { expect_key }) = stack.last_mut() {
        *expect_key = expect;
    }
}

/// Index just past the string starting at `start` (a `"`), or the end of input.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Index just past the object starting at `start` (a `{`), or the end of input.
fn object_end(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = string_end(bytes, i);
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATS: &str = r#"{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":5,"minOffset":0},{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}}}"#;

    #[test]
    fn reads_fastjson_object_keys() {
        let table = TopicStatsTable::decode(STATS.as_bytes()).unwrap();
        let queues: Vec<_> = table.offset_table.iter().collect();
        assert_eq!(queues.len(), 2);
        assert_eq!(queues[0].0, &MessageQueue::new("T", "broker-a", 0));
        assert_eq!(queues[1].1.max_offset, 5);
        assert_eq!(queues[1].1.last_update_timestamp, 1_700_000_000_000);
    }

    #[test]
    fn reads_consume_stats_with_tps_and_pretty_layout() {
        let raw = "{\n\t\"consumeTps\":1.5,\n\t\"offsetTable\":{ {\"brokerName\":\"b\",\"queueId\":2,\"topic\":\"T{x}\"} : {\"brokerOffset\":9,\"consumerOffset\":4,\"lastTimestamp\":0,\"pullOffset\":4}\n\t}\n}";
        let stats = ConsumeStats::decode(raw.as_bytes()).unwrap();
        assert_eq!(stats.consume_tps, 1.5);
        let (mq, offsets) = stats.offset_table.iter().next().unwrap();
        assert_eq!(mq, &MessageQueue::new("T{x}", "b", 2));
        assert_eq!((offsets.broker_offset, offsets.consumer_offset), (9, 4));
        let empty = ConsumeStats::decode(br#"{"consumeTps":0.0,"offsetTable":{}}"#).unwrap();
        assert!(empty.offset_table.is_empty());
    }

    #[test]
    fn plain_json_is_untouched_and_string_keys_read() {
        let plain = r#"{"a":{"b":[{"c":"{not a key}"}]},"d":1}"#;
        assert!(matches!(quote_object_keys(plain), Cow::Borrowed(_)));
        let java_text = r#"{"offsetTable":{"MessageQueue [topic=T, brokerName=b, queueId=3]":{"maxOffset":2,"minOffset":1}}}"#;
        let table = TopicStatsTable::decode(java_text.as_bytes()).unwrap();
        assert_eq!(
            table.offset_table.keys().next(),
            Some(&MessageQueue::new("T", "b", 3))
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for raw in [
            &b"{\"offsetTable\":{{\"topic\":"[..],
            b"{\"offsetTable\":{\"nonsense\":{\"maxOffset\":1,\"minOffset\":0}}}",
            b"\xff\xfe",
            b"{\"offsetTable\":{{}:{}}}",
            b"}}]]{{",
        ] {
            assert!(TopicStatsTable::decode(raw).is_err(), "{raw:?}");
        }
    }
}
