//! Maps keyed by `MessageQueue`, as fastjson writes them: with the `MessageQueue`
//! objects themselves as keys, which is not JSON:
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

use super::MessageQueue;
use crate::error::DecodeError;
use crate::protocol::json;

/// A body whose `offsetTable` is keyed by `MessageQueue` (TopicStatsTable, ConsumeStats).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawQueueTable<V> {
    #[serde(default = "BTreeMap::new")]
    offset_table: BTreeMap<String, V>,
    #[serde(default)]
    pub(super) consume_tps: f64,
}

impl<V: DeserializeOwned> RawQueueTable<V> {
    pub(super) fn decode(what: &'static str, body: &[u8]) -> Result<Self, DecodeError> {
        let text = std::str::from_utf8(body).map_err(|e| DecodeError::Invalid {
            what,
            reason: format!("not UTF-8: {e}"),
        })?;
        json::from_slice(what, quote_object_keys(text).as_bytes())
    }
}

impl<V> RawQueueTable<V> {
    /// The table with its keys parsed, ordered as `MessageQueue`.
    pub(super) fn queues(
        self,
        what: &'static str,
    ) -> Result<BTreeMap<MessageQueue, V>, DecodeError> {
        self.offset_table
            .into_iter()
            .map(|(key, v)| Ok((parse_message_queue(what, &key)?, v)))
            .collect()
    }
}

/// A `MessageQueue` key: its JSON object text, or Java's `toString` form
/// (`MessageQueue [topic=T, brokerName=b, queueId=0]`) that some writers use.
pub(super) fn parse_message_queue(
    what: &'static str,
    key: &str,
) -> Result<MessageQueue, DecodeError> {
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

    #[test]
    fn object_keys_become_strings_and_plain_json_is_untouched() {
        let raw = r#"{"t":{{"a":"}{","b":[1]}:{"x":1}}}"#;
        assert_eq!(
            quote_object_keys(raw),
            r#"{"t":{"{\"a\":\"}{\",\"b\":[1]}":{"x":1}}}"#
        );
        let plain = r#"{"a":{"b":[{"c":"{not a key}"}]},"d":1}"#;
        assert!(matches!(quote_object_keys(plain), Cow::Borrowed(_)));
    }

    #[test]
    fn keys_parse_from_json_or_java_text() {
        let mq = MessageQueue::new("T", "b", 3);
        assert_eq!(
            parse_message_queue("t", r#"{"brokerName":"b","queueId":3,"topic":"T"}"#).unwrap(),
            mq
        );
        assert_eq!(
            parse_message_queue("t", "MessageQueue [topic=T, brokerName=b, queueId=3]").unwrap(),
            mq
        );
        assert!(parse_message_queue("t", "MessageQueue [topic=T]").is_err());
        assert!(parse_message_queue("t", "nonsense").is_err());
    }
}
