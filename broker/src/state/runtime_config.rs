//! The broker keys an operator may change while the broker runs (UPDATE_BROKER_CONFIG,
//! `mqadmin updateBrokerConfig`, docs/commands.md#broker-configuration): held here,
//! read by the code they steer, reported by GET_BROKER_CONFIG in place of the start
//! values. Every other key is read once at start; changing one is refused, naming the
//! keys that can change.
//!
//! | key | effect |
//! |---|---|
//! | `brokerPermission` | sends refused without write (2); routes registered with the topics' permission masked by it, so clients send elsewhere |
//!
//! Changes last until the broker stops: to keep one, put it in `broker.conf` too.

use std::sync::atomic::{AtomicI32, Ordering};

use crate::config::BrokerConfig;

/// The keys [`RuntimeConfig::apply`] accepts.
pub const RUNTIME_KEYS: &[&str] = &["brokerPermission"];

/// Values of the run-time keys.
#[derive(Debug)]
pub struct RuntimeConfig {
    broker_permission: AtomicI32,
}

impl RuntimeConfig {
    pub fn new(config: &BrokerConfig) -> Self {
        RuntimeConfig {
            broker_permission: AtomicI32::new(config.broker_permission),
        }
    }

    /// `brokerPermission`: 4 read, 2 write.
    pub fn broker_permission(&self) -> i32 {
        self.broker_permission.load(Ordering::Acquire)
    }

    /// Checks every change against `config`'s parser, then applies them all, or none:
    /// `Err` names the first key that cannot change at run time or has a bad value.
    pub fn apply(&self, config: &BrokerConfig, changes: &[(String, String)]) -> Result<(), String> {
        let mut probe = config.clone();
        for (key, value) in changes {
            if !RUNTIME_KEYS.contains(&key.as_str()) {
                return Err(format!(
                    "{key} is read at start only (set it in broker.conf and restart); \
                     keys that change at run time: {}",
                    RUNTIME_KEYS.join(", ")
                ));
            }
            probe
                .apply_property(key, value)
                .map_err(|e| e.to_string())?;
        }
        if !(0..=7).contains(&probe.broker_permission) {
            return Err(format!(
                "brokerPermission {} is not a permission (0-7)",
                probe.broker_permission
            ));
        }
        self.broker_permission
            .store(probe.broker_permission, Ordering::Release);
        Ok(())
    }

    /// `pairs` (the start values) with the run-time values in place.
    pub fn overlay(&self, pairs: &mut [(String, String)]) {
        for (key, value) in pairs.iter_mut() {
            if key == "brokerPermission" {
                *value = self.broker_permission().to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runtime_keys_change_and_all_or_nothing() {
        let config = BrokerConfig::default();
        let rt = RuntimeConfig::new(&config);
        assert_eq!(rt.broker_permission(), 6);
        rt.apply(&config, &[("brokerPermission".into(), "4".into())])
            .unwrap();
        assert_eq!(rt.broker_permission(), 4);
        let e = rt
            .apply(
                &config,
                &[
                    ("brokerPermission".into(), "6".into()),
                    ("listenPort".into(), "1".into()),
                ],
            )
            .unwrap_err();
        assert!(e.contains("listenPort is read at start only"), "{e}");
        assert_eq!(rt.broker_permission(), 4, "nothing applied");
        assert!(rt
            .apply(&config, &[("brokerPermission".into(), "x".into())])
            .is_err());
        assert!(rt
            .apply(&config, &[("brokerPermission".into(), "9".into())])
            .is_err());
        let mut pairs = vec![("brokerPermission".to_owned(), "6".to_owned())];
        rt.overlay(&mut pairs);
        assert_eq!(pairs[0].1, "4");
    }
}
