//! REGISTER_BROKER body in its JSON and zlib-compressed forms
//! (docs/bodies.md#registerbrokerbody-and-topicconfig), and a topic table cut into
//! several bodies when one would not fit a frame ([`RegisterBrokerBody::encode_parts`]).
//!
//! Compressed layout, inside one zlib stream:
//!
//! ```text
//! int len + DataVersion JSON
//! int topicCount, then per topic: int len + TopicConfig text ("name r w perm type [attrs]")
//! int len + filter server list JSON
//! 5.x only: int count, then per entry: int len + TopicQueueMappingInfo JSON
//! ```

use std::collections::BTreeMap;
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

    /// The body in the form `compressed` asks for.
    pub fn encode_as(&self, compressed: bool) -> Vec<u8> {
        if compressed {
            self.encode_compressed()
        } else {
            self.encode()
        }
    }

    /// The bodies that register `wrapper`: one, unless the table has more than
    /// `max_topics` topics or its body more than `max_bytes` bytes; then parts of at
    /// most `max_topics` topics, cut again until each body fits (a single topic too
    /// large still makes a part of its own).
    ///
    /// A name server re-reads a registered topic only when the registration's
    /// DataVersion differs from the broker's last one (or the topic is new there), so
    /// parts that all carried the broker's version, as RocketMQ's split registration
    /// sends them, would leave a changed topic outside the first part unchanged there.
    /// Each part carries its own version instead: the broker's, with the part's index
    /// added to its timestamp. Every part then differs from the one before, and from
    /// the last part of the previous round, so each is read in full, and the name
    /// server learns a version no real one of the broker can take (those move the
    /// counter).
    pub fn encode_parts(
        wrapper: &TopicConfigSerializeWrapper,
        max_topics: usize,
        max_bytes: usize,
        compressed: bool,
    ) -> Vec<Vec<u8>> {
        let encode = |table: BTreeMap<String, TopicConfig>, version: &DataVersion| {
            let body = RegisterBrokerBody {
                filter_server_list: Vec::new(),
                topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                    data_version: version.clone(),
                    mapping_data_version: wrapper.mapping_data_version.clone(),
                    topic_config_table: table,
                    topic_queue_mapping_detail_map: wrapper.topic_queue_mapping_detail_map.clone(),
                    topic_queue_mapping_info_map: wrapper.topic_queue_mapping_info_map.clone(),
                },
            };
            let bytes = body.encode_as(compressed);
            (
                body.topic_config_serialize_wrapper.topic_config_table,
                bytes,
            )
        };
        let mut pending: Vec<BTreeMap<String, TopicConfig>> = Vec::new();
        let mut chunk = BTreeMap::new();
        for (name, topic) in &wrapper.topic_config_table {
            chunk.insert(name.clone(), topic.clone());
            if chunk.len() >= max_topics.max(1) {
                pending.push(std::mem::take(&mut chunk));
            }
        }
        if !chunk.is_empty() || pending.is_empty() {
            pending.push(chunk);
        }
        // Depth first, so that the parts keep the table's order.
        pending.reverse();
        let mut parts = Vec::new();
        while let Some(table) = pending.pop() {
            let (table, bytes) = encode(table, &wrapper.data_version);
            if bytes.len() <= max_bytes || table.len() <= 1 {
                parts.push((table, bytes));
                continue;
            }
            // As many parts as the size says, of as many topics each; one that still
            // does not fit is cut again.
            let cuts = bytes.len().div_ceil(max_bytes.max(1)).clamp(2, table.len());
            let per_part = table.len().div_ceil(cuts);
            let mut cut: Vec<BTreeMap<String, TopicConfig>> = Vec::new();
            for (name, topic) in table {
                match cut.last_mut() {
                    Some(part) if part.len() < per_part => {
                        part.insert(name, topic);
                    }
                    _ => cut.push(BTreeMap::from([(name, topic)])),
                }
            }
            pending.extend(cut.into_iter().rev());
        }
        if parts.len() == 1 {
            return parts.into_iter().map(|(_, bytes)| bytes).collect();
        }
        parts
            .into_iter()
            .enumerate()
            .map(|(i, (table, _))| {
                let mut version = wrapper.data_version.clone();
                version.timestamp = version.timestamp.saturating_add(i as i64);
                encode(table, &version).1
            })
            .collect()
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

    fn table_of(n: usize) -> TopicConfigSerializeWrapper {
        let mut wrapper = sample().topic_config_serialize_wrapper;
        wrapper.topic_config_table = (0..n)
            .map(|i| {
                let name = format!("T{i:05}{}", "x".repeat(100));
                (name.clone(), TopicConfig::new(name, 4))
            })
            .collect();
        wrapper
    }

    fn decoded(parts: &[Vec<u8>], compressed: bool) -> Vec<TopicConfigSerializeWrapper> {
        parts
            .iter()
            .map(|p| {
                RegisterBrokerBody::decode(p, compressed)
                    .unwrap()
                    .topic_config_serialize_wrapper
            })
            .collect()
    }

    #[test]
    fn a_table_that_fits_is_one_body_with_the_broker_s_version() {
        let wrapper = table_of(50);
        for compressed in [false, true] {
            let parts = RegisterBrokerBody::encode_parts(&wrapper, usize::MAX, 1 << 20, compressed);
            assert_eq!(parts.len(), 1);
            assert_eq!(decoded(&parts, compressed)[0], wrapper);
        }
        let empty = TopicConfigSerializeWrapper::default();
        let parts = RegisterBrokerBody::encode_parts(&empty, 800, 1 << 20, false);
        assert_eq!(
            decoded(&parts, false),
            vec![empty],
            "an empty table registers too"
        );
    }

    #[test]
    fn a_large_table_is_cut_into_parts_that_fit_each_with_a_version_of_its_own() {
        let wrapper = table_of(1000);
        for (max_topics, compressed) in [(usize::MAX, false), (300, false), (usize::MAX, true)] {
            let whole =
                RegisterBrokerBody::encode_parts(&wrapper, usize::MAX, usize::MAX, compressed);
            let limit = whole[0].len() / 4;
            let parts = RegisterBrokerBody::encode_parts(&wrapper, max_topics, limit, compressed);
            assert!(parts.len() >= 5, "{}", parts.len());
            assert!(parts.iter().all(|p| p.len() <= limit));
            let decoded = decoded(&parts, compressed);
            assert!(decoded
                .iter()
                .all(|w| w.topic_config_table.len() <= max_topics));
            let mut versions: Vec<_> = decoded.iter().map(|w| w.data_version.clone()).collect();
            assert_eq!(versions[0], wrapper.data_version);
            versions.dedup();
            assert_eq!(versions.len(), parts.len(), "each part its own version");
            assert!(versions
                .iter()
                .all(|v| v.counter == wrapper.data_version.counter));
            let mut names = Vec::new();
            for w in &decoded {
                names.extend(w.topic_config_table.keys().cloned());
            }
            let want: Vec<String> = wrapper.topic_config_table.keys().cloned().collect();
            assert_eq!(names, want, "every topic once, in order");
        }
        let parts = RegisterBrokerBody::encode_parts(&wrapper, 300, usize::MAX, false);
        let sizes: Vec<usize> = decoded(&parts, false)
            .iter()
            .map(|w| w.topic_config_table.len())
            .collect();
        assert_eq!(
            sizes,
            [300, 300, 300, 100],
            "splitRegistrationSize as RocketMQ cuts"
        );
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
