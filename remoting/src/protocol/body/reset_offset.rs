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
}
