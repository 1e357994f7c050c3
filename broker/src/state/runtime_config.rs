//! The broker keys an operator may change while the broker runs (UPDATE_BROKER_CONFIG,
//! `mqadmin updateBrokerConfig`, docs/commands.md#broker-configuration): held here,
//! read by the code they steer each time it runs, reported by GET_BROKER_CONFIG in
//! place of the start values. These are the keys Apache's broker reads on each use,
//! so that changing them there takes effect at once too. Every other key is read
//! once at start; changing one is refused, naming the keys that can change.
//!
//! | key | effect |
//! |---|---|
//! | `brokerPermission` | sends refused without write (2), pulls and pops without read (4); routes registered with the topics' permission masked by it, so clients go elsewhere |
//! | `autoCreateTopicEnable` | a send to an unknown topic creates it (from `TBW102`) |
//! | `autoCreateSubscriptionGroup` | an unknown group is created on its first heartbeat, pull or send-back |
//! | `slaveReadEnable` | pulls may be told to read from a slave |
//! | `longPollingEnable`, `shortPollingTimeMills` | how long an empty pull is held |
//! | `enablePropertyFilter` | SQL92 subscriptions accepted |
//! | `rejectTransactionMessage` | half messages refused |
//! | `transactionTimeOut`, `transactionCheckMax`, `transactionCheckInterval` | the check-back of unresolved transactions (the interval from the next round on) |
//!
//! A key is one of them by its line in the key table (`.at_run_time()`), and a field
//! here. Changes last until the broker stops: to keep one, put it in `broker.conf` too.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use crate::config::BrokerConfig;
use crate::config::KEYS;

/// The keys [`RuntimeConfig::apply`] accepts: those the broker's key table
/// (`config::KEYS`) marks as changing at run time, each read by that table's parser.
pub static RUNTIME_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| KEYS.run_time_names());

/// Values of the run-time keys.
#[derive(Debug)]
pub struct RuntimeConfig {
    broker_permission: AtomicI32,
    auto_create_topic_enable: AtomicBool,
    auto_create_subscription_group: AtomicBool,
    slave_read_enable: AtomicBool,
    long_polling_enable: AtomicBool,
    short_polling_time_ms: AtomicU64,
    enable_property_filter: AtomicBool,
    reject_transaction_message: AtomicBool,
    transaction_timeout_ms: AtomicU64,
    transaction_check_max: AtomicI32,
    transaction_check_interval_ms: AtomicU64,
}

fn millis(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

impl RuntimeConfig {
    pub fn new(config: &BrokerConfig) -> Self {
        RuntimeConfig {
            broker_permission: AtomicI32::new(config.broker_permission),
            auto_create_topic_enable: AtomicBool::new(config.auto_create_topic_enable),
            auto_create_subscription_group: AtomicBool::new(config.auto_create_subscription_group),
            slave_read_enable: AtomicBool::new(config.slave_read_enable),
            long_polling_enable: AtomicBool::new(config.long_polling_enable),
            short_polling_time_ms: AtomicU64::new(millis(config.short_polling_time)),
            enable_property_filter: AtomicBool::new(config.enable_property_filter),
            reject_transaction_message: AtomicBool::new(config.reject_transaction_message),
            transaction_timeout_ms: AtomicU64::new(millis(config.transaction_timeout)),
            transaction_check_max: AtomicI32::new(config.transaction_check_max),
            transaction_check_interval_ms: AtomicU64::new(millis(
                config.transaction_check_interval,
            )),
        }
    }

    /// `brokerPermission`: 4 read, 2 write.
    pub fn broker_permission(&self) -> i32 {
        self.broker_permission.load(Ordering::Acquire)
    }
    pub fn auto_create_topic_enable(&self) -> bool {
        self.auto_create_topic_enable.load(Ordering::Acquire)
    }
    pub fn auto_create_subscription_group(&self) -> bool {
        self.auto_create_subscription_group.load(Ordering::Acquire)
    }
    pub fn slave_read_enable(&self) -> bool {
        self.slave_read_enable.load(Ordering::Acquire)
    }
    pub fn long_polling_enable(&self) -> bool {
        self.long_polling_enable.load(Ordering::Acquire)
    }
    pub fn short_polling_time(&self) -> Duration {
        Duration::from_millis(self.short_polling_time_ms.load(Ordering::Acquire))
    }
    pub fn enable_property_filter(&self) -> bool {
        self.enable_property_filter.load(Ordering::Acquire)
    }
    pub fn reject_transaction_message(&self) -> bool {
        self.reject_transaction_message.load(Ordering::Acquire)
    }
    pub fn transaction_timeout(&self) -> Duration {
        Duration::from_millis(self.transaction_timeout_ms.load(Ordering::Acquire))
    }
    pub fn transaction_check_max(&self) -> i32 {
        self.transaction_check_max.load(Ordering::Acquire)
    }
    pub fn transaction_check_interval(&self) -> Duration {
        Duration::from_millis(self.transaction_check_interval_ms.load(Ordering::Acquire))
    }

    /// `config` with the run-time values in place of the start values.
    pub fn effective(&self, config: &BrokerConfig) -> BrokerConfig {
        let mut c = config.clone();
        c.broker_permission = self.broker_permission();
        c.auto_create_topic_enable = self.auto_create_topic_enable();
        c.auto_create_subscription_group = self.auto_create_subscription_group();
        c.slave_read_enable = self.slave_read_enable();
        c.long_polling_enable = self.long_polling_enable();
        c.short_polling_time = self.short_polling_time();
        c.enable_property_filter = self.enable_property_filter();
        c.reject_transaction_message = self.reject_transaction_message();
        c.transaction_timeout = self.transaction_timeout();
        c.transaction_check_max = self.transaction_check_max();
        c.transaction_check_interval = self.transaction_check_interval();
        c
    }

    /// Checks every change against `config`'s parser, then applies them all, or none:
    /// `Err` names the first key that cannot change at run time or has a bad value.
    pub fn apply(&self, config: &BrokerConfig, changes: &[(String, String)]) -> Result<(), String> {
        let mut probe = self.effective(config);
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
        if probe.transaction_check_interval.is_zero() {
            return Err("transactionCheckInterval must be above 0".into());
        }
        let p = &probe;
        self.broker_permission
            .store(p.broker_permission, Ordering::Release);
        self.auto_create_topic_enable
            .store(p.auto_create_topic_enable, Ordering::Release);
        self.auto_create_subscription_group
            .store(p.auto_create_subscription_group, Ordering::Release);
        self.slave_read_enable
            .store(p.slave_read_enable, Ordering::Release);
        self.long_polling_enable
            .store(p.long_polling_enable, Ordering::Release);
        self.short_polling_time_ms
            .store(millis(p.short_polling_time), Ordering::Release);
        self.enable_property_filter
            .store(p.enable_property_filter, Ordering::Release);
        self.reject_transaction_message
            .store(p.reject_transaction_message, Ordering::Release);
        self.transaction_timeout_ms
            .store(millis(p.transaction_timeout), Ordering::Release);
        self.transaction_check_max
            .store(p.transaction_check_max, Ordering::Release);
        self.transaction_check_interval_ms
            .store(millis(p.transaction_check_interval), Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of `key` other than `now`, as the key's parser reads it.
    fn another(now: &str) -> String {
        match now {
            "true" => "false".into(),
            "false" => "true".into(),
            n => (n.parse::<i64>().expect("a number") + 1).to_string(),
        }
    }

    #[test]
    fn every_key_the_table_marks_changes_and_shows_at_run_time() {
        let config = BrokerConfig::default();
        let start = config.to_properties();
        assert!(RUNTIME_KEYS.contains(&"brokerPermission"));
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
        let reference = KEYS.markdown(&config);
        for line in reference
            .lines()
            .filter(|l| l.contains("changes at run time"))
        {
            let key = line.split('`').nth(1).unwrap_or_default();
            assert!(
                RUNTIME_KEYS.contains(&key),
                "{key} says it changes at run time"
            );
        }
    }

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
        assert_eq!(rt.effective(&config).broker_permission, 4);
    }

    #[test]
    fn every_runtime_key_changes_what_reads_it() {
        let config = BrokerConfig::default();
        let rt = RuntimeConfig::new(&config);
        let changes: Vec<(String, String)> = [
            ("autoCreateTopicEnable", "false"),
            ("autoCreateSubscriptionGroup", "false"),
            ("slaveReadEnable", "true"),
            ("longPollingEnable", "false"),
            ("shortPollingTimeMills", "250"),
            ("enablePropertyFilter", "true"),
            ("rejectTransactionMessage", "true"),
            ("transactionTimeOut", "2000"),
            ("transactionCheckMax", "3"),
            ("transactionCheckInterval", "5000"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        rt.apply(&config, &changes).unwrap();
        assert!(!rt.auto_create_topic_enable() && !rt.auto_create_subscription_group());
        assert!(rt.slave_read_enable() && !rt.long_polling_enable());
        assert_eq!(rt.short_polling_time(), Duration::from_millis(250));
        assert!(rt.enable_property_filter() && rt.reject_transaction_message());
        assert_eq!(rt.transaction_timeout(), Duration::from_secs(2));
        assert_eq!(rt.transaction_check_max(), 3);
        assert_eq!(rt.transaction_check_interval(), Duration::from_secs(5));
        let shown = rt.effective(&config).to_properties();
        assert!(shown.contains(&("transactionCheckMax".to_owned(), "3".to_owned())));
        assert!(rt
            .apply(&config, &[("transactionCheckInterval".into(), "0".into())])
            .is_err());
    }
}
