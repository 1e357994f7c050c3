//! Committed consumer offsets (`ConsumerOffsetManager`), persisted to
//! `config/consumerOffset.json` every `flushConsumerOffsetInterval` and at shutdown.
//!
//! Layout (docs/store.md#config-files): `{"offsetTable":{"topic@group":{"0":12,"1":3}}}`.
//! Java writes the queue ids as bare integers; both forms are read, standard JSON is
//! written.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tracing::warn;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::MutexExt;

use crate::config::BrokerConfig;

const TOPIC_GROUP_SEPARATOR: char = '@';

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Persisted {
    #[serde(default)]
    offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
}

pub struct ConsumerOffsetManager {
    file: ConfigFile,
    /// `topic@group` → queue id → next offset to consume.
    table: Mutex<HashMap<String, HashMap<i32, i64>>>,
    dirty: AtomicBool,
}

fn key(topic: &str, group: &str) -> String {
    let mut k = String::with_capacity(topic.len() + group.len() + 1);
    k.push_str(topic);
    k.push(TOPIC_GROUP_SEPARATOR);
    k.push_str(group);
    k
}

impl ConsumerOffsetManager {
    pub fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("consumerOffset.json"));
        let persisted: Persisted = file
            .load(|bytes| {
                vostok_remoting::protocol::json::from_slice("consumerOffset.json", bytes).ok()
            })
            .unwrap_or_default();
        let table = persisted
            .offset_table
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect();
        ConsumerOffsetManager {
            file,
            table: Mutex::new(table),
            dirty: AtomicBool::new(false),
        }
    }

    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut table = self.table.locked();
        let k = key(topic, group);
        match table.get_mut(&k) {
            Some(queues) => {
                queues.insert(queue_id, offset);
            }
            None => {
                table.insert(k, HashMap::from([(queue_id, offset)]));
            }
        }
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// The committed offset, or -1 when the group never committed one for the queue.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> i64 {
        self.table
            .locked()
            .get(&key(topic, group))
            .and_then(|queues| queues.get(&queue_id).copied())
            .unwrap_or(-1)
    }

    /// Records that `group` consumes `topic` before it has committed anything there:
    /// an entry without queues, persisted like any other, so that the group counts as
    /// at the start of the topic's queues until it commits, across its disconnections
    /// and broker restarts ([`Self::min_committed_offsets`]). True when it is new.
    pub fn note_consumer(&self, group: &str, topic: &str) -> bool {
        let k = key(topic, group);
        let mut table = self.table.locked();
        if table.contains_key(&k) {
            return false;
        }
        table.insert(k, HashMap::new());
        self.dirty.store(true, Ordering::Relaxed);
        true
    }

    /// Where the slowest consumer of each queue of `topic` stands: queue id → the
    /// lowest offset committed on it by the groups with an entry for the topic here and
    /// the `online` groups (subscribers that may have none yet). A queue is absent when
    /// one of those groups has not committed on it, since that group is still at the
    /// queue's start; every queue is absent when no group consumes the topic. The
    /// store's retention asks this before a forced deletion.
    pub fn min_committed_offsets(&self, topic: &str, online: &[String]) -> HashMap<i32, i64> {
        let table = self.table.locked();
        let mut groups: Vec<&HashMap<i32, i64>> = table
            .iter()
            .filter(|(k, _)| k.rsplit_once(TOPIC_GROUP_SEPARATOR).map(|(t, _)| t) == Some(topic))
            .map(|(_, queues)| queues)
            .collect();
        // An online group with an entry is among `groups` already.
        if online.iter().any(|g| !table.contains_key(&key(topic, g))) {
            return HashMap::new();
        }
        let Some(first) = groups.pop() else {
            return HashMap::new();
        };
        first
            .iter()
            .filter_map(|(queue_id, offset)| {
                groups
                    .iter()
                    .try_fold(*offset, |min, queues| {
                        queues.get(queue_id).map(|o| min.min(*o))
                    })
                    .map(|min| (*queue_id, min))
            })
            .collect()
    }

    /// Queue id → offset for one group and topic.
    pub fn query_all(&self, group: &str, topic: &str) -> HashMap<i32, i64> {
        self.table
            .locked()
            .get(&key(topic, group))
            .cloned()
            .unwrap_or_default()
    }

    /// The groups with offsets committed on `topic` (Apache's `whichGroupByTopic`).
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        self.table
            .locked()
            .keys()
            .filter_map(|k| k.rsplit_once(TOPIC_GROUP_SEPARATOR))
            .filter(|(t, _)| *t == topic)
            .map(|(_, g)| g.to_owned())
            .collect()
    }

    /// Every `(topic, group)` with committed offsets.
    pub fn topic_groups(&self) -> Vec<(String, String)> {
        self.table
            .locked()
            .keys()
            .filter_map(|k| k.rsplit_once(TOPIC_GROUP_SEPARATOR))
            .map(|(t, g)| (t.to_owned(), g.to_owned()))
            .collect()
    }

    /// Drops the offsets of a deleted topic.
    pub fn remove_topic(&self, topic: &str) {
        let mut table = self.table.locked();
        table.retain(|k, _| k.rsplit_once(TOPIC_GROUP_SEPARATOR).map(|(t, _)| t) != Some(topic));
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Drops every offset of a deleted group (DELETE_SUBSCRIPTIONGROUP with
    /// `cleanOffset`, Apache's `removeOffset`); true when it had some.
    pub fn remove_group(&self, group: &str) -> bool {
        let mut table = self.table.locked();
        let before = table.len();
        table.retain(|k, _| k.rsplit_once(TOPIC_GROUP_SEPARATOR).map(|(_, g)| g) != Some(group));
        let removed = table.len() != before;
        if removed {
            self.dirty.store(true, Ordering::Relaxed);
        }
        removed
    }

    /// A slave's copy of its master's offsets (SlaveSynchronize, the body of
    /// GET_ALL_CONSUMER_OFFSET): the master's entries overwrite, entries only this
    /// slave has stay (RocketMQ's `putAll`).
    pub fn put_all_from_master(&self, body: &[u8]) -> Result<usize, vostok_remoting::DecodeError> {
        let master: Persisted =
            vostok_remoting::protocol::json::from_slice("consumerOffset", body)?;
        let n = master.offset_table.len();
        let mut table = self.table.locked();
        for (k, queues) in master.offset_table {
            table.insert(k, queues.into_iter().collect());
        }
        drop(table);
        self.dirty.store(true, Ordering::Relaxed);
        Ok(n)
    }

    /// The table as `consumerOffset.json` content.
    pub fn encode(&self, pretty: bool) -> Vec<u8> {
        let persisted = {
            let table = self.table.locked();
            Persisted {
                offset_table: table
                    .iter()
                    .map(|(k, v)| (k.clone(), v.iter().map(|(q, o)| (*q, *o)).collect()))
                    .collect(),
            }
        };
        let result = if pretty {
            serde_json::to_vec_pretty(&persisted)
        } else {
            serde_json::to_vec(&persisted)
        };
        result.unwrap_or_default()
    }

    /// Writes the file when something changed since the last write (or when forced).
    pub fn persist(&self, force: bool) {
        if !self.dirty.swap(false, Ordering::Relaxed) && !force {
            return;
        }
        if let Err(e) = self.file.persist_with(|| self.encode(true)) {
            self.dirty.store(true, Ordering::Relaxed);
            warn!(file = %self.file.path().display(), error = %e, "cannot persist consumer offsets");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_consumer_without_commits_holds_every_queue_at_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.path().to_path_buf();
        let m = ConsumerOffsetManager::load(&c);
        m.commit("fast", "T", 0, 40);
        m.commit("fast", "T", 1, 41);
        assert_eq!(
            m.min_committed_offsets("T", &[]),
            HashMap::from([(0, 40), (1, 41)])
        );
        // Online, subscribed, nothing committed: nothing counts as consumed.
        assert!(m.min_committed_offsets("T", &["slow".into()]).is_empty());
        assert!(m.note_consumer("slow", "T"));
        assert!(!m.note_consumer("slow", "T"), "noted once");
        assert!(!m.note_consumer("fast", "T"), "it has committed already");
        // Offline now, but noted: still at the start, after a restart too.
        assert!(m.min_committed_offsets("T", &[]).is_empty());
        m.persist(false);
        let again = ConsumerOffsetManager::load(&c);
        assert!(again.min_committed_offsets("T", &[]).is_empty());
        assert_eq!(again.query("slow", "T", 0), -1, "still no committed offset");
        assert!(again.remove_group("slow") && !again.remove_group("slow"));
        assert_eq!(again.min_committed_offsets("T", &[]).len(), 2, "released");
        again.note_consumer("slow", "T");
        again.commit("slow", "T", 0, 5);
        assert_eq!(
            again.min_committed_offsets("T", &["slow".into(), "fast".into()]),
            HashMap::from([(0, 5)]),
            "queue 1 still waits for slow"
        );
    }

    #[test]
    fn commits_persist_and_reload_including_java_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.path().to_path_buf();
        let m = ConsumerOffsetManager::load(&c);
        assert_eq!(m.query("g", "T", 0), -1);
        m.commit("g", "T", 0, 12);
        m.commit("g", "T", 1, 3);
        m.commit("g", "T@x", 0, 1);
        m.commit("g2", "T", 0, 7);
        assert_eq!(
            m.min_committed_offsets("T", &[]),
            HashMap::from([(0, 7)]),
            "the slowest group on queue 0; g2 has not committed on queue 1"
        );
        assert_eq!(m.min_committed_offsets("U", &[]), HashMap::new());
        m.persist(false);
        let again = ConsumerOffsetManager::load(&c);
        assert_eq!(again.query("g", "T", 1), 3);
        assert_eq!(
            again.query("g", "T@x", 0),
            1,
            "topic containing the separator"
        );

        // A file written by a Java broker: bare integer keys, tabs.
        std::fs::write(
            c.config_dir().join("consumerOffset.json"),
            "{\n\t\"offsetTable\":{\n\t\t\"TopicTest@cg1\":{0:1024,1:980}\n\t}\n}",
        )
        .unwrap();
        let java = ConsumerOffsetManager::load(&c);
        assert_eq!(java.query("cg1", "TopicTest", 0), 1024);
    }
}
