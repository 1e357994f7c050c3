//! Operations keys of `broker.conf` (docs/operations.md): the Prometheus exporter
//! (RocketMQ 5's `metricsExporterType`, `metricsPromExporterHost`,
//! `metricsPromExporterPort`, `metricsLabel`) and the web console (`consoleEnable`,
//! `consolePort`, `consoleHost`, `consoleAllowedHosts`, `consoleAdminEnable`).

use vostok_observe::MetricsConfig;

use vostok_remoting::support::keys::{flag, Flag, Key, Num, Section, Table, Text};
use vostok_remoting::{config_key, config_within};

use crate::error::BrokerError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpsConfig {
    pub metrics: MetricsConfig,
    /// `consoleEnable` (**Vostok**): serve the web console. `None` (not set): `mqbroker`
    /// turns it on in standalone mode and off in a cluster; an embedding program gets
    /// none.
    pub console_enable: Option<bool>,
    /// `consolePort` (**Vostok**, default 8082); 0 binds a free port.
    pub console_port: u16,
    /// `consoleHost` (**Vostok**): address the console binds; empty: `bindAddress`
    /// (127.0.0.1 in standalone mode).
    pub console_host: String,
    /// `consoleAllowedHosts` (**Vostok**): host names, comma separated, the console
    /// answers to besides `localhost` and IP addresses (the names a browser or a
    /// reverse proxy puts in `Host`); any other name is refused, which stops DNS
    /// rebinding.
    pub console_allowed_hosts: String,
    /// `consoleAdminEnable` (**Vostok**, default false): let a console bound off
    /// loopback with ACL off change things (create and delete topics, remove and resend
    /// messages); without it such a console is read-only.
    pub console_admin_enable: bool,
}

impl Default for OpsConfig {
    fn default() -> Self {
        OpsConfig {
            metrics: MetricsConfig::default(),
            console_enable: None,
            console_port: 8082,
            console_host: String::new(),
            console_allowed_hosts: String::new(),
            console_admin_enable: false,
        }
    }
}

/// The exporter and console keys.
pub static KEYS: Table<OpsConfig> = Table {
    keys: &[
        Key::new(
            "consoleEnable",
            "serve the web console; empty: on in standalone mode, else off",
            |c: &mut OpsConfig, v| {
                c.console_enable = match v.trim() {
                    "" => None,
                    v => Some(flag(v)?),
                };
                Ok(())
            },
            |c| c.console_enable.map_or_else(String::new, |b| b.to_string()),
        )
        .default_text("on in standalone mode, else `false`"),
        config_key!("consolePort", console_port: Num, "where the console listens; 0 a free port"),
        config_key!("consoleHost", console_host: Text, "the address the console binds; empty: `bindAddress`"),
        config_key!("consoleAllowedHosts", console_allowed_hosts: Text, "host names, comma separated, the console answers to besides `localhost` and IP addresses"),
        config_key!("consoleAdminEnable", console_admin_enable: Flag, "let a console off loopback with ACL off change things; without it such a console is read-only"),
    ],
    nested: &[config_within!(
        OpsConfig,
        metrics,
        vostok_observe::exporter::KEYS
    )],
};

impl Section for OpsConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl OpsConfig {
    pub(crate) fn validate(&self) -> Result<(), BrokerError> {
        self.metrics
            .validate()
            .map_err(|e| BrokerError::config("metricsExporterType", e))
    }

    /// Whether the console runs.
    pub fn console_on(&self) -> bool {
        self.console_enable.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_admin_enable_is_off_unless_set_and_printed() {
        let mut ops = OpsConfig::default();
        assert!(!ops.console_admin_enable);
        assert!(ops.set_key("consoleAdminEnable", " TRUE ").unwrap());
        assert!(ops.console_admin_enable);
        assert!(ops.set_key("consoleAdminEnable", "yes").is_err());
        assert!(ops
            .key_values()
            .contains(&("consoleAdminEnable".to_owned(), "true".to_owned())));
    }
}
