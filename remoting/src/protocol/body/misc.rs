//! Small bodies (docs/bodies.md#small-bodies).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// `{"topicList":[...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicList {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
    #[serde(default)]
    pub topic_list: BTreeSet<String>,
}

/// `{"table":{...}}`: KV lists and broker runtime info.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvTable {
    #[serde(default)]
    pub table: BTreeMap<String, String>,
}

/// GET_CONSUMER_LIST_BY_GROUP response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerIdList {
    #[serde(default)]
    pub consumer_id_list: Vec<String>,
}

/// One client connection, as admin listings show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    #[serde(rename = "clientAddr")]
    pub client_addr: String,
    #[serde(rename = "clientId")]
    pub client_id: String,
    pub language: String,
    pub version: i32,
}
