//! Operations keys of `broker.conf` (docs/operations.md): the Prometheus exporter
//! (RocketMQ 5's `metricsExporterType`, `metricsPromExporterHost`,
//! `metricsPromExporterPort`, `metricsLabel`) and the web console (`consoleEnable`,
//! `consolePort`, `consoleHost`, `consoleAllowedHosts`, `consoleAdminEnable`).

use vostok_observe::MetricsConfig;

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

fn bad(key: &str, reason: String) -> BrokerError {
    BrokerError::Config {
        key: key.to_owned(),
        reason,
    }
}

fn flag(key: &str, v: &str) -> Result<bool, BrokerError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, format!("expected true or false, got {v:?}"))),
    }
}

impl OpsConfig {
    /// Applies one key; false when it is not an operations key.
    pub fn apply_property(&mut self, key: &str, v: &str) -> Result<bool, BrokerError> {
        let v = v.trim();
        match key {
            "consoleEnable" => self.console_enable = Some(flag(key, v)?),
            "consolePort" => {
                self.console_port = v
                    .parse()
                    .map_err(|_| bad(key, format!("cannot parse {v:?}")))?
            }
            "consoleHost" => self.console_host = v.to_owned(),
            "consoleAllowedHosts" => self.console_allowed_hosts = v.to_owned(),
            "consoleAdminEnable" => self.console_admin_enable = flag(key, v)?,
            _ => {
                return self
                    .metrics
                    .apply_property(key, v)
                    .map_err(|e| bad(key, e.to_string()))
            }
        }
        Ok(true)
    }

    pub fn to_properties(&self) -> Vec<(String, String)> {
        let mut out = self.metrics.to_properties();
        out.extend(
            [
                (
                    "consoleEnable",
                    self.console_enable
                        .map_or_else(String::new, |b| b.to_string()),
                ),
                ("consolePort", self.console_port.to_string()),
                ("consoleHost", self.console_host.clone()),
                ("consoleAllowedHosts", self.console_allowed_hosts.clone()),
                ("consoleAdminEnable", self.console_admin_enable.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v)),
        );
        out
    }

    pub(crate) fn validate(&self) -> Result<(), BrokerError> {
        self.metrics
            .validate()
            .map_err(|e| bad("metricsExporterType", e.to_string()))
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
        assert!(ops.apply_property("consoleAdminEnable", " TRUE ").unwrap());
        assert!(ops.console_admin_enable);
        assert!(ops.apply_property("consoleAdminEnable", "yes").is_err());
        assert!(ops
            .to_properties()
            .contains(&("consoleAdminEnable".to_owned(), "true".to_owned())));
    }
}
