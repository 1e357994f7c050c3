//! `TopicConfig`, `DataVersion` and the topic table a broker persists and registers
//! (docs/bodies.md#registerbrokerbody-and-topicconfig, `config/topics.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::java_enum;
use crate::protocol::topic::perm;

java_enum! {
    pub enum TopicFilterType {
        SingleTag = "SINGLE_TAG",
        MultiTag = "MULTI_TAG",
    }
}

// The enum comes from a macro that takes no variant attributes, so no `#[default]`.
#[allow(clippy::derivable_impls)]
impl Default for TopicFilterType {
    fn default() -> Self {
        TopicFilterType::SingleTag
    }
}

/// One topic as a broker serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfig {
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
    #[serde(default)]
    pub order: bool,
    #[serde(default = "default_perm")]
    pub perm: i32,
    pub read_queue_nums: i32,
    #[serde(default)]
    pub topic_filter_type: TopicFilterType,
    pub topic_name: String,
    #[serde(default)]
    pub topic_sys_flag: i32,
    pub write_queue_nums: i32,
}

fn default_perm() -> i32 {
    perm::READ | perm::WRITE
}

impl TopicConfig {
    /// A read-write topic with `queues` read and write queues.
    pub fn new(name: impl Into<String>, queues: i32) -> Self {
        TopicConfig {
            attributes: BTreeMap::new(),
            order: false,
            perm: default_perm(),
            read_queue_nums: queues,
            topic_filter_type: TopicFilterType::SingleTag,
            topic_name: name.into(),
            topic_sys_flag: 0,
            write_queue_nums: queues,
        }
    }

    pub fn with_perm(mut self, perm: i32) -> Self {
        self.perm = perm;
        self
    }

    /// `TopicConfig.encode`: the space-separated text of the compressed register body.
    pub fn encode_text(&self) -> String {
        let attributes = crate::protocol::json::to_vec(&self.attributes);
        format!(
            "{} {} {} {} {} {}",
            self.topic_name,
            self.read_queue_nums,
            self.write_queue_nums,
            self.perm,
            self.topic_filter_type,
            String::from_utf8_lossy(&attributes)
        )
    }

    /// `TopicConfig.decode`; the attributes part is optional (4.x has none).
    pub fn decode_text(text: &str) -> Option<Self> {
        let mut parts = text.splitn(6, ' ');
        let topic_name = parts.next()?.to_owned();
        let read_queue_nums = parts.next()?.parse().ok()?;
        let write_queue_nums = parts.next()?.parse().ok()?;
        let perm = parts.next()?.parse().ok()?;
        let topic_filter_type = TopicFilterType::from_name(parts.next()?)?;
        let attributes = match parts.next() {
            Some(json) if !json.is_empty() => serde_json::from_str(json).ok()?,
            _ => BTreeMap::new(),
        };
        Some(TopicConfig {
            attributes,
            order: false,
            perm,
            read_queue_nums,
            topic_filter_type,
            topic_name,
            topic_sys_flag: 0,
            write_queue_nums,
        })
    }
}

/// Version of a broker's topic table: the name server re-reads topics only when it
/// changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataVersion {
    pub counter: i64,
    #[serde(default)]
    pub state_version: i64,
    pub timestamp: i64,
}

impl DataVersion {
    pub fn new(now_ms: i64) -> Self {
        DataVersion {
            counter: 0,
            state_version: 0,
            timestamp: now_ms,
        }
    }

    /// `DataVersion.nextVersion`.
    pub fn next(&mut self, now_ms: i64) {
        self.counter += 1;
        self.timestamp = now_ms;
    }
}

/// `TopicConfigSerializeWrapper` (4.x) / `TopicConfigAndMappingSerializeWrapper` (5.x):
/// the topic table with its version, as in `config/topics.json` and the register body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigSerializeWrapper {
    #[serde(default)]
    pub data_version: DataVersion,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping_data_version: Option<DataVersion>,
    #[serde(default)]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_detail_map: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_info_map: Option<BTreeMap<String, serde_json::Value>>,
}
