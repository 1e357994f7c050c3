//! How each group's consumers get each topic's messages, pull or POP
//! (`MessageRequestModeManager`, `config/messageRequestMode.json`): set by
//! SET_MESSAGE_REQUEST_MODE (`mqadmin setConsumeMode`), read by QUERY_ASSIGNMENT when a
//! consumer asks the broker for its queues.

use std::collections::BTreeMap;
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use tracing::warn;
use vostok_remoting::protocol::body::SetMessageRequestModeRequestBody;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::RwLockExt;

use crate::config::BrokerConfig;

/// The file's content, Apache's layout.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Persisted {
    #[serde(default)]
    message_request_mode_map: BTreeMap<String, BTreeMap<String, SetMessageRequestModeRequestBody>>,
}

pub struct MessageRequestModeManager {
    file: ConfigFile,
    table: RwLock<Persisted>,
}

impl MessageRequestModeManager {
    pub fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("messageRequestMode.json"));
        let table = file
            .load(|bytes| {
                vostok_remoting::protocol::json::from_slice("messageRequestMode.json", bytes).ok()
            })
            .unwrap_or_default();
        MessageRequestModeManager {
            file,
            table: RwLock::new(table),
        }
    }

    /// The mode set for `group` on `topic`, if any.
    pub fn get(&self, topic: &str, group: &str) -> Option<SetMessageRequestModeRequestBody> {
        self.table
            .read_locked()
            .message_request_mode_map
            .get(topic)?
            .get(group)
            .cloned()
    }

    pub fn set(&self, mode: SetMessageRequestModeRequestBody) {
        self.table
            .write_locked()
            .message_request_mode_map
            .entry(mode.topic.clone())
            .or_default()
            .insert(mode.consumer_group.clone(), mode);
        self.file.mark_dirty();
    }

    /// The table as `config/messageRequestMode.json` holds it (GET_ALL_MESSAGE_REQUEST_MODE).
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&*self.table.read_locked()).unwrap_or_default()
    }

    /// Writes the file if it changed. Blocking file work: call it off the async runtime.
    pub fn persist(&self) {
        let written = self.file.persist_if_dirty(|| {
            serde_json::to_vec_pretty(&*self.table.read_locked()).unwrap_or_default()
        });
        if let Err(e) = written {
            warn!(file = %self.file.path().display(), error = %e, "cannot persist message request modes");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::protocol::body::MessageRequestMode;

    #[test]
    fn modes_persist_in_apaches_layout() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store: vostok_store::StoreConfig {
                store_path_root_dir: dir.path().to_owned(),
                ..Default::default()
            },
            ..Default::default()
        };
        let table = MessageRequestModeManager::load(&config);
        table.set(SetMessageRequestModeRequestBody {
            topic: "T".into(),
            consumer_group: "G".into(),
            mode: MessageRequestMode::Pop,
            pop_share_queue_num: 2,
        });
        table.persist();
        let text =
            std::fs::read_to_string(config.config_dir().join("messageRequestMode.json")).unwrap();
        assert!(text.contains("\"messageRequestModeMap\""), "{text}");
        let again = MessageRequestModeManager::load(&config);
        let mode = again.get("T", "G").unwrap();
        assert_eq!(
            (mode.mode, mode.pop_share_queue_num),
            (MessageRequestMode::Pop, 2)
        );
        assert!(again.get("T", "other").is_none());
    }
}
