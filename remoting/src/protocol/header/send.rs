//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320):
//! docs/commands.md#sending.

use crate::command::ExtFields;
use crate::command_header;
use crate::error::HeaderError;
use crate::protocol::header::CommandHeader;
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
        if code == request_code::SEND_MESSAGE_V2 || code == request_code::SEND_BATCH_MESSAGE {
            let v2 = SendMessageRequestHeaderV2::read_from(ext)?;
            let mut header = SendMessageRequestHeader::from(v2);
            if header.broker_name.is_none() {
                header.broker_name = ext.get("bname").map(str::to_owned);
            }
            Ok(header)
        } else {
            Self::read_from(ext)
        }
    }

    pub fn is_batch(&self) -> bool {
        self.batch.unwrap_or(false)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
