//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320):
//! docs/commands.md#sending.

use crate::command::ExtFields;
use crate::command_header;
use crate::error::HeaderError;
use crate::protocol::header::{HeaderField, HeaderValue};
use crate::protocol::request_code;

command_header! {
    /// The send header with its long keys (code 10). Codes 310 and 320 carry the same
    /// fields under one-letter keys, see [`SendMessageRequestHeaderV2`];
    /// [`SendMessageRequestHeader::decode`] picks the right form by request code.
    pub struct SendMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        /// Negative: the broker picks a queue.
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: Option<bool> = "unitMode",
        batch: Option<bool> = "batch",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
        broker_name: Option<String> = "bname",
    }
}

command_header! {
    /// The compact form of [`SendMessageRequestHeader`] used by SEND_MESSAGE_V2 and
    /// SEND_BATCH_MESSAGE.
    pub struct SendMessageRequestHeaderV2 {
        a: String = "a",
        b: String = "b",
        c: String = "c",
        d: i32 = "d",
        e: i32 = "e",
        f: i32 = "f",
        g: i64 = "g",
        h: i32 = "h",
        i: Option<String> = "i",
        j: Option<i32> = "j",
        k: Option<bool> = "k",
        l: Option<i32> = "l",
        m: Option<bool> = "m",
        n: Option<String> = "n",
    }
}

impl SendMessageRequestHeader {
    /// Reads the header in the key form that `code` uses: one-letter keys for
    /// SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE, long keys otherwise.
    pub fn decode(code: i32, ext: &ExtFields) -> Result<Self, HeaderError> {
        SendHeaderView::decode(code, ext).map(|view| view.to_owned())
    }

    pub fn is_batch(&self) -> bool {
        self.batch.unwrap_or(false)
    }
}

/// The send header read in place: its text fields borrow from the request's
/// `extFields`, so decoding a send allocates nothing (a send header has a dozen fields
/// and arrives with every message). Reads and writes exactly what
/// [`SendMessageRequestHeader`] and [`SendMessageRequestHeaderV2`] do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendHeaderView<'a> {
    pub producer_group: &'a str,
    pub topic: &'a str,
    pub default_topic: &'a str,
    pub default_topic_queue_nums: i32,
    /// Negative: the broker picks a queue.
    pub queue_id: i32,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub flag: i32,
    pub properties: Option<&'a str>,
    pub reconsume_times: Option<i32>,
    pub unit_mode: Option<bool>,
    pub batch: Option<bool>,
    pub max_reconsume_times: Option<i32>,
    pub broker_name: Option<&'a str>,
}

/// The wire keys of the send header's fields, in field order: the long form (code 10)
/// and the one-letter form (codes 310 and 320).
const LONG_KEYS: [&str; 14] = [
    "producerGroup",
    "topic",
    "defaultTopic",
    "defaultTopicQueueNums",
    "queueId",
    "sysFlag",
    "bornTimestamp",
    "flag",
    "properties",
    "reconsumeTimes",
    "unitMode",
    "batch",
    "maxReconsumeTimes",
    "bname",
];
const SHORT_KEYS: [&str; 14] = [
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "l", "n",
];

/// The field index of a one-letter key ([`SHORT_KEYS`]).
fn short_key_index(k: &str) -> Option<usize> {
    match k.as_bytes() {
        [b @ b'a'..=b'k'] => Some((b - b'a') as usize),
        [b'm'] => Some(11),
        [b'l'] => Some(12),
        [b'n'] => Some(13),
        _ => None,
    }
}

/// The field index of a long key ([`LONG_KEYS`]).
fn long_key_index(k: &str) -> Option<usize> {
    Some(match k {
        "producerGroup" => 0,
        "topic" => 1,
        "defaultTopic" => 2,
        "defaultTopicQueueNums" => 3,
        "queueId" => 4,
        "sysFlag" => 5,
        "bornTimestamp" => 6,
        "flag" => 7,
        "properties" => 8,
        "reconsumeTimes" => 9,
        "unitMode" => 10,
        "batch" => 11,
        "maxReconsumeTimes" => 12,
        "bname" => 13,
        _ => return None,
    })
}

fn required<'a>(raw: Option<&'a str>, key: &'static str) -> Result<&'a str, HeaderError> {
    raw.ok_or(HeaderError::Missing { field: key })
}

impl<'a> SendHeaderView<'a> {
    /// Reads the header in the key form that `code` uses, as
    /// [`SendMessageRequestHeader::decode`] does (the last of duplicate keys wins).
    pub fn decode(code: i32, ext: &'a ExtFields) -> Result<Self, HeaderError> {
        let short =
            code == request_code::SEND_MESSAGE_V2 || code == request_code::SEND_BATCH_MESSAGE;
        let keys = if short { &SHORT_KEYS } else { &LONG_KEYS };
        let mut raw: [Option<&'a str>; 14] = [None; 14];
        let mut bname = None;
        // One match per field, not a scan of the fourteen keys (a compare each): this
        // runs for every message sent.
        for (k, v) in ext.iter() {
            let at = if short {
                short_key_index(k)
            } else {
                long_key_index(k)
            };
            if let Some(i) = at {
                raw[i] = Some(v);
            } else if k == "bname" {
                bname = Some(v);
            }
        }
        let k = |i: usize| keys[i];
        Ok(SendHeaderView {
            producer_group: required(raw[0], k(0))?,
            topic: required(raw[1], k(1))?,
            default_topic: required(raw[2], k(2))?,
            default_topic_queue_nums: i32::from_raw(raw[3], k(3))?,
            queue_id: i32::from_raw(raw[4], k(4))?,
            sys_flag: i32::from_raw(raw[5], k(5))?,
            born_timestamp: i64::from_raw(raw[6], k(6))?,
            flag: i32::from_raw(raw[7], k(7))?,
            properties: raw[8],
            reconsume_times: Option::<i32>::from_raw(raw[9], k(9))?,
            unit_mode: Option::<bool>::from_raw(raw[10], k(10))?,
            batch: Option::<bool>::from_raw(raw[11], k(11))?,
            max_reconsume_times: Option::<i32>::from_raw(raw[12], k(12))?,
            // The one-letter form may carry the broker name under its long key too.
            broker_name: raw[13].or(if short { bname } else { None }),
        })
    }

    pub fn is_batch(&self) -> bool {
        self.batch.unwrap_or(false)
    }

    /// Appends the header under the one-letter keys of SEND_MESSAGE_V2 and
    /// SEND_BATCH_MESSAGE into an empty `ext`, as
    /// [`SendMessageRequestHeaderV2`]'s `write_to` does, without an owned copy of any
    /// field.
    pub fn write_v2(&self, ext: &mut ExtFields) {
        let text = |ext: &mut ExtFields, key: &str, v: &str| ext.push_with(key, |b| b.push_str(v));
        fn value<T: HeaderValue>(ext: &mut ExtFields, key: &str, v: &T) {
            ext.push_with(key, |b| v.render_into(b));
        }
        text(ext, "a", self.producer_group);
        text(ext, "b", self.topic);
        text(ext, "c", self.default_topic);
        value(ext, "d", &self.default_topic_queue_nums);
        value(ext, "e", &self.queue_id);
        value(ext, "f", &self.sys_flag);
        value(ext, "g", &self.born_timestamp);
        value(ext, "h", &self.flag);
        if let Some(v) = self.properties {
            text(ext, "i", v);
        }
        if let Some(v) = &self.reconsume_times {
            value(ext, "j", v);
        }
        if let Some(v) = &self.unit_mode {
            value(ext, "k", v);
        }
        if let Some(v) = &self.max_reconsume_times {
            value(ext, "l", v);
        }
        if let Some(v) = &self.batch {
            value(ext, "m", v);
        }
        if let Some(v) = self.broker_name {
            text(ext, "n", v);
        }
    }

    /// An owned copy.
    pub fn to_owned(&self) -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: self.producer_group.to_owned(),
            topic: self.topic.to_owned(),
            default_topic: self.default_topic.to_owned(),
            default_topic_queue_nums: self.default_topic_queue_nums,
            queue_id: self.queue_id,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            flag: self.flag,
            properties: self.properties.map(str::to_owned),
            reconsume_times: self.reconsume_times,
            unit_mode: self.unit_mode,
            batch: self.batch,
            max_reconsume_times: self.max_reconsume_times,
            broker_name: self.broker_name.map(str::to_owned),
        }
    }
}

impl<'a> From<&'a SendMessageRequestHeader> for SendHeaderView<'a> {
    fn from(h: &'a SendMessageRequestHeader) -> Self {
        SendHeaderView {
            producer_group: &h.producer_group,
            topic: &h.topic,
            default_topic: &h.default_topic,
            default_topic_queue_nums: h.default_topic_queue_nums,
            queue_id: h.queue_id,
            sys_flag: h.sys_flag,
            born_timestamp: h.born_timestamp,
            flag: h.flag,
            properties: h.properties.as_deref(),
            reconsume_times: h.reconsume_times,
            unit_mode: h.unit_mode,
            batch: h.batch,
            max_reconsume_times: h.max_reconsume_times,
            broker_name: h.broker_name.as_deref(),
        }
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v: SendMessageRequestHeaderV2) -> Self {
        SendMessageRequestHeader {
            producer_group: v.a,
            topic: v.b,
            default_topic: v.c,
            default_topic_queue_nums: v.d,
            queue_id: v.e,
            sys_flag: v.f,
            born_timestamp: v.g,
            flag: v.h,
            properties: v.i,
            reconsume_times: v.j,
            unit_mode: v.k,
            max_reconsume_times: v.l,
            batch: v.m,
            broker_name: v.n,
        }
    }
}

impl From<SendMessageRequestHeader> for SendMessageRequestHeaderV2 {
    fn from(h: SendMessageRequestHeader) -> Self {
        SendMessageRequestHeaderV2 {
            a: h.producer_group,
            b: h.topic,
            c: h.default_topic,
            d: h.default_topic_queue_nums,
            e: h.queue_id,
            f: h.sys_flag,
            g: h.born_timestamp,
            h: h.flag,
            i: h.properties,
            j: h.reconsume_times,
            k: h.unit_mode,
            l: h.max_reconsume_times,
            m: h.batch,
            n: h.broker_name,
        }
    }
}

command_header! {
    pub struct SendMessageResponseHeader {
        /// Offset message id(s) of the stored record(s), comma-joined for a batch.
        msg_id: String = "msgId",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        transaction_id: Option<String> = "transactionId",
        batch_uniq_id: Option<String> = "batchUniqId",
        msg_region: Option<String> = "MSG_REGION",
        trace_on: Option<String> = "TRACE_ON",
    }
}

/// [`SendMessageResponseHeader`] written from borrowed fields: the broker answers
/// every send with one, and its region and id need no copy of their own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendResponseView<'a> {
    pub msg_id: &'a str,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub transaction_id: Option<&'a str>,
    pub batch_uniq_id: Option<&'a str>,
    pub msg_region: Option<&'a str>,
    pub trace_on: Option<&'a str>,
}

impl SendResponseView<'_> {
    /// Appends the fields into an empty `ext`, keys and order as
    /// [`SendMessageResponseHeader`]'s `write_to`.
    pub fn write_to(&self, ext: &mut ExtFields) {
        let text = |ext: &mut ExtFields, key: &str, v: Option<&str>| {
            if let Some(v) = v {
                ext.push_with(key, |b| b.push_str(v));
            }
        };
        text(ext, "msgId", Some(self.msg_id));
        ext.push_with("queueId", |b| self.queue_id.render_into(b));
        ext.push_with("queueOffset", |b| self.queue_offset.render_into(b));
        text(ext, "transactionId", self.transaction_id);
        text(ext, "batchUniqId", self.batch_uniq_id);
        text(ext, "MSG_REGION", self.msg_region);
        text(ext, "TRACE_ON", self.trace_on);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::CommandHeader;

    #[test]
    fn key_indexes_follow_the_key_tables() {
        for (i, (short, long)) in SHORT_KEYS.iter().zip(LONG_KEYS).enumerate() {
            assert_eq!(short_key_index(short), Some(i), "{short}");
            assert_eq!(long_key_index(long), Some(i), "{long}");
        }
        for other in ["", "o", "z", "ab", "Topic", "topics", "bnam"] {
            assert_eq!(short_key_index(other), None, "{other}");
            assert_eq!(long_key_index(other), None, "{other}");
        }
    }

    #[test]
    fn v2_keys_map_to_the_long_form() {
        let ext: ExtFields = [
            ("a", "pg"),
            ("b", "T"),
            ("c", "TBW102"),
            ("d", "4"),
            ("e", "-1"),
            ("f", "0"),
            ("g", "1700000000000"),
            ("h", "0"),
            ("m", "true"),
            ("bname", "broker-a"),
        ]
        .into_iter()
        .collect();
        let h = SendMessageRequestHeader::decode(request_code::SEND_BATCH_MESSAGE, &ext).unwrap();
        assert_eq!(h.producer_group, "pg");
        assert_eq!(h.queue_id, -1);
        assert!(h.is_batch());
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
        assert_eq!(
            SendMessageRequestHeader::decode(request_code::SEND_MESSAGE, &ext)
                .unwrap_err()
                .field(),
            "producerGroup"
        );
    }

    fn full_header() -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: "pg".into(),
            topic: "T".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: -1,
            sys_flag: 8,
            born_timestamp: 1_700_000_000_000,
            flag: 3,
            properties: Some("WAIT\u{1}true\u{2}".into()),
            reconsume_times: Some(2),
            unit_mode: Some(false),
            batch: Some(true),
            max_reconsume_times: Some(16),
            broker_name: Some("broker-a".into()),
        }
    }

    #[test]
    fn the_response_view_writes_what_the_owned_header_does() {
        let owned = SendMessageResponseHeader {
            msg_id: "7F0000010000000000000042".into(),
            queue_id: 3,
            queue_offset: -1,
            transaction_id: Some("uniq".into()),
            batch_uniq_id: None,
            msg_region: Some("DefaultRegion".into()),
            trace_on: Some("true".into()),
        };
        let mut a = ExtFields::new();
        owned.write_to(&mut a);
        let mut b = ExtFields::new();
        SendResponseView {
            msg_id: &owned.msg_id,
            queue_id: owned.queue_id,
            queue_offset: owned.queue_offset,
            transaction_id: owned.transaction_id.as_deref(),
            batch_uniq_id: None,
            msg_region: owned.msg_region.as_deref(),
            trace_on: owned.trace_on.as_deref(),
        }
        .write_to(&mut b);
        assert_eq!(a, b);
        assert_eq!(SendMessageResponseHeader::read_from(&b).unwrap(), owned);
    }

    #[test]
    fn the_view_writes_and_reads_what_the_owned_headers_do() {
        let h = full_header();
        let mut owned = ExtFields::new();
        SendMessageRequestHeaderV2::from(h.clone()).write_to(&mut owned);
        let mut viewed = ExtFields::new();
        SendHeaderView::from(&h).write_v2(&mut viewed);
        assert_eq!(viewed, owned, "same keys, values and order");
        for code in [
            request_code::SEND_MESSAGE_V2,
            request_code::SEND_BATCH_MESSAGE,
        ] {
            let view = SendHeaderView::decode(code, &viewed).unwrap();
            assert_eq!(view.to_owned(), h);
        }
        let mut long = ExtFields::new();
        h.write_to(&mut long);
        let view = SendHeaderView::decode(request_code::SEND_MESSAGE, &long).unwrap();
        assert_eq!(view.to_owned(), h);
        // Absent options stay absent; an empty option of a number reads as absent.
        let mut sparse = ExtFields::new();
        let bare = SendMessageRequestHeader {
            properties: None,
            reconsume_times: None,
            unit_mode: None,
            batch: None,
            max_reconsume_times: None,
            broker_name: None,
            ..full_header()
        };
        SendHeaderView::from(&bare).write_v2(&mut sparse);
        assert_eq!(sparse.len(), 8);
        sparse.insert("j", "");
        let view = SendHeaderView::decode(request_code::SEND_MESSAGE_V2, &sparse).unwrap();
        assert_eq!(view.to_owned(), bare);
        // The last of duplicate keys wins; a malformed number names its key.
        sparse.push_decoded("b", "T2");
        assert_eq!(
            SendHeaderView::decode(request_code::SEND_MESSAGE_V2, &sparse)
                .unwrap()
                .topic,
            "T2"
        );
        sparse.push_decoded("g", "x");
        assert_eq!(
            SendHeaderView::decode(request_code::SEND_MESSAGE_V2, &sparse)
                .unwrap_err()
                .field(),
            "g"
        );
    }
}
