//! `ResetOffsetBody` (docs/commands.md#broker-to-client-requests): the offsets of a
//! group's queues after INVOKE_BROKER_TO_RESET_OFFSET, as the broker answers them and
//! pushes them to the group's clients with RESET_CONSUMER_CLIENT_OFFSET. fastjson
//! writes the map with `MessageQueue` objects as keys, which is not JSON; see
//! `queue_table`.

use std::collections::BTreeMap;

use super::queue_table::RawQueueTable;
use super::MessageQueue;
use crate::error::DecodeError;

/// `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12,...}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResetOffsetBody {
    pub offset_table: BTreeMap<MessageQueue, i64>,
}

impl ResetOffsetBody {
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        const WHAT: &str = "ResetOffsetBody";
        let raw: RawQueueTable<i64> = RawQueueTable::decode(WHAT, body)?;
        Ok(ResetOffsetBody {
            offset_table: raw.queues(WHAT)?,
        })
    }

    /// fastjson's form, keys' fields in its alphabetical order.
    pub fn encode(&self) -> Vec<u8> {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
        let mut out = String::from("{\"offsetTable\":{");
        for (i, (mq, offset)) in self.offset_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&format!(
                "{{\"brokerName\":{},\"queueId\":{},\"topic\":{}}}:{offset}",
                quote(&mq.broker_name),
                mq.queue_id,
                quote(&mq.topic)
            ));
        }
        out.push_str("}}");
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastjson_object_keys_round_trip() {
        let body = ResetOffsetBody {
            offset_table: [
                (MessageQueue::new("T", "b", 0), 12),
                (MessageQueue::new("T", "b", 1), 0),
            ]
            .into(),
        };
        let bytes = body.encode();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12,{"brokerName":"b","queueId":1,"topic":"T"}:0}}"#
        );
        assert_eq!(ResetOffsetBody::decode(&bytes).unwrap(), body);
    }

    #[test]
    fn reads_a_clients_reset_with_spaces_and_braces_in_names() {
        let body = br#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:12, {"brokerName":"b,}","queueId":1,"topic":"T"} : 3}}"#;
        let table = ResetOffsetBody::decode(body).unwrap().offset_table;
        assert_eq!(table.len(), 2);
        assert_eq!(table[&MessageQueue::new("T", "broker-a", 0)], 12);
        assert_eq!(table[&MessageQueue::new("T", "b,}", 1)], 3);
    }

    #[test]
    fn reads_string_keys_other_fields_and_empty_tables() {
        let body = br#"{"other":[1,{"x":"}"}],"offsetTable":{"{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":2}":-1},"z":null}"#;
        let table = ResetOffsetBody::decode(body).unwrap().offset_table;
        assert_eq!(table[&MessageQueue::new("T", "b", 2)], -1);
        assert!(ResetOffsetBody::decode(b"{}")
            .unwrap()
            .offset_table
            .is_empty());
        assert!(ResetOffsetBody::decode(br#"{"offsetTable":{}}"#)
            .unwrap()
            .offset_table
            .is_empty());
    }

    #[test]
    fn rejects_malformed_bodies() {
        for bad in [
            &b""[..],
            br#"{"offsetTable":{{"topic":"T"}:1}}"#,
            br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:x}}"#,
            br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:1"#,
            br#"{"offsetTable":{{"brokerName":"b"#,
        ] {
            assert!(ResetOffsetBody::decode(bad).is_err(), "{bad:?}");
        }
    }
}
