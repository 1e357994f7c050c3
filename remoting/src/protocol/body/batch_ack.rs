//! BATCH_ACK_MESSAGE body (docs/pop.md#batch_ack_message; `BatchAckMessageRequestBody`,
//! `BatchAck`, `BitSetSerializerDeserializer`).
//!
//! `{"brokerName":"b","acks":[{"c":group,"t":topic,"r":"0","so":start,"q":queue,
//! "rq":reviveQid,"pt":popTime,"it":invisibleTime,"b":"<base64>"}]}` where `b` is Java's
//! `BitSet.toByteArray()` in Base64: bit `i` (little-endian within and across bytes)
//! acks queue offset `so + i`. Java reads the long key names too.

use base64::Engine;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchAckMessageRequestBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
    #[serde(default)]
    pub acks: Vec<BatchAck>,
}

/// The acks of one checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAck {
    #[serde(rename = "c", alias = "consumerGroup")]
    pub consumer_group: String,
    /// The normal topic; `retry` says whether the messages came from its POP retry topic.
    #[serde(rename = "t", alias = "topic")]
    pub topic: String,
    #[serde(rename = "r", alias = "retry")]
    pub retry: String,
    #[serde(rename = "so", alias = "startOffset")]
    pub start_offset: i64,
    #[serde(rename = "q", alias = "queueId")]
    pub queue_id: i32,
    #[serde(rename = "rq", alias = "reviveQueueId")]
    pub revive_queue_id: i32,
    #[serde(rename = "pt", alias = "popTime")]
    pub pop_time: i64,
    #[serde(rename = "it", alias = "invisibleTime")]
    pub invisible_time: i64,
    #[serde(rename = "b", alias = "bitSet", with = "java_bitset")]
    pub bit_set: Vec<u32>,
}

impl BatchAck {
    /// The acked queue offsets.
    pub fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        self.bit_set
            .iter()
            .map(move |&i| self.start_offset.saturating_add(i64::from(i)))
    }
}

/// A `java.util.BitSet` as its `toByteArray()` in Base64, held as the set bit indexes.
pub mod java_bitset {
    use super::*;

    /// Largest bit index read: a checkpoint covers at most a few dozen offsets, so a
    /// longer set is garbage and is not expanded.
    const MAX_BITS: usize = 1 << 16;

    pub fn to_bytes(bits: &[u32]) -> Vec<u8> {
        let len = bits.iter().max().map_or(0, |&m| m as usize / 8 + 1);
        let mut out = vec![0u8; len];
        for &b in bits {
            out[b as usize / 8] |= 1 << (b % 8);
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, byte) in bytes.iter().enumerate().take(MAX_BITS / 8) {
            for j in 0..8 {
                if byte & (1 << j) != 0 {
                    out.push((i * 8 + j) as u32);
                }
            }
        }
        out
    }

    pub fn serialize<S: serde::Serializer>(bits: &[u32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(to_bytes(bits)))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(serde::de::Error::custom)?;
        Ok(from_bytes(&bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitsets_read_as_java_writes_them() {
        // new BitSet(); set(0); set(9); toByteArray() == {0x01, 0x02} == "AQI="
        let json = r#"{"brokerName":"b","acks":[{"c":"g","t":"T","r":"0","so":10,"q":1,"rq":3,"pt":5,"it":6,"b":"AQI="}]}"#;
        let body: BatchAckMessageRequestBody = serde_json::from_str(json).unwrap();
        let ack = &body.acks[0];
        assert_eq!(ack.bit_set, vec![0, 9]);
        assert_eq!(ack.offsets().collect::<Vec<_>>(), vec![10, 19]);
        let again: BatchAckMessageRequestBody =
            serde_json::from_slice(&serde_json::to_vec(&body).unwrap()).unwrap();
        assert_eq!(again, body);
        assert!(serde_json::to_string(&body)
            .unwrap()
            .contains("\"b\":\"AQI=\""));
        assert_eq!(java_bitset::to_bytes(&[]), Vec::<u8>::new());
    }

    #[test]
    fn long_names_and_bad_base64() {
        let json = r#"{"acks":[{"consumerGroup":"g","topic":"T","retry":"1","startOffset":0,"queueId":0,"reviveQueueId":0,"popTime":1,"invisibleTime":2,"bitSet":"Aw=="}]}"#;
        let body: BatchAckMessageRequestBody = serde_json::from_str(json).unwrap();
        assert_eq!(body.acks[0].bit_set, vec![0, 1]);
        let bad =
            r#"{"acks":[{"c":"g","t":"T","r":"0","so":0,"q":0,"rq":0,"pt":1,"it":2,"b":"!!"}]}"#;
        assert!(serde_json::from_str::<BatchAckMessageRequestBody>(bad).is_err());
    }
}
