//! The controller keys an operator may change while it runs (UPDATE_CONTROLLER_CONFIG,
//! `mqadmin updateControllerConfig`, docs/controller.md#requests): held here, read by
//! the elections they steer, reported by GET_CONTROLLER_CONFIG in place of the start
//! values. Every other key is read once at start; changing one is refused, naming the
//! keys that can change. Changes last until the controller stops.
//!
//! A key is one of them by its line in the key table (`at_run_time`), and a field
//! here.
//!
//! | key | effect |
//! |---|---|
//! | `enableElectUncleanMaster` | the next election may pick a replica outside the SyncStateSet |
//! | `notifyBrokerRoleChanged` | the next election tells the group's brokers their roles at once |

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;

use crate::config::{ControllerConfig, KEYS};

/// The keys [`RuntimeConfig::apply`] accepts: those the controller's key table
/// (`config::KEYS`) marks as changing at run time, each read by that table's parser.
pub static RUNTIME_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| KEYS.run_time_names());

/// Values of the run-time keys.
#[derive(Debug)]
pub struct RuntimeConfig {
    enable_elect_unclean_master: AtomicBool,
    notify_broker_role_changed: AtomicBool,
}

impl RuntimeConfig {
    pub fn new(config: &ControllerConfig) -> Self {
        RuntimeConfig {
            enable_elect_unclean_master: AtomicBool::new(config.enable_elect_unclean_master),
            notify_broker_role_changed: AtomicBool::new(config.notify_broker_role_changed),
        }
    }

    pub fn enable_elect_unclean_master(&self) -> bool {
        self.enable_elect_unclean_master.load(Ordering::Acquire)
    }

    pub fn notify_broker_role_changed(&self) -> bool {
        self.notify_broker_role_changed.load(Ordering::Acquire)
    }

    /// `config` with the run-time values in place of the start values.
    pub fn effective(&self, config: &ControllerConfig) -> ControllerConfig {
        let mut c = config.clone();
        c.enable_elect_unclean_master = self.enable_elect_unclean_master();
        c.notify_broker_role_changed = self.notify_broker_role_changed();
        c
    }

    /// Checks every change with the config's parser, then applies them all, or none:
    /// `Err` names the first key that cannot change at run time or has a bad value.
    pub fn apply(
        &self,
        config: &ControllerConfig,
        changes: &[(String, String)],
    ) -> Result<(), String> {
        let mut probe = self.effective(config);
        for (key, value) in changes {
            if !RUNTIME_KEYS.contains(&key.as_str()) {
                return Err(format!(
                    "{key} is read at start only (set it in the controller's config file and \
                     restart); keys that change at run time: {}",
                    RUNTIME_KEYS.join(", ")
                ));
            }
            probe
                .apply_property(key, value)
                .map_err(|e| e.to_string())?;
        }
        self.enable_elect_unclean_master
            .store(probe.enable_elect_unclean_master, Ordering::Release);
        self.notify_broker_role_changed
            .store(probe.notify_broker_role_changed, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runtime_keys_change_and_all_or_nothing() {
        let config = ControllerConfig::default();
        let rt = RuntimeConfig::new(&config);
        assert!(!rt.enable_elect_unclean_master());
        rt.apply(
            &config,
            &[("enableElectUncleanMaster".into(), "true".into())],
        )
        .unwrap();
        assert!(rt.enable_elect_unclean_master());
        let e = rt
            .apply(
                &config,
                &[
                    ("notifyBrokerRoleChanged".into(), "false".into()),
                    ("controllerStorePath".into(), "/tmp".into()),
                ],
            )
            .unwrap_err();
        assert!(
            e.contains("controllerStorePath is read at start only"),
            "{e}"
        );
        assert!(rt.notify_broker_role_changed(), "nothing applied");
        assert!(rt
            .apply(
                &config,
                &[("enableElectUncleanMaster".into(), "yes".into())]
            )
            .is_err());
        let shown = rt.effective(&config).to_properties();
        assert!(shown.contains(&("enableElectUncleanMaster", "true".to_owned())));
    }

    #[test]
    fn the_keys_update_controller_config_changes_are_the_ones_marked_in_the_table() {
        assert_eq!(
            *RUNTIME_KEYS,
            ["enableElectUncleanMaster", "notifyBrokerRoleChanged"]
        );
    }

    /// A value other than `now`, as the key's parser reads it.
    fn another(now: &str) -> String {
        match now {
            "true" => "false".into(),
            "false" => "true".into(),
            n => (n.parse::<i64>().expect("a number") + 1).to_string(),
        }
    }

    /// A key marked in the table without a field here would be accepted and then
    /// dropped; each one is held and reported.
    #[test]
    fn every_key_the_table_marks_changes_and_shows_at_run_time() {
        let config = ControllerConfig::default();
        let start = config.to_properties();
        for key in RUNTIME_KEYS.iter() {
            let rt = RuntimeConfig::new(&config);
            let now = &start.iter().find(|(k, _)| k == key).expect("printed").1;
            let value = another(now);
            rt.apply(&config, &[((*key).to_owned(), value.clone())])
                .unwrap_or_else(|e| panic!("{key}: {e}"));
            let shown = rt.effective(&config).to_properties();
            assert!(
                shown.iter().any(|(k, v)| k == key && *v == value),
                "{key}={value} is held and reported"
            );
        }
    }
}
