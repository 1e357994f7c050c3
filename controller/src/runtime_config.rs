//! The controller keys an operator may change while it runs (UPDATE_CONTROLLER_CONFIG,
//! `mqadmin updateControllerConfig`, docs/controller.md#requests): held here, read by
//! the elections they steer, reported by GET_CONTROLLER_CONFIG in place of the start
//! values. Every other key is read once at start; changing one is refused, naming the
//! keys that can change. Changes last until the controller stops.
//!
//! | key | effect |
//! |---|---|
//! | `enableElectUncleanMaster` | the next election may pick a replica outside the SyncStateSet |
//! | `notifyBrokerRoleChanged` | the next election tells the group's brokers their roles at once |

use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::ControllerConfig;

/// The keys [`RuntimeConfig::apply`] accepts.
pub const RUNTIME_KEYS: &[&str] = &["enableElectUncleanMaster", "notifyBrokerRoleChanged"];

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

    /// Checks every change with the config's parser, then applies them all, or none:
    /// `Err` names the first key that cannot change at run time or has a bad value.
    pub fn apply(
        &self,
        config: &ControllerConfig,
        changes: &[(String, String)],
    ) -> Result<(), String> {
        let mut probe = config.clone();
        probe.enable_elect_unclean_master = self.enable_elect_unclean_master();
        probe.notify_broker_role_changed = self.notify_broker_role_changed();
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

    /// `pairs` (the start values) with the run-time values in place.
    pub fn overlay(&self, pairs: &mut [(&'static str, String)]) {
        for (key, value) in pairs.iter_mut() {
            match *key {
                "enableElectUncleanMaster" => {
                    *value = self.enable_elect_unclean_master().to_string()
                }
                "notifyBrokerRoleChanged" => *value = self.notify_broker_role_changed().to_string(),
                _ => {}
            }
        }
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
        let mut pairs = config.to_properties();
        rt.overlay(&mut pairs);
        assert!(pairs.contains(&("enableElectUncleanMaster", "true".to_owned())));
    }
}
