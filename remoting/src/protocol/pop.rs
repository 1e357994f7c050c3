//! POP consumption vocabulary (docs/pop.md): the revive topic and group, POP retry
//! topics, the retry flag, and `extraInfo` (`POP_CK`) with the offset-info strings of a
//! POP_MESSAGE response (`ExtraInfoUtil`, `KeyBuilder`, `PopAckConstants`).
//!
//! `extraInfo`, fields separated by one space:
//!
//! | # | field | meaning |
//! |---|---|---|
//! | 0 | ckQueueOffset | start offset of the checkpoint the message belongs to |
//! | 1 | popTime | ms, the pop's (or the last CHANGE_MESSAGE_INVISIBLETIME's) time |
//! | 2 | invisibleTime | ms |
//! | 3 | reviveQid | revive queue of the checkpoint; 999 for FIFO pops |
//! | 4 | retry | `0` normal topic, `1` POP retry topic v1, `2` v2 |
//! | 5 | brokerName | |
//! | 6 | queueId | |
//! | 7 | queueOffset | the message's own queue offset (absent in the 7-field prefix) |

use std::fmt;

use crate::protocol::topic::RETRY_GROUP_TOPIC_PREFIX;

pub use super::topic::REVIVE_TOPIC_PREFIX;
/// The group whose offsets on the revive topic record revive progress.
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";
/// The revive queue id of FIFO pops: they have no checkpoint.
pub const ORDER_REVIVE_QUEUE: i32 = 999;
/// Tags of the records in the revive topic.
pub const CK_TAG: &str = "ck";
pub const ACK_TAG: &str = "ack";
pub const BATCH_ACK_TAG: &str = "bAck";
/// Largest `maxMsgNums` of a POP_MESSAGE.
pub const MAX_POP_NUMS: i32 = 32;

/// `rmq_sys_REVIVE_LOG_<cluster>`.
pub fn revive_topic(cluster: &str) -> String {
    format!("{REVIVE_TOPIC_PREFIX}{cluster}")
}

/// The POP retry topic of `group` on `topic`: v1 `%RETRY%group_topic`, v2
/// `%RETRY%group+topic`.
pub fn pop_retry_topic(topic: &str, group: &str, v2: bool) -> String {
    let sep = if v2 { '+' } else { '_' };
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}{sep}{topic}")
}

/// Where a popped message was read: the normal topic or a POP retry topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryFlag {
    Normal,
    RetryV1,
    RetryV2,
}

impl RetryFlag {
    /// The flag of a topic name (`ExtraInfoUtil.getRetry`).
    pub fn of_topic(topic: &str) -> Self {
        if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) && topic.contains('+') {
            RetryFlag::RetryV2
        } else if topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
            RetryFlag::RetryV1
        } else {
            RetryFlag::Normal
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "0" => Some(RetryFlag::Normal),
            "1" => Some(RetryFlag::RetryV1),
            "2" => Some(RetryFlag::RetryV2),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RetryFlag::Normal => "0",
            RetryFlag::RetryV1 => "1",
            RetryFlag::RetryV2 => "2",
        }
    }

    pub fn is_retry(self) -> bool {
        self != RetryFlag::Normal
    }

    /// The topic a message with this flag was read from, for a pop of `topic` by `group`.
    pub fn real_topic(self, topic: &str, group: &str) -> String {
        match self {
            RetryFlag::Normal => topic.to_owned(),
            RetryFlag::RetryV1 => pop_retry_topic(topic, group, false),
            RetryFlag::RetryV2 => pop_retry_topic(topic, group, true),
        }
    }
}

/// A parsed `extraInfo` / `POP_CK`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraInfo {
    pub ck_queue_offset: i64,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    pub retry: RetryFlag,
    pub broker_name: String,
    pub queue_id: i32,
    pub queue_offset: Option<i64>,
}

impl ExtraInfo {
    /// Parses the 7- or 8-field form (a 9th field, the commitlog offset of a gRPC
    /// receipt handle, is ignored). The error names the field that is wrong.
    pub fn parse(s: &str) -> Result<Self, String> {
        let f: Vec<&str> = s.split(' ').collect();
        if f.len() < 7 {
            return Err(format!(
                "extraInfo has {} fields, 7 or more expected",
                f.len()
            ));
        }
        fn num<T: std::str::FromStr>(v: &str, name: &str) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("extraInfo {name} {v:?} is not a number"))
        }
        Ok(ExtraInfo {
            ck_queue_offset: num(f[0], "ckQueueOffset")?,
            pop_time: num(f[1], "popTime")?,
            invisible_time: num(f[2], "invisibleTime")?,
            revive_qid: num(f[3], "reviveQid")?,
            retry: RetryFlag::parse(f[4])
                .ok_or_else(|| format!("extraInfo retry flag {:?} is not 0, 1 or 2", f[4]))?,
            broker_name: f[5].to_owned(),
            queue_id: num(f[6], "queueId")?,
            queue_offset: f.get(7).map(|v| num(v, "queueOffset")).transpose()?,
        })
    }

    pub fn is_order(&self) -> bool {
        self.revive_qid == ORDER_REVIVE_QUEUE
    }
}

impl fmt::Display for ExtraInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {}",
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry.as_str(),
            self.broker_name,
            self.queue_id
        )?;
        if let Some(offset) = self.queue_offset {
            write!(f, " {offset}")?;
        }
        Ok(())
    }
}

/// Appends one `startOffsetInfo` entry: `<retry> <queueId> <startOffset>`.
pub fn push_start_offset_info(out: &mut String, retry: RetryFlag, queue_id: i32, start: i64) {
    push_entry(out, retry, &queue_id.to_string(), &start.to_string());
}

/// Appends one `msgOffsetInfo` entry: `<retry> <queueId> <off1>,<off2>,…`.
pub fn push_msg_offset_info(out: &mut String, retry: RetryFlag, queue_id: i32, offsets: &[i64]) {
    let list: Vec<String> = offsets.iter().map(i64::to_string).collect();
    push_entry(out, retry, &queue_id.to_string(), &list.join(","));
}

/// Appends one `orderCountInfo` entry per queue offset (`<retry> qo<queueId>%<offset>
/// <count>`); `queue_count` adds the per-queue form older clients read.
pub fn push_order_count_info(
    out: &mut String,
    retry: RetryFlag,
    queue_id: i32,
    offset_counts: &[(i64, i32)],
    queue_count: i32,
) {
    for (offset, count) in offset_counts {
        push_entry(
            out,
            retry,
            &format!("qo{queue_id}%{offset}"),
            &count.to_string(),
        );
    }
    push_entry(out, retry, &queue_id.to_string(), &queue_count.to_string());
}

fn push_entry(out: &mut String, retry: RetryFlag, key: &str, value: &str) {
    if !out.is_empty() {
        out.push(';');
    }
    out.push_str(retry.as_str());
    out.push(' ');
    out.push_str(key);
    out.push(' ');
    out.push_str(value);
}

/// Parses an offset-info string into `(key, value)` pairs, key `<retry>@<queue key>`
/// (`ExtraInfoUtil.parse*Info`).
pub fn parse_offset_info(info: &str) -> Result<Vec<(String, String)>, String> {
    info.split(';')
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let f: Vec<&str> = entry.split(' ').collect();
            if f.len() != 3 {
                return Err(format!("bad offset info entry {entry:?}"));
            }
            Ok((format!("{}@{}", f[0], f[1]), f[2].to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_info_round_trips_and_names_bad_fields() {
        let s = "12 1700000000000 60000 3 1 broker-a 0 14";
        let e = ExtraInfo::parse(s).unwrap();
        assert_eq!(e.retry, RetryFlag::RetryV1);
        assert_eq!((e.ck_queue_offset, e.queue_offset), (12, Some(14)));
        assert_eq!(e.to_string(), s);
        let seven = ExtraInfo::parse("0 1 2 999 0 b 3").unwrap();
        assert!(seven.is_order() && seven.queue_offset.is_none());
        assert!(ExtraInfo::parse("1 2 3").unwrap_err().contains("fields"));
        assert!(ExtraInfo::parse("1 x 3 4 0 b 0")
            .unwrap_err()
            .contains("popTime"));
        assert!(ExtraInfo::parse("1 2 3 4 7 b 0")
            .unwrap_err()
            .contains("retry"));
        // A receipt handle's ninth field is ignored.
        assert!(ExtraInfo::parse("1 2 3 4 0 b 0 5 99").is_ok());
    }

    #[test]
    fn retry_topics_and_flags() {
        assert_eq!(pop_retry_topic("T", "g", false), "%RETRY%g_T");
        assert_eq!(pop_retry_topic("T", "g", true), "%RETRY%g+T");
        assert_eq!(RetryFlag::of_topic("%RETRY%g+T"), RetryFlag::RetryV2);
        assert_eq!(RetryFlag::of_topic("%RETRY%g_T"), RetryFlag::RetryV1);
        assert_eq!(RetryFlag::of_topic("T"), RetryFlag::Normal);
        assert_eq!(RetryFlag::RetryV2.real_topic("T", "g"), "%RETRY%g+T");
    }

    #[test]
    fn offset_infos_are_written_as_java_writes_them() {
        let mut start = String::new();
        push_start_offset_info(&mut start, RetryFlag::Normal, 3, 10);
        push_start_offset_info(&mut start, RetryFlag::RetryV1, 0, 4);
        assert_eq!(start, "0 3 10;1 0 4");
        let mut msgs = String::new();
        push_msg_offset_info(&mut msgs, RetryFlag::Normal, 3, &[10, 12]);
        assert_eq!(msgs, "0 3 10,12");
        let mut order = String::new();
        push_order_count_info(&mut order, RetryFlag::Normal, 1, &[(5, 2)], 0);
        assert_eq!(order, "0 qo1%5 2;0 1 0");
        let parsed = parse_offset_info(&start).unwrap();
        assert_eq!(parsed[1], ("1@0".to_owned(), "4".to_owned()));
        assert!(parse_offset_info("0 1").is_err());
    }
}
