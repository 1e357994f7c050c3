//! Trace records in RocketMQ's text format (Java `TraceDataEncoder`, docs/trace.md): a
//! record is its fields joined by CONTENT_SPLITOR (char 1) and ended by FIELD_SPLITOR
//! (char 2); one trace message body holds many records. Each record type has its own
//! field order:
//!
//! | type | fields after the type name |
//! |---|---|
//! | `Pub` | timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost, bodyLength, costTime, msgType, offsetMsgId, success |
//! | `SubBefore` | timeStamp, regionId, groupName, requestId, msgId, retryTimes, keys |
//! | `SubAfter` | requestId, msgId, costTime, success, keys, contextCode, timeStamp, groupName |
//! | `EndTransaction` | timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost, msgType, transactionId, transactionState, fromTransactionCheck |
//!
//! Older writers leave fields off the end (a `Pub` without offsetMsgId, a `SubAfter`
//! without contextCode, timeStamp and groupName); the decoder reads what is there, as
//! Java's does. A record that does not parse is skipped, never a panic: trace topics
//! hold whatever any client wrote.

use serde::Serialize;

/// Ends one field of a record.
pub const CONTENT_SPLITOR: char = '\u{1}';
/// Ends one record.
pub const FIELD_SPLITOR: char = '\u{2}';

/// What a record reports (Java `TraceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TraceType {
    Pub,
    SubBefore,
    SubAfter,
    EndTransaction,
}

impl TraceType {
    pub fn name(self) -> &'static str {
        match self {
            TraceType::Pub => "Pub",
            TraceType::SubBefore => "SubBefore",
            TraceType::SubAfter => "SubAfter",
            TraceType::EndTransaction => "EndTransaction",
        }
    }
}

/// Java `MessageType`, written as its ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum MessageType {
    #[default]
    NormalMsg,
    TransMsgHalf,
    TransMsgCommit,
    DelayMsg,
    OrderMsg,
}

impl MessageType {
    pub fn ordinal(self) -> u8 {
        self as u8
    }

    pub fn from_ordinal(n: u8) -> Option<Self> {
        Some(match n {
            0 => MessageType::NormalMsg,
            1 => MessageType::TransMsgHalf,
            2 => MessageType::TransMsgCommit,
            3 => MessageType::DelayMsg,
            4 => MessageType::OrderMsg,
            _ => return None,
        })
    }
}

/// One message's part of a record (Java `TraceBean`). Java writes an absent tag or key
/// as `null`; so does Vostok, so that readers of either see the same text.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceBean {
    pub topic: String,
    pub msg_id: String,
    pub offset_msg_id: String,
    pub tags: String,
    pub keys: String,
    pub store_host: String,
    pub body_length: i32,
    pub retry_times: i32,
    pub msg_type: MessageType,
    pub transaction_id: String,
    pub transaction_state: String,
    pub from_transaction_check: bool,
}

/// One record (Java `TraceContext`); `SubBefore`/`SubAfter` records of one listener call
/// carry one bean per message and the same `request_id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceContext {
    pub trace_type: TraceType,
    /// Milliseconds since the epoch: when the send or the listener call started.
    pub time_stamp: i64,
    pub region_id: String,
    pub group_name: String,
    pub cost_time: i32,
    pub success: bool,
    pub request_id: String,
    /// `SubAfter`: Java `ConsumeReturnType` ordinal (0 success, 1 timeout, 2 exception,
    /// 3 return null, 4 failed).
    pub context_code: i32,
    pub beans: Vec<TraceBean>,
}

impl TraceContext {
    pub fn new(trace_type: TraceType) -> Self {
        TraceContext {
            trace_type,
            time_stamp: 0,
            region_id: String::new(),
            group_name: String::new(),
            cost_time: 0,
            success: true,
            request_id: String::new(),
            context_code: 0,
            beans: Vec::new(),
        }
    }
}

/// A record as written, with the keys its trace message is indexed by (Java
/// `TraceTransferBean`): each bean's msgId and each of its keys.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceTransfer {
    pub data: String,
    pub keys: Vec<String>,
}

/// Encodes one record (Java `encoderFromContextBean`).
pub fn encode(ctx: &TraceContext) -> TraceTransfer {
    let mut data = String::with_capacity(256);
    let mut record = |fields: &[&dyn std::fmt::Display]| {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                data.push(CONTENT_SPLITOR);
            }
            data.push_str(&f.to_string());
        }
        data.push(FIELD_SPLITOR);
    };
    let t = ctx.trace_type.name();
    match ctx.trace_type {
        TraceType::Pub => {
            if let Some(b) = ctx.beans.first() {
                record(&[
                    &t,
                    &ctx.time_stamp,
                    &ctx.region_id,
                    &ctx.group_name,
                    &b.topic,
                    &b.msg_id,
                    &b.tags,
                    &b.keys,
                    &b.store_host,
                    &b.body_length,
                    &ctx.cost_time,
                    &b.msg_type.ordinal(),
                    &b.offset_msg_id,
                    &ctx.success,
                ]);
            }
        }
        TraceType::SubBefore => {
            for b in &ctx.beans {
                record(&[
                    &t,
                    &ctx.time_stamp,
                    &ctx.region_id,
                    &ctx.group_name,
                    &ctx.request_id,
                    &b.msg_id,
                    &b.retry_times,
                    &b.keys,
                ]);
            }
        }
        TraceType::SubAfter => {
            for b in &ctx.beans {
                record(&[
                    &t,
                    &ctx.request_id,
                    &b.msg_id,
                    &ctx.cost_time,
                    &ctx.success,
                    &b.keys,
                    &ctx.context_code,
                    &ctx.time_stamp,
                    &ctx.group_name,
                ]);
            }
        }
        TraceType::EndTransaction => {
            if let Some(b) = ctx.beans.first() {
                record(&[
                    &t,
                    &ctx.time_stamp,
                    &ctx.region_id,
                    &ctx.group_name,
                    &b.topic,
                    &b.msg_id,
                    &b.tags,
                    &b.keys,
                    &b.store_host,
                    &b.msg_type.ordinal(),
                    &b.transaction_id,
                    &b.transaction_state,
                    &b.from_transaction_check,
                ]);
            }
        }
    }
    let mut keys = Vec::new();
    for b in &ctx.beans {
        keys.push(b.msg_id.clone());
        if !b.keys.is_empty() && b.keys != "null" {
            keys.extend(
                b.keys
                    .split(vostok_remoting::protocol::message::property::KEY_SEPARATOR)
                    .filter(|k| !k.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    TraceTransfer { data, keys }
}

/// Decodes every record of a trace message body (Java `decoderFromTraceDataString`),
/// one bean per record. Records of unknown type or with too few or malformed fields
/// are skipped.
pub fn decode(body: &str) -> Vec<TraceContext> {
    body.split(FIELD_SPLITOR)
        .filter(|r| !r.is_empty())
        .filter_map(|r| {
            let line: Vec<&str> = r.split(CONTENT_SPLITOR).collect();
            decode_record(&line)
        })
        .collect()
}

fn decode_record(line: &[&str]) -> Option<TraceContext> {
    let s = |i: usize| line.get(i).map(|v| (*v).to_owned());
    let int = |i: usize| line.get(i).and_then(|v| v.trim().parse::<i32>().ok());
    let long = |i: usize| line.get(i).and_then(|v| v.trim().parse::<i64>().ok());
    // Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
    let boolean = |i: usize| line.get(i).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let msg_type = |i: usize| {
        line.get(i)
            .and_then(|v| v.trim().parse::<u8>().ok())
            .and_then(MessageType::from_ordinal)
    };
    match *line.first()? {
        "Pub" if line.len() >= 13 => {
            let mut ctx = TraceContext::new(TraceType::Pub);
            ctx.time_stamp = long(1)?;
            ctx.region_id = s(2)?;
            ctx.group_name = s(3)?;
            let mut bean = TraceBean {
                topic: s(4)?,
                msg_id: s(5)?,
                tags: s(6)?,
                keys: s(7)?,
                store_host: s(8)?,
                body_length: int(9)?,
                msg_type: msg_type(11)?,
                ..TraceBean::default()
            };
            ctx.cost_time = int(10)?;
            if line.len() == 13 {
                ctx.success = boolean(12);
            } else {
                bean.offset_msg_id = s(12)?;
                ctx.success = boolean(13);
            }
            ctx.beans.push(bean);
            Some(ctx)
        }
        "SubBefore" if line.len() >= 8 => {
            let mut ctx = TraceContext::new(TraceType::SubBefore);
            ctx.time_stamp = long(1)?;
            ctx.region_id = s(2)?;
            ctx.group_name = s(3)?;
            ctx.request_id = s(4)?;
            ctx.beans.push(TraceBean {
                msg_id: s(5)?,
                retry_times: int(6)?,
                keys: s(7)?,
                ..TraceBean::default()
            });
            Some(ctx)
        }
        "SubAfter" if line.len() >= 6 => {
            let mut ctx = TraceContext::new(TraceType::SubAfter);
            ctx.request_id = s(1)?;
            ctx.cost_time = int(3)?;
            ctx.success = boolean(4);
            ctx.beans.push(TraceBean {
                msg_id: s(2)?,
                keys: s(5)?,
                ..TraceBean::default()
            });
            if line.len() >= 7 {
                ctx.context_code = int(6)?;
            }
            if line.len() >= 9 {
                ctx.time_stamp = long(7)?;
                ctx.group_name = s(8)?;
            } else if line.len() >= 8 {
                ctx.time_stamp = long(7)?;
            }
            Some(ctx)
        }
        "EndTransaction" if line.len() >= 13 => {
            let mut ctx = TraceContext::new(TraceType::EndTransaction);
            ctx.time_stamp = long(1)?;
            ctx.region_id = s(2)?;
            ctx.group_name = s(3)?;
            ctx.beans.push(TraceBean {
                topic: s(4)?,
                msg_id: s(5)?,
                tags: s(6)?,
                keys: s(7)?,
                store_host: s(8)?,
                msg_type: msg_type(9)?,
                transaction_id: s(10)?,
                transaction_state: s(11)?,
                from_transaction_check: boolean(12),
                ..TraceBean::default()
            });
            Some(ctx)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Joins fields as Java's encoder does: CONTENT_SPLITOR between, FIELD_SPLITOR after.
    fn apache(fields: &[&str]) -> String {
        let mut s = fields.join("\u{1}");
        s.push('\u{2}');
        s
    }

    #[test]
    fn decodes_records_written_by_apache_clients() {
        let pub_ = apache(&[
            "Pub",
            "1700000000000",
            "DefaultRegion",
            "PG",
            "TopicTest",
            "7F0000010B1C18B4AAC2245E1F1C0000",
            "TagA",
            "k1 k2",
            "127.0.0.1:10911",
            "11",
            "3",
            "0",
            "7F00000100002A9F0000000000000000",
            "true",
        ]);
        let sub_before = apache(&[
            "SubBefore",
            "1700000000100",
            "DefaultRegion",
            "CG",
            "REQ1",
            "7F0000010B1C18B4AAC2245E1F1C0000",
            "0",
            "k1 k2",
        ]);
        let sub_after = apache(&[
            "SubAfter",
            "REQ1",
            "7F0000010B1C18B4AAC2245E1F1C0000",
            "5",
            "false",
            "k1 k2",
            "4",
            "1700000000105",
            "CG",
        ]);
        let end = apache(&[
            "EndTransaction",
            "1700000000200",
            "DefaultRegion",
            "TPG",
            "TxTopic",
            "ABC",
            "null",
            "null",
            "127.0.0.1:10911",
            "2",
            "TXID",
            "COMMIT_MESSAGE",
            "true",
        ]);
        let body = format!("{pub_}{sub_before}{sub_after}{end}");
        let records = decode(&body);
        assert_eq!(records.len(), 4);
        let p = &records[0];
        assert_eq!(
            (
                p.trace_type,
                p.time_stamp,
                p.group_name.as_str(),
                p.cost_time,
                p.success
            ),
            (TraceType::Pub, 1_700_000_000_000, "PG", 3, true)
        );
        assert_eq!(p.beans[0].offset_msg_id, "7F00000100002A9F0000000000000000");
        assert_eq!(p.beans[0].body_length, 11);
        assert_eq!(p.beans[0].keys, "k1 k2");
        let b = &records[1];
        assert_eq!(
            (b.request_id.as_str(), b.group_name.as_str()),
            ("REQ1", "CG")
        );
        let a = &records[2];
        assert_eq!(
            (a.trace_type, a.request_id.as_str(), a.cost_time, a.success),
            (TraceType::SubAfter, "REQ1", 5, false)
        );
        assert_eq!(
            (a.context_code, a.time_stamp, a.group_name.as_str()),
            (4, 1_700_000_000_105, "CG")
        );
        let e = &records[3];
        assert_eq!(e.beans[0].msg_type, MessageType::TransMsgCommit);
        assert_eq!(e.beans[0].transaction_state, "COMMIT_MESSAGE");
        assert!(e.beans[0].from_transaction_check);
        // Each record re-encodes to the bytes Apache's encoder wrote.
        let again: String = records.iter().map(|r| encode(r).data).collect();
        assert_eq!(again, body);
    }

    #[test]
    fn older_layouts_and_garbage() {
        // A 4.x Pub without offsetMsgId, a SubAfter without the newer tail.
        let old_pub = apache(&[
            "Pub", "1", "R", "PG", "T", "ID", "null", "null", "h:1", "1", "2", "0", "false",
        ]);
        let old_after = apache(&["SubAfter", "REQ", "ID", "7", "true", "null"]);
        let records = decode(&format!(
            "{old_pub}garbage\u{2}Pub\u{1}x\u{2}{old_after}\u{2}\u{2}"
        ));
        assert_eq!(records.len(), 2);
        assert!(!records[0].success);
        assert_eq!(records[0].beans[0].offset_msg_id, "");
        assert_eq!((records[1].cost_time, records[1].time_stamp), (7, 0));
        assert!(decode("").is_empty());
        assert!(
            decode("Pub\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}\u{1}")
                .is_empty()
        );
    }

    #[test]
    fn keys_are_the_msg_ids_and_every_message_key() {
        let mut ctx = TraceContext::new(TraceType::SubBefore);
        ctx.beans.push(TraceBean {
            msg_id: "A".into(),
            keys: "k1 k2".into(),
            ..TraceBean::default()
        });
        ctx.beans.push(TraceBean {
            msg_id: "B".into(),
            keys: "null".into(),
            ..TraceBean::default()
        });
        let t = encode(&ctx);
        assert_eq!(t.keys, ["A", "k1", "k2", "B"]);
        assert_eq!(t.data.matches(FIELD_SPLITOR).count(), 2);
    }
}
