//! Subscription group configs (`SubscriptionGroupManager`), persisted to
//! `config/subscriptionGroup.json`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tracing::{info, warn};
use vostok_remoting::protocol::body::DataVersion;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::RwLockExt;
use vostok_remoting::support::time::now_millis;

use super::NotCreated;
use crate::config::BrokerConfig;

/// Per-group settings (`SubscriptionGroupConfig`, docs/store.md#config-files): the
/// same type the admin requests carry, so that what an operator sets (attributes
/// included) is what the broker keeps.
pub use vostok_remoting::protocol::body::SubscriptionGroupConfig;

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Persisted {
    #[serde(default)]
    subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    #[serde(default)]
    data_version: DataVersion,
}

/// Groups the broker creates for itself.
const SYSTEM_GROUPS: &[&str] = &[
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "__MONITOR_CONSUMER",
    "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_ONSAPI_PULL",
    "CID_RMQ_SYS_TRANS",
];

pub struct SubscriptionGroupManager {
    file: ConfigFile,
    /// `autoCreateSubscriptionGroup`, changeable at run time.
    auto_create: AtomicBool,
    /// `maxSubscriptionGroupNum`: no group is created on first use beyond it.
    max_groups: usize,
    state: RwLock<Persisted>,
    /// Signalled on every change, for the config writer (`service::config_flush`).
    unsaved: Notify,
}

impl SubscriptionGroupManager {
    pub fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("subscriptionGroup.json"));
        let mut state: Persisted = file
            .load(|bytes| {
                vostok_remoting::protocol::json::from_slice("subscriptionGroup.json", bytes).ok()
            })
            .unwrap_or_else(|| Persisted {
                data_version: DataVersion::new(now_millis()),
                ..Default::default()
            });
        for group in SYSTEM_GROUPS {
            state
                .subscription_group_table
                .entry((*group).to_owned())
                .or_insert_with(|| SubscriptionGroupConfig::new(*group));
        }
        let max_groups = config.metadata.max_subscription_groups;
        let held = state.subscription_group_table.len();
        if held >= max_groups {
            warn!(
                groups = held,
                max = max_groups,
                "the broker holds maxSubscriptionGroupNum subscription groups or more: none \
                 is created on first use until some are deleted or the bound is raised"
            );
        }
        SubscriptionGroupManager {
            file,
            auto_create: AtomicBool::new(config.auto_create_subscription_group),
            max_groups,
            state: RwLock::new(state),
            unsaved: Notify::new(),
        }
    }

    /// Turns the creation of unknown groups on or off (UPDATE_BROKER_CONFIG).
    pub fn set_auto_create(&self, on: bool) {
        self.auto_create.store(on, Ordering::Release);
    }

    /// Every configured group's name (metrics, the console).
    pub fn group_names(&self) -> Vec<String> {
        self.state
            .read_locked()
            .subscription_group_table
            .keys()
            .cloned()
            .collect()
    }

    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.state
            .read_locked()
            .subscription_group_table
            .get(group)
            .cloned()
    }

    /// The group's config, created with defaults when `autoCreateSubscriptionGroup` is
    /// on, the name is legal (RocketMQ's group rules, short enough for its retry topic)
    /// and the broker holds fewer than `maxSubscriptionGroupNum` groups; with whether
    /// it was created now. Else why it was not.
    pub fn find_or_create(
        &self,
        group: &str,
    ) -> Result<(SubscriptionGroupConfig, bool), NotCreated> {
        if let Some(found) = self.get(group) {
            return Ok((found, false));
        }
        if !self.auto_create.load(Ordering::Acquire) {
            return Err(NotCreated::NotAllowed(
                "autoCreateSubscriptionGroup is off".to_owned(),
            ));
        }
        topic::validate_group(group).map_err(NotCreated::NotAllowed)?;
        topic::validate_topic(&topic::retry_topic(group)).map_err(NotCreated::NotAllowed)?;
        let config = SubscriptionGroupConfig::new(group);
        {
            let mut state = self.state.write_locked();
            if let Some(raced) = state.subscription_group_table.get(group) {
                return Ok((raced.clone(), false));
            }
            let held = state.subscription_group_table.len();
            if held >= self.max_groups {
                return Err(NotCreated::OverLimit(format!(
                    "the broker holds {held} subscription groups (maxSubscriptionGroupNum={})",
                    self.max_groups
                )));
            }
            state
                .subscription_group_table
                .insert(group.to_owned(), config.clone());
            state.data_version.next(now_millis());
        }
        info!(group, "auto-created subscription group");
        self.on_change();
        Ok((config, true))
    }

    pub fn update(&self, config: SubscriptionGroupConfig) {
        {
            let mut state = self.state.write_locked();
            state
                .subscription_group_table
                .insert(config.group_name.clone(), config);
            state.data_version.next(now_millis());
        }
        self.on_change();
    }

    pub fn delete(&self, group: &str) -> bool {
        let removed = {
            let mut state = self.state.write_locked();
            let removed = state.subscription_group_table.remove(group).is_some();
            if removed {
                state.data_version.next(now_millis());
            }
            removed
        };
        if removed {
            self.on_change();
        }
        removed
    }

    /// A slave's copy of its master's table (SlaveSynchronize, the body of
    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG): replaced when the data version differs.
    /// True when it changed; an undecodable body is an error.
    pub fn replace_from_master(&self, body: &[u8]) -> Result<bool, vostok_remoting::DecodeError> {
        let master: Persisted =
            vostok_remoting::protocol::json::from_slice("subscriptionGroupTable", body)?;
        {
            let mut state = self.state.write_locked();
            if state.data_version == master.data_version {
                return Ok(false);
            }
            *state = master;
        }
        self.on_change();
        Ok(true)
    }

    /// The whole table as JSON (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
    pub fn encode(&self) -> Vec<u8> {
        let state = self.state.read_locked();
        serde_json::to_vec(&*state).unwrap_or_default()
    }

    fn on_change(&self) {
        self.file.mark_dirty();
        self.unsaved.notify_one();
    }

    /// Resolves when the table changed and is not written yet.
    pub async fn unsaved(&self) {
        self.unsaved.notified().await
    }

    /// Writes `config/subscriptionGroup.json` if it changed since the last write.
    /// Blocking file work: call it off the async runtime.
    pub fn persist(&self) {
        let written = self.file.persist_if_dirty(|| {
            let state = self.state.read_locked();
            serde_json::to_vec_pretty(&*state).unwrap_or_default()
        });
        if let Err(e) = written {
            warn!(file = %self.file.path().display(), error = %e, "cannot persist subscription groups");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path) -> BrokerConfig {
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.to_path_buf();
        c
    }

    #[test]
    fn groups_are_created_on_first_use_up_to_the_bound_and_operators_may_pass_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = config(dir.path());
        let system = SYSTEM_GROUPS.len();
        c.metadata.max_subscription_groups = system + 2;
        let groups = SubscriptionGroupManager::load(&c);
        assert!(groups.find_or_create("a").unwrap().1, "created");
        assert!(!groups.find_or_create("a").unwrap().1, "found");
        assert!(groups.find_or_create("b").unwrap().1);
        let refused = groups.find_or_create("c").unwrap_err().to_string();
        assert!(
            refused.contains(&format!("maxSubscriptionGroupNum={}", system + 2)),
            "{refused}"
        );
        assert!(
            groups.find_or_create("a").is_ok(),
            "existing groups still found"
        );
        groups.update(SubscriptionGroupConfig::new("c"));
        assert!(
            groups.get("c").is_some(),
            "an operator's group is not bounded"
        );
        assert!(groups.find_or_create("bad name").is_err());

        c.auto_create_subscription_group = false;
        let groups = SubscriptionGroupManager::load(&c);
        assert!(matches!(
            groups.find_or_create("d"),
            Err(NotCreated::NotAllowed(reason)) if reason.contains("autoCreateSubscriptionGroup")
        ));
    }

    #[test]
    fn what_an_operator_sets_is_kept_attributes_included() {
        let dir = tempfile::tempdir().unwrap();
        let groups = SubscriptionGroupManager::load(&config(dir.path()));
        let body = br#"{"groupName":"g","retryMaxTimes":3,"attributes":{"+lite.bind.topic":"T"}}"#;
        let update: SubscriptionGroupConfig =
            vostok_remoting::protocol::json::from_slice("SubscriptionGroupConfig", body).unwrap();
        groups.update(update);
        groups.persist();

        let reloaded = SubscriptionGroupManager::load(&config(dir.path()));
        let g = reloaded.get("g").expect("persisted");
        assert_eq!(g.retry_max_times, 3);
        assert_eq!(g.retry_queue_nums, 1, "absent fields take Java's defaults");
        assert_eq!(
            g.attributes.get("+lite.bind.topic").map(String::as_str),
            Some("T")
        );
        let table = String::from_utf8(reloaded.encode()).unwrap();
        assert!(
            table.contains("\"attributes\":{\"+lite.bind.topic\":\"T\"}"),
            "{table}"
        );
    }
}
