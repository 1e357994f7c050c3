//! Queue → offset tables as Java's fastjson writes them, for RESET_CONSUMER_CLIENT_OFFSET
//! (`ResetOffsetBody`) and GET_CONSUMER_STATUS_FROM_CLIENT (`GetConsumerStatusBody`),
//! docs/commands.md#broker-to-client-requests.
//!
//! fastjson writes a `Map<MessageQueue, Long>` with the queue object itself as the key,
//! which is not JSON:
//!
//! ```text
//! {"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:12,...}}
//! ```
//!
//! [`decode`] reads that form (and keys written as JSON strings holding the object);
//! [`encode_consumer_status`] writes it, fields in fastjson's alphabetical order, so
//! that Java tools reading the answer parse it.

use std::collections::{BTreeMap, HashMap};

use vostok_remoting::protocol::body::MessageQueue;

use crate::error::{ClientError, Result};

/// Reads the map in field `field` of a fastjson body; a body without the field is an
/// empty table.
pub(crate) fn decode(body: &[u8], field: &str) -> Result<HashMap<MessageQueue, i64>> {
    let mut p = Parser { s: body, i: 0 };
    let mut table = HashMap::new();
    p.expect(b'{')?;
    if p.eat(b'}') {
        return Ok(table);
    }
    loop {
        let key = p.string()?;
        p.expect(b':')?;
        if key == field {
            p.map_into(&mut table)?;
        } else {
            p.value()?;
        }
        if p.eat(b'}') {
            return Ok(table);
        }
        p.expect(b',')?;
    }
}

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

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

fn malformed(what: &str, at: usize) -> ClientError {
    ClientError::InvalidArgument(format!("malformed offset table: {what} at byte {at}"))
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Result<()> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(malformed(&format!("expected '{}'", b as char), self.i))
        }
    }

    /// The raw text of the next value: an object or array (brackets matched outside
    /// strings), a string, or a scalar up to the next `,`, `}` or `]`.
    fn value(&mut self) -> Result<&[u8]> {
        let start = match self.peek() {
            Some(_) => self.i,
            None => return Err(malformed("value expected", self.i)),
        };
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        while self.i < self.s.len() {
            let b = self.s[self.i];
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                    if depth == 0 {
                        self.i += 1;
                        return Ok(&self.s[start..self.i]);
                    }
                }
            } else {
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth == 0 => return Ok(&self.s[start..self.i]),
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            self.i += 1;
                            return Ok(&self.s[start..self.i]);
                        }
                    }
                    b',' if depth == 0 => return Ok(&self.s[start..self.i]),
                    _ => {}
                }
            }
            self.i += 1;
        }
        if depth == 0 && !in_string {
            Ok(&self.s[start..])
        } else {
            Err(malformed("unterminated value", start))
        }
    }

    fn string(&mut self) -> Result<String> {
        if self.peek() != Some(b'"') {
            return Err(malformed("string expected", self.i));
        }
        let at = self.i;
        let raw = self.value()?;
        serde_json::from_slice(raw).map_err(|e| malformed(&format!("bad string ({e})"), at))
    }

    fn map_into(&mut self, table: &mut HashMap<MessageQueue, i64>) -> Result<()> {
        self.expect(b'{')?;
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            let at = self.i;
            let mq: MessageQueue = match self.peek() {
                Some(b'{') => serde_json::from_slice(self.value()?),
                Some(b'"') => serde_json::from_str(&self.string()?),
                _ => return Err(malformed("queue key expected", at)),
            }
            .map_err(|e| malformed(&format!("bad queue key ({e})"), at))?;
            self.expect(b':')?;
            let at = self.i;
            let offset = std::str::from_utf8(self.value()?)
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or_else(|| malformed("offset expected", at))?;
            table.insert(mq, offset);
            if self.eat(b'}') {
                return Ok(());
            }
            self.expect(b',')?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fastjson_object_keys() {
        let body = br#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:12, {"brokerName":"b,}","queueId":1,"topic":"T"} : 3}}"#;
        let table = decode(body, "offsetTable").unwrap();
        assert_eq!(table.len(), 2);
        assert_eq!(table[&MessageQueue::new("T", "broker-a", 0)], 12);
        assert_eq!(table[&MessageQueue::new("T", "b,}", 1)], 3);
    }

    #[test]
    fn reads_string_keys_other_fields_and_empty_tables() {
        let body = br#"{"other":[1,{"x":"}"}],"offsetTable":{"{\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":2}":-1},"z":null}"#;
        let table = decode(body, "offsetTable").unwrap();
        assert_eq!(table[&MessageQueue::new("T", "b", 2)], -1);
        assert!(decode(b"{}", "offsetTable").unwrap().is_empty());
        assert!(decode(br#"{"offsetTable":{}}"#, "offsetTable")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn rejects_malformed_bodies() {
        for bad in [
            &b""[..],
            b"[]",
            br#"{"offsetTable":{{"topic":"T"}:1}}"#,
            br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:x}}"#,
            br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:1"#,
            br#"{"offsetTable":{{"brokerName":"b"#,
        ] {
            assert!(decode(bad, "offsetTable").is_err(), "{bad:?}");
        }
    }

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
        let back = decode(&body, "messageQueueTable").unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[&MessageQueue::new("T\"x", "broker-a", 0)], 7);
    }
}
