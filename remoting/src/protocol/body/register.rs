//! REGISTER_BROKER body in its JSON and zlib-compressed forms
//! (docs/bodies.md#registerbrokerbody-and-topicconfig).
//!
//! Compressed layout, inside one zlib stream:
//!
//! ```text
//! int len + DataVersion JSON
//! int topicCount, then per topic: int len + TopicConfig text ("name r w perm type [attrs]")
//! int len + filter server list JSON
//! 5.x only: int count, then per entry: int len + TopicQueueMappingInfo JSON
//! ```

use std::io::{Read, Write};

use bytes::{Buf, BufMut};
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};

use super::{DataVersion, TopicConfig, TopicConfigSerializeWrapper};
use crate::error::DecodeError;

/// Largest decompressed register body accepted; a broker with 100,000 topics needs
/// about 10 MiB.
pub const MAX_REGISTER_BODY: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBrokerBody {
    #[serde(default)]
    pub filter_server_list: Vec<String>,
    #[serde(default)]
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
}

impl RegisterBrokerBody {
    pub fn encode(&self) -> Vec<u8> {
        crate::protocol::json::to_vec(self)
    }

    /// Decodes the JSON or, when `compressed`, the zlib form.
    pub fn decode(body: &[u8], compressed: bool) -> Result<Self, DecodeError> {
        if compressed {
            Self::decode_compressed(body)
        } else {
            crate::protocol::json::from_slice("RegisterBrokerBody", body)
        }
    }

    /// The compressed form, as a broker with `compressedRegister` sends it.
    pub fn encode_compressed(&self) -> Vec<u8> {
        let mut raw = Vec::new();
        let put_text = |raw: &mut Vec<u8>, text: &[u8]| {
            raw.put_i32(text.len() as i32);
            raw.put_slice(text);
        };
        let wrapper = &self.topic_config_serialize_wrapper;
        put_text(
            &mut raw,
            &crate::protocol::json::to_vec(&wrapper.data_version),
        );
        raw.put_i32(wrapper.topic_config_table.len() as i32);
        for topic in wrapper.topic_config_table.values() {
            put_text(&mut raw, topic.encode_text().as_bytes());
        }
        put_text(
            &mut raw,
            &crate::protocol::json::to_vec(&self.filter_server_list),
        );
        raw.put_i32(0);
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
        // Writing into a Vec cannot fail.
        encoder.write_all(&raw).expect("zlib into memory");
        encoder.finish().expect("zlib into memory")
    }

    fn decode_compressed(body: &[u8]) -> Result<Self, DecodeError> {
        let mut raw = Vec::new();
        ZlibDecoder::new(body)
            .take(MAX_REGISTER_BODY as u64 + 1)
            .read_to_end(&mut raw)
            .map_err(|e| DecodeError::invalid("compressed RegisterBrokerBody", e.to_string()))?;
        if raw.len() > MAX_REGISTER_BODY {
            return Err(DecodeError::invalid(
                "compressed RegisterBrokerBody",
                format!("inflates beyond {MAX_REGISTER_BODY} bytes"),
            ));
        }
        let mut buf = &raw[..];
        let data_version: DataVersion =
            serde_json::from_slice(take_block(&mut buf, "DataVersion")?).map_err(|source| {
                DecodeError::Json {
                    what: "DataVersion",
                    source,
                }
            })?;
        let count = take_count(&mut buf, "topic count")?;
        let mut wrapper = TopicConfigSerializeWrapper {
            data_version,
            ..Default::default()
        };
        for _ in 0..count {
            let text = take_block(&mut buf, "TopicConfig")?;
            let text = std::str::from_utf8(text)
                .map_err(|_| DecodeError::invalid("TopicConfig", "not UTF-8"))?;
            let topic = TopicConfig::decode_text(text)
                .ok_or_else(|| DecodeError::invalid("TopicConfig", format!("bad text {text:?}")))?;
            wrapper
                .topic_config_table
                .insert(topic.topic_name.clone(), topic);
        }
        let filter_server_list = if buf.has_remaining() {
            serde_json::from_slice(take_block(&mut buf, "filter server list")?).map_err(
                |source| DecodeError::Json {
                    what: "filter server list",
                    source,
                },
            )?
        } else {
            Vec::new()
        };
        // 5.x appends static-topic mapping entries; Vostok serves no static topics.
        Ok(RegisterBrokerBody {
            filter_server_list,
            topic_config_serialize_wrapper: wrapper,
        })
    }
}

fn take_count(buf: &mut &[u8], what: &'static str) -> Result<usize, DecodeError> {
    if buf.remaining() < 4 {
        return Err(DecodeError::Truncated {
            what,
            needed: 4,
            available: buf.remaining(),
        });
    }
    let n = buf.get_i32();
    usize::try_from(n).map_err(|_| DecodeError::invalid(what, format!("negative count {n}")))
}

fn take_block<'a>(buf: &mut &'a [u8], what: &'static str) -> Result<&'a [u8], DecodeError> {
    let len = take_count(buf, what)?;
    if buf.remaining() < len {
        return Err(DecodeError::Truncated {
            what,
            needed: len,
            available: buf.remaining(),
        });
    }
    let (block, rest) = buf.split_at(len);
    *buf = rest;
    Ok(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RegisterBrokerBody {
        let mut body = RegisterBrokerBody::default();
        body.topic_config_serialize_wrapper.data_version = DataVersion {
            counter: 3,
            state_version: 0,
            timestamp: 1_700_000_000_000,
        };
        for name in ["TopicTest", "%RETRY%cg"] {
            body.topic_config_serialize_wrapper
                .topic_config_table
                .insert(name.into(), TopicConfig::new(name, 4));
        }
        body
    }

    #[test]
    fn reads_the_documented_5x_json() {
        let raw = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;
        let body = RegisterBrokerBody::decode(raw.as_bytes(), false).unwrap();
        let table = &body.topic_config_serialize_wrapper.topic_config_table;
        assert_eq!(table["TopicTest"].write_queue_nums, 4);
        assert_eq!(body.topic_config_serialize_wrapper.data_version.counter, 3);
    }

    #[test]
    fn compressed_form_round_trips() {
        let body = sample();
        let packed = body.encode_compressed();
        let back = RegisterBrokerBody::decode(&packed, true).unwrap();
        assert_eq!(back, body);
    }

    #[test]
    fn compressed_garbage_is_an_error() {
        assert!(RegisterBrokerBody::decode(b"not zlib", true).is_err());
        let mut e = ZlibEncoder::new(Vec::new(), Compression::fast());
        e.write_all(&[0, 0, 0, 9, b'{']).unwrap();
        assert!(RegisterBrokerBody::decode(&e.finish().unwrap(), true).is_err());
        let mut e = ZlibEncoder::new(Vec::new(), Compression::fast());
        e.write_all(&[0, 0, 0, 2, b'{', b'}', 0xff, 0xff, 0xff, 0xff])
            .unwrap();
        assert!(RegisterBrokerBody::decode(&e.finish().unwrap(), true).is_err());
    }
}
