//! Queue → offset tables as Java's fastjson writes them, for
//! GET_CONSUMER_STATUS_FROM_CLIENT (`GetConsumerStatusBody`),
//! docs/commands.md#broker-to-client-requests. RESET_CONSUMER_CLIENT_OFFSET's
//! `ResetOffsetBody` is read by the protocol's own reader.
//!
//! fastjson writes a `Map<MessageQueue, Long>` with the queue object itself as the key,
//! which is not JSON:
//!
//! ```text
//! {"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:12,...}}
//! ```
//!
//! [`encode_consumer_status`] writes it, fields in fastjson's alphabetical order, so
//! that Java tools reading the answer parse it.

use std::collections::BTreeMap;

use vostok_remoting::protocol::body::MessageQueue;

/// `GetConsumerStatusBody` with `messageQueueTable` = `table` and an empty
/// `consumerTable`.
pub(crate) fn encode_consumer_status(table: &BTreeMap<MessageQueue, i64>) -> Vec<u8> {
    let quote = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let mut out = String::from("{\"consumerTable\":{},\"messageQueueTable\":{");
    for (i, (mq, offset)) in table.iter().enumerate() {
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

#[cfg(test)]
mod tests {
    use vostok_remoting::protocol::body::ResetOffsetBody;

    use super::*;

    #[test]
    fn consumer_status_round_trips() {
        let mut table = BTreeMap::new();
        table.insert(MessageQueue::new("T\"x", "broker-a", 0), 7);
        table.insert(MessageQueue::new("T", "broker-b", 3), 0);
        let body = encode_consumer_status(&table);
        let text = String::from_utf8(body.clone()).unwrap();
        assert!(
            text.starts_with(r#"{"consumerTable":{},"messageQueueTable":{{"brokerName":"broker-b","queueId":3,"topic":"T"}:0,"#),
            "{text}"
        );
        // The same table form as a reset's body: the protocol's reader reads it back.
        let as_reset = text.replace("\"messageQueueTable\"", "\"offsetTable\"");
        let back = ResetOffsetBody::decode(as_reset.as_bytes())
            .unwrap()
            .offset_table;
        assert_eq!(back.len(), 2);
        assert_eq!(back[&MessageQueue::new("T\"x", "broker-a", 0)], 7);
    }
}
