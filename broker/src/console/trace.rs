//! The trace of one message on its page: the records clients wrote about it to the
//! trace topic (docs/trace.md), found through the index by the message's unique id
//! (each trace message's `KEYS` holds the ids it reports on), as
//! `mqadmin queryMsgTraceById` reads them.

use std::fmt::Write;

use vostok_remoting::protocol::message::id::create_offset_msg_id;
use vostok_remoting::protocol::message::property;
use vostok_remoting::protocol::message::MessageExt;

use super::html::{esc, table, time};
use super::Console;

/// Most trace messages read for one message.
const MAX_TRACE_MESSAGES: i32 = 64;
/// Ends one field of a record.
const CONTENT_SPLITOR: char = '\u{1}';
/// Ends one record.
const FIELD_SPLITOR: char = '\u{2}';

/// The fields of each record type after its name, in order (Java `TraceDataEncoder`).
fn fields(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "Pub" => &[
            "timeStamp",
            "regionId",
            "groupName",
            "topic",
            "msgId",
            "tags",
            "keys",
            "storeHost",
            "bodyLength",
            "costTime",
            "msgType",
            "offsetMsgId",
            "success",
        ],
        "SubBefore" => &[
            "timeStamp",
            "regionId",
            "groupName",
            "requestId",
            "msgId",
            "retryTimes",
            "keys",
        ],
        "SubAfter" => &[
            "requestId",
            "msgId",
            "costTime",
            "success",
            "keys",
            "contextCode",
            "timeStamp",
            "groupName",
        ],
        "EndTransaction" => &[
            "timeStamp",
            "regionId",
            "groupName",
            "topic",
            "msgId",
            "tags",
            "keys",
            "storeHost",
            "msgType",
            "transactionId",
            "transactionState",
            "fromTransactionCheck",
        ],
        _ => return None,
    })
}

/// One record about the message: its type, its named fields, the host it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) kind: String,
    pub(crate) fields: Vec<(&'static str, String)>,
    pub(crate) client_host: String,
}

impl Record {
    pub(crate) fn get(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// The records of a trace message body about message `uniq_id`; records of unknown
/// type or about other messages are left out. Older writers leave fields off the end.
pub(crate) fn records_about(body: &str, uniq_id: &str, client_host: &str) -> Vec<Record> {
    body.split(FIELD_SPLITOR)
        .filter_map(|r| {
            let mut parts = r.split(CONTENT_SPLITOR);
            let kind = parts.next()?.trim();
            let names = fields(kind)?;
            let fields: Vec<(&'static str, String)> = names
                .iter()
                .copied()
                .zip(parts.map(str::to_owned))
                .collect();
            let record = Record {
                kind: kind.to_owned(),
                fields,
                client_host: client_host.to_owned(),
            };
            (record.get("msgId") == uniq_id).then_some(record)
        })
        .collect()
}

/// Every record about `m` in `trace_topic` here, oldest first.
pub(crate) fn of(c: &Console, trace_topic: &str, m: &MessageExt) -> Vec<Record> {
    // Clients trace a message under its unique id, or its offset id without one.
    let offset_id = create_offset_msg_id(m.store_host, m.commit_log_offset);
    let uniq = m
        .properties
        .get(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        .filter(|u| !u.is_empty())
        .unwrap_or(&offset_id);
    let found =
        c.broker
            .storage
            .store
            .query_message(trace_topic, uniq, MAX_TRACE_MESSAGES, 0, i64::MAX);
    let mut out: Vec<Record> = found
        .messages
        .iter()
        .filter_map(|raw| MessageExt::decode(raw, false).ok())
        .filter(|t| t.topic == trace_topic)
        .flat_map(|t| {
            let host = t.born_host.ip().to_string();
            records_about(&String::from_utf8_lossy(&t.body), uniq, &host)
        })
        .collect();
    out.sort_by_key(|r| r.get("timeStamp").parse::<i64>().unwrap_or(i64::MAX));
    out.dedup();
    out
}

/// The trace section of a message page.
pub(crate) fn section(c: &Console, trace_topic: &str, may_read: bool, m: &MessageExt) -> String {
    let mut out = format!(
        "<h2 id=\"trace\">Trace</h2><p class=\"note\">Records clients with message trace on wrote to {} about this message.</p>",
        esc(trace_topic)
    );
    if !may_read {
        let _ = write!(
            out,
            "<p class=\"warn\" id=\"trace-refused\">Your account may not read the trace topic {}.</p>",
            esc(trace_topic)
        );
        return out;
    }
    let records = of(c, trace_topic, m);
    if records.is_empty() {
        out.push_str("<p id=\"no-trace\">No trace recorded for this message here (message trace is off for its producer and consumers, or their records went to another topic or broker).</p>");
        return out;
    }
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            let at = r
                .get("timeStamp")
                .parse::<i64>()
                .map_or_else(|_| String::new(), time);
            let status = match r.kind.as_str() {
                "Pub" | "SubAfter" if r.get("success").eq_ignore_ascii_case("true") => "success",
                "Pub" | "SubAfter" => "failed",
                "EndTransaction" => r.get("transactionState"),
                _ => "",
            };
            let cost = match r.get("costTime") {
                "" => String::new(),
                ms => format!("{} ms", esc(ms)),
            };
            let shown = ["timeStamp", "groupName", "costTime", "success", "msgId"];
            let details: Vec<String> = r
                .fields
                .iter()
                .filter(|(n, v)| !shown.contains(n) && !v.is_empty() && v != "null")
                .map(|(n, v)| format!("{n}={}", esc(v)))
                .collect();
            vec![
                format!("<span class=\"trace-type\">{}</span>", esc(&r.kind)),
                at,
                esc(r.get("groupName")),
                esc(&r.client_host),
                cost,
                esc(status),
                details.join(" "),
            ]
        })
        .collect();
    out.push_str(&table(
        "trace-records",
        &[
            "Type",
            "Time",
            "Group",
            "Client host",
            "Cost",
            "Status",
            "Details",
        ],
        &rows,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_about_the_message_are_named_by_their_fields() {
        let body = "Pub\u{1}1700000000000\u{1}DefaultRegion\u{1}PG\u{1}T\u{1}ID1\u{1}tag\u{1}k\u{1}127.0.0.1:10911\u{1}5\u{1}2\u{1}0\u{1}OFF\u{1}true\u{2}\
                    Pub\u{1}1700000000000\u{1}DefaultRegion\u{1}PG\u{1}T\u{1}ID2\u{1}tag\u{1}k\u{1}h\u{1}5\u{1}2\u{1}0\u{1}OFF\u{1}true\u{2}\
                    SubAfter\u{1}req\u{1}ID1\u{1}3\u{1}false\u{1}k\u{2}\
                    Garbage\u{1}ID1\u{2}\u{1}\u{2}";
        let found = records_about(body, "ID1", "10.0.0.1");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].kind, "Pub");
        assert_eq!(found[0].get("groupName"), "PG");
        assert_eq!(found[0].get("offsetMsgId"), "OFF");
        assert_eq!(found[1].kind, "SubAfter");
        assert_eq!(found[1].get("success"), "false");
        // An older writer's SubAfter: no timeStamp, no groupName.
        assert_eq!(found[1].get("timeStamp"), "");
        assert_eq!(found[1].client_host, "10.0.0.1");
    }
}
