//! Topic configs (`TopicConfigManager`): the broker's topic table, persisted to
//! `config/topics.json` with its data version and registered with the name servers.
//!
//! A change marks the file dirty and wakes the config writer
//! (`service::config_flush`), which writes it once for however many changes came
//! meanwhile; admin requests wait for that write before they answer.
//!
//! A slave learns its master's table by metadata sync, every 10 s; a topic whose data
//! arrives sooner is *derived* from it ([`TopicConfigManager::note_replicated`]): as
//! many queues as the data uses, readable and writable, until the master's values
//! arrive (docs/replication.md#metadata-sync-slavesynchronize). So a slave serves
//! every topic it holds data of, also when its master died before the next sync.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, RwLock};

use tokio::sync::Notify;
use tracing::{info, warn};
use vostok_remoting::protocol::body::{DataVersion, TopicConfig, TopicConfigSerializeWrapper};
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::now_millis;

use super::NotCreated;
use crate::config::BrokerConfig;

/// Queues of `SCHEDULE_TOPIC_XXXX`: one per delay level.
pub const SCHEDULE_QUEUE_NUMS: i32 = 18;
/// Largest queue count a topic may be given.
pub const MAX_QUEUE_NUMS: i32 = 1024;
/// Read/write queues of a topic created without a count (Java `TopicConfig` defaults).
const DEFAULT_QUEUE_NUMS: i32 = 16;

pub struct TopicConfigManager {
    file: ConfigFile,
    /// `maxTopicNum`: no topic is created by a send beyond it.
    max_topics: usize,
    table: RwLock<BTreeMap<String, TopicConfig>>,
    data_version: Mutex<DataVersion>,
    /// Signalled on every change, so that the broker registers with the name servers at once.
    changed: Notify,
    /// Signalled on every change, for the config writer.
    unsaved: Notify,
    /// Topics of a slave known only from replicated data, not yet from its master.
    derived: Mutex<HashSet<String>>,
}

impl TopicConfigManager {
    /// Loads `config/topics.json` (or its backup) and adds the system topics.
    pub fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("topics.json"));
        let stored: Option<TopicConfigSerializeWrapper> = file
            .load(|bytes| vostok_remoting::protocol::json::from_slice("topics.json", bytes).ok());
        let (table, data_version) = match stored {
            Some(wrapper) => (wrapper.topic_config_table, wrapper.data_version),
            None => (BTreeMap::new(), DataVersion::new(now_millis())),
        };
        let max_topics = config.metadata.max_topics;
        if table.len() >= max_topics {
            warn!(
                topics = table.len(),
                max = max_topics,
                "the broker holds maxTopicNum topics or more: none is created by a send \
                 until some are deleted or the bound is raised"
            );
        }
        let manager = TopicConfigManager {
            file,
            max_topics,
            table: RwLock::new(table),
            data_version: Mutex::new(data_version),
            changed: Notify::new(),
            unsaved: Notify::new(),
            derived: Mutex::new(HashSet::new()),
        };
        manager.add_system_topics(config);
        manager
    }

    fn add_system_topics(&self, config: &BrokerConfig) {
        let mut table = self.table.write_locked();
        let mut put = |t: TopicConfig| {
            table.entry(t.topic_name.clone()).or_insert(t);
        };
        put(TopicConfig::new(topic::SELF_TEST_TOPIC, 1));
        if config.auto_create_topic_enable {
            put(TopicConfig::new(
                topic::AUTO_CREATE_TOPIC_KEY_TOPIC,
                config.default_topic_queue_nums,
            )
            .with_perm(perm::INHERIT | perm::READ | perm::WRITE));
        }
        let named_perm = |enabled: bool| {
            if enabled {
                perm::INHERIT | config.broker_permission
            } else {
                perm::INHERIT
            }
        };
        put(
            TopicConfig::new(config.broker_cluster_name.clone(), DEFAULT_QUEUE_NUMS)
                .with_perm(named_perm(config.cluster_topic_enable)),
        );
        put(TopicConfig::new(config.broker_name.clone(), 1)
            .with_perm(named_perm(config.broker_topic_enable)));
        put(TopicConfig::new(topic::OFFSET_MOVED_EVENT, 1));
        put(TopicConfig::new(topic::SCHEDULE_TOPIC, SCHEDULE_QUEUE_NUMS));
        put(TopicConfig::new(topic::TRANS_HALF_TOPIC, 1));
        put(TopicConfig::new(topic::TRANS_OP_HALF_TOPIC, 1));
        put(TopicConfig::new(topic::TIMER_TOPIC, 1));
        if config.trace_topic_enable && !config.msg_trace_topic_name.is_empty() {
            put(TopicConfig::new(config.msg_trace_topic_name.clone(), 1));
        }
        put(
            TopicConfig::new(format!("{}_REPLY_TOPIC", config.broker_cluster_name), 1)
                .with_perm(config.broker_permission),
        );
    }

    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.table.read_locked().get(topic).cloned()
    }

    pub fn contains(&self, topic: &str) -> bool {
        self.table.read_locked().contains_key(topic)
    }

    pub fn topic_names(&self) -> Vec<String> {
        self.table.read_locked().keys().cloned().collect()
    }

    /// Auto-creates `topic` on a send, from the template `default_topic`
    /// (docs/commands.md#sending, step 2), with whether it was created now. Refused
    /// (with the reason) when the template does not exist or may not be inherited, or
    /// the broker holds `maxTopicNum` topics.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        queue_nums: i32,
        topic_sys_flag: i32,
    ) -> Result<(TopicConfig, bool), NotCreated> {
        if let Some(existing) = self.get(topic) {
            return Ok((existing, false));
        }
        let template = self.get(default_topic).ok_or_else(|| {
            NotCreated::NotAllowed(format!("the template topic {default_topic} does not exist"))
        })?;
        if !perm::is_inherited(template.perm) {
            warn!(topic, default_topic, "template topic may not be inherited");
            return Err(NotCreated::NotAllowed(format!(
                "the template topic {default_topic} may not be inherited"
            )));
        }
        let queues = queue_nums.min(template.write_queue_nums).max(1);
        let mut config = TopicConfig::new(topic, queues).with_perm(template.perm & !perm::INHERIT);
        config.topic_sys_flag = topic_sys_flag;
        config.topic_filter_type = template.topic_filter_type;
        let (config, created) = {
            let mut table = self.table.write_locked();
            if let Some(raced) = table.get(topic) {
                (raced.clone(), false)
            } else if table.len() >= self.max_topics {
                return Err(NotCreated::OverLimit(format!(
                    "the broker holds {} topics (maxTopicNum={})",
                    table.len(),
                    self.max_topics
                )));
            } else {
                table.insert(topic.to_owned(), config.clone());
                (config, true)
            }
        };
        if created {
            info!(topic, queues, "auto-created topic from {default_topic}");
            self.on_change();
        }
        Ok((config, created))
    }

    /// Gets or creates a broker-managed topic (retry, DLQ, transaction check topics).
    pub fn get_or_create(
        &self,
        topic: &str,
        queue_nums: i32,
        perm: i32,
        topic_sys_flag: i32,
    ) -> TopicConfig {
        if let Some(existing) = self.get(topic) {
            return existing;
        }
        let mut config = TopicConfig::new(topic, queue_nums).with_perm(perm);
        config.topic_sys_flag = topic_sys_flag;
        info!(topic, queue_nums, perm, "created topic");
        self.insert_if_absent(config)
    }

    fn insert_if_absent(&self, config: TopicConfig) -> TopicConfig {
        let inserted = {
            let mut table = self.table.write_locked();
            if let Some(existing) = table.get(&config.topic_name) {
                return existing.clone();
            }
            table.insert(config.topic_name.clone(), config.clone());
            config
        };
        self.on_change();
        inserted
    }

    /// UPDATE_AND_CREATE_TOPIC: creates or replaces.
    pub fn update(&self, config: TopicConfig) {
        info!(topic = %config.topic_name, read = config.read_queue_nums, write = config.write_queue_nums, perm = config.perm, "topic config updated");
        self.derived.locked().remove(&config.topic_name);
        self.table
            .write_locked()
            .insert(config.topic_name.clone(), config);
        self.on_change();
    }

    /// Removes a topic; true when it existed.
    pub fn delete(&self, topic: &str) -> bool {
        self.derived.locked().remove(topic);
        let removed = self.table.write_locked().remove(topic).is_some();
        if removed {
            info!(topic, "topic deleted");
            self.on_change();
        }
        removed
    }

    /// The table and its version, as registered and persisted.
    pub fn wrapper(&self) -> TopicConfigSerializeWrapper {
        let table = self.table.read_locked().clone();
        let data_version = self.data_version.locked().clone();
        TopicConfigSerializeWrapper {
            data_version,
            topic_config_table: table,
            ..Default::default()
        }
    }

    /// A slave was handed a record of `topic` in `queue_id` by replication (called
    /// by the dispatcher for every record, so the known case is one read lock). An
    /// unknown topic is derived from the data: `queue_id + 1` read and write queues,
    /// readable and writable; a derived topic grows as higher queues arrive. The
    /// master's values replace it at the next metadata sync.
    pub fn note_replicated(&self, topic: &str, queue_id: i32) {
        if let Some(config) = self.table.read_locked().get(topic) {
            if queue_id < config.read_queue_nums || !self.derived.locked().contains(topic) {
                return;
            }
        }
        if !(0..MAX_QUEUE_NUMS).contains(&queue_id) {
            return;
        }
        let queues = queue_id + 1;
        {
            let mut table = self.table.write_locked();
            match table.get_mut(topic) {
                None => {
                    table.insert(
                        topic.to_owned(),
                        TopicConfig::new(topic, queues).with_perm(perm::READ | perm::WRITE),
                    );
                    self.derived.locked().insert(topic.to_owned());
                }
                Some(config)
                    if config.read_queue_nums < queues && self.derived.locked().contains(topic) =>
                {
                    config.read_queue_nums = queues;
                    config.write_queue_nums = config.write_queue_nums.max(queues);
                }
                Some(_) => return,
            }
        }
        info!(
            topic,
            queues, "topic known from replicated data before the master's config"
        );
        self.on_change();
    }

    /// A slave's copy of its master's table (SlaveSynchronize): replaced when the
    /// master's data version differs, topics absent on the master removed, except
    /// derived topics (see [`Self::note_replicated`]) for which `newer` says the
    /// master's table may not know them yet: their data is newer than the table. True
    /// when it changed.
    pub fn replace_from_master(
        &self,
        master: TopicConfigSerializeWrapper,
        newer: impl Fn(&str) -> bool,
    ) -> bool {
        if *self.data_version.locked() == master.data_version {
            return false;
        }
        let count = master.topic_config_table.len();
        let mut kept = Vec::new();
        {
            let mut table = self.table.write_locked();
            let mut derived = self.derived.locked();
            let mut next = master.topic_config_table;
            derived.retain(|topic| {
                if next.contains_key(topic) {
                    return false;
                }
                match table.remove(topic) {
                    Some(config) if newer(topic) => {
                        next.insert(topic.clone(), config);
                        kept.push(topic.clone());
                        true
                    }
                    _ => false,
                }
            });
            *table = next;
        }
        *self.data_version.locked() = master.data_version;
        self.file.mark_dirty();
        self.unsaved.notify_one();
        info!(
            topics = count,
            ?kept,
            "topic configs copied from the master"
        );
        true
    }

    pub fn data_version(&self) -> DataVersion {
        self.data_version.locked().clone()
    }

    /// Resolves when the table changed since the last call.
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    /// Resolves when the table changed and is not written yet.
    pub async fn unsaved(&self) {
        self.unsaved.notified().await
    }

    /// A new data version and a registration at once, though no topic changed: what
    /// the name servers hold depends on something else that did (the broker's
    /// permission).
    pub fn bump_version(&self) {
        self.data_version.locked().next(now_millis());
        self.changed.notify_one();
    }

    fn on_change(&self) {
        self.data_version.locked().next(now_millis());
        self.file.mark_dirty();
        self.changed.notify_one();
        self.unsaved.notify_one();
    }

    /// Writes `config/topics.json` if it changed since the last write. Blocking file
    /// work: call it off the async runtime.
    pub fn persist(&self) {
        let written = self
            .file
            .persist_if_dirty(|| serde_json::to_vec_pretty(&self.wrapper()).unwrap_or_default());
        if let Err(e) = written {
            warn!(file = %self.file.path().display(), error = %e, "cannot persist topic configs");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path) -> BrokerConfig {
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.to_path_buf();
        c.broker_name = "broker-a".into();
        c
    }

    fn master_table(topics: &[TopicConfig], counter: i64) -> TopicConfigSerializeWrapper {
        let mut data_version = DataVersion::new(1);
        data_version.counter = counter;
        TopicConfigSerializeWrapper {
            data_version,
            topic_config_table: topics
                .iter()
                .map(|t| (t.topic_name.clone(), t.clone()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_slave_knows_topics_from_their_data_until_the_master_table_says_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let manager = TopicConfigManager::load(&config(dir.path()));
        let v0 = manager.data_version().counter;
        manager.note_replicated("New", 2);
        let derived = manager.get("New").unwrap();
        assert_eq!((derived.read_queue_nums, derived.write_queue_nums), (3, 3));
        assert_eq!(derived.perm, perm::READ | perm::WRITE);
        assert!(
            manager.data_version().counter > v0,
            "registered and persisted"
        );
        manager.note_replicated("New", 0);
        manager.note_replicated("New", 5);
        assert_eq!(
            manager.get("New").unwrap().read_queue_nums,
            6,
            "grows with its data"
        );
        manager.note_replicated("Gone", 0);

        // The master's table: "New" with its own values, "Gone" absent and its data
        // older than the table, "Later" absent and its data newer.
        manager.note_replicated("Later", 0);
        let mut new = TopicConfig::new("New", 4);
        new.perm = perm::READ;
        assert!(
            manager.replace_from_master(master_table(std::slice::from_ref(&new), 7), |t| t
                == "Later")
        );
        assert_eq!(manager.get("New"), Some(new));
        assert!(manager.get("Gone").is_none(), "deleted on the master");
        assert!(
            manager.get("Later").is_some(),
            "created after the table was read"
        );
        // The master's values are not grown by data beyond them.
        manager.note_replicated("New", 6);
        assert_eq!(manager.get("New").unwrap().read_queue_nums, 4);
        // Once the master's table lists it, a kept topic is the master's too.
        let later = TopicConfig::new("Later", 2);
        manager.replace_from_master(master_table(std::slice::from_ref(&later), 8), |_| true);
        assert_eq!(manager.get("Later"), Some(later));
        assert!(manager.get("New").is_none());
        manager.note_replicated("Later", 3);
        assert_eq!(manager.get("Later").unwrap().read_queue_nums, 2);
    }

    #[test]
    fn auto_creates_from_the_template_and_survives_reload() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        let manager = TopicConfigManager::load(&c);
        let v0 = manager.data_version().counter;
        let (created, new) = manager.create_in_send("Orders", "TBW102", 4, 0).unwrap();
        assert!(new);
        assert_eq!(created.write_queue_nums, 4);
        assert_eq!(created.perm, perm::READ | perm::WRITE);
        assert!(manager.data_version().counter > v0);
        assert!(manager.create_in_send("X", "NoSuchTemplate", 4, 0).is_err());
        assert!(
            manager.create_in_send("Y", "Orders", 4, 0).is_err(),
            "Orders is not inheritable"
        );
        assert_eq!(
            manager.create_in_send("Orders", "TBW102", 4, 0),
            Ok((created.clone(), false))
        );

        manager.persist();
        let reloaded = TopicConfigManager::load(&c);
        assert_eq!(reloaded.get("Orders"), Some(created));
        assert!(reloaded.contains(topic::SCHEDULE_TOPIC));
    }

    #[test]
    fn no_template_without_auto_create() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        c.auto_create_topic_enable = false;
        let manager = TopicConfigManager::load(&c);
        assert!(manager.get("TBW102").is_none());
        assert!(manager.create_in_send("Orders", "TBW102", 4, 0).is_err());
    }

    #[test]
    fn sends_create_topics_up_to_the_bound_and_operators_may_pass_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        let system = TopicConfigManager::load(&c).topic_names().len();
        c.metadata.max_topics = system + 1;
        let manager = TopicConfigManager::load(&c);
        manager.create_in_send("A", "TBW102", 4, 0).unwrap();
        let refused = manager
            .create_in_send("B", "TBW102", 4, 0)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains(&format!("maxTopicNum={}", system + 1)),
            "{refused}"
        );
        assert!(manager.create_in_send("A", "TBW102", 4, 0).is_ok());
        manager.update(TopicConfig::new("B", 4));
        assert!(manager.contains("B"), "an operator's topic is not bounded");
        manager.get_or_create("%RETRY%g", 1, perm::READ | perm::WRITE, 0);
        assert!(
            manager.contains("%RETRY%g"),
            "a group's own topics follow the group"
        );
    }
}
