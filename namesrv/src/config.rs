//! Name server settings (`NamesrvConfig` plus the `NettyServerConfig` keys a name
//! server reads), with RocketMQ's defaults and key names.
//!
//! Sources, later ones winning: [`NamesrvConfig::default`], a `.properties` file
//! ([`NamesrvConfig::load_properties_file`]), flags (the binary calls
//! [`NamesrvConfig::apply_property`]); then [`NamesrvConfig::validate`].
//! Durations are given in milliseconds, as in Java, except `waitSecondsForService`
//! and `serverChannelMaxIdleTimeSeconds`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use vostok_remoting::support::keys::{
    flag, Codec, Flag, Key, KeyDoc, Kind, Millis, Num, Part, Path as PathCodec, RawText, Section,
    Table,
};
use vostok_remoting::{config_key, config_within};

use crate::error::NamesrvError;

/// Name server settings. Tests build them in code:
/// `NamesrvConfig { kv_config_path: dir.join("kv.json"), ..Default::default() }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesrvConfig {
    /// `rocketmqHome`: the installation directory (`$ROCKETMQ_HOME`); informational.
    pub rocketmq_home: String,
    /// `kvConfigPath`: where the KV store lives (`$HOME/namesrv/kvConfig.json`).
    pub kv_config_path: PathBuf,
    /// `configStorePath`: the properties file this config came from, if any.
    pub config_store_path: PathBuf,
    /// `productEnvName`: informational.
    pub product_env_name: String,
    /// `clusterTest`: informational (Java's cluster-test routing is not supported).
    pub cluster_test: bool,
    /// `orderMessageEnable`: add `orderTopicConf` from KV namespace
    /// `ORDER_TOPIC_CONFIG` to routes.
    pub order_message_enable: bool,
    /// `returnOrderTopicConfigToBroker`: answer REGISTER_BROKER with that namespace.
    pub return_order_topic_config_to_broker: bool,
    /// `scanNotActiveBrokerInterval`: how often silent brokers are looked for.
    pub scan_not_active_broker_interval: Duration,
    /// `brokerChannelExpiredTime` (Vostok key; Java hard-codes 120 s): a broker
    /// silent this long is dropped, unless it registered with its own
    /// `heartbeatTimeoutMillis`.
    pub broker_channel_expired_time: Duration,
    /// `supportActingMaster`: show the lowest slave as master of a broker name that
    /// lost its master and enabled acting master.
    pub support_acting_master: bool,
    /// `enableAllTopicList`: serve GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
    pub enable_all_topic_list: bool,
    /// `enableTopicList`: serve GET_TOPICS_BY_CLUSTER and the unit topic lists.
    pub enable_topic_list: bool,
    /// `needWaitForService`: refuse route lookups for `waitSecondsForService` after
    /// start, until brokers had time to register.
    pub need_wait_for_service: bool,
    /// `waitSecondsForService`.
    pub wait_seconds_for_service: u64,
    /// `deleteTopicWithBrokerRegistration`: a master's registration also removes the
    /// topics it no longer reports.
    pub delete_topic_with_broker_registration: bool,
    /// `listenPort`: 0 binds an ephemeral port.
    pub listen_port: u16,
    /// `bindAddress`.
    pub bind_address: String,
    /// `serverChannelMaxIdleTimeSeconds`: connections silent this long are closed;
    /// 0 disables it.
    pub server_channel_max_idle_time_seconds: u64,
    /// `aclEnable` (or `authenticationEnabled`): broker registration, topic deletion
    /// and KV writes need a signed admin account from `conf/plain_acl.yml`
    /// (docs/security.md#name-server). Vostok's: Apache's name server checks nothing.
    pub acl_enable: bool,
    /// `routeQueryAclEnable` (Vostok's): route and topic-list queries need a signed
    /// account too; they are open by default, as on Apache's name server.
    pub route_query_acl_enable: bool,
    /// `tls.*` keys.
    pub tls: vostok_remoting::tls::TlsConfig,
    /// Memory ceiling and connection bounds (`maxMemoryBytes`, `serverMaxConnections`,
    /// ...; docs/limits.md). A name server's memory ceiling defaults to an eighth of
    /// the machine's memory.
    pub limits: vostok_remoting::ServerLimits,
    /// RocketMQ 5's exporter keys (`metricsExporterType=PROM`,
    /// `metricsPromExporterHost`, `metricsPromExporterPort`, `metricsLabel`).
    pub metrics: vostok_observe::MetricsConfig,
    /// The embedding broker's own name and credentials (standalone mode): an admin
    /// account allowed to register that one broker name, known without a file.
    pub embedded_broker: Option<(String, vostok_remoting::auth::SessionCredentials)>,
    /// The ACL 2.0 users whose queries are answered within their namespaces (a
    /// standalone broker's own users; docs/security.md#namespaces).
    pub auth_users: Option<crate::security::AuthUsers>,
    /// `authConfigPath` (Vostok's on a name server): a directory holding a broker's
    /// ACL 2.0 users and ACLs (`users.json`, `acls.json`, as the broker keeps them in
    /// `<storePathRootDir>/config/auth`), followed as it changes: queries those users
    /// sign are answered within their namespaces (docs/security.md#namespaces).
    pub auth_config_path: Option<PathBuf>,
    /// `enableControllerInNamesrv`: also run a controller (docs/controller.md), set
    /// up by the controller keys of the same file (`controllerDLegerPeers`, ...).
    pub enable_controller_in_namesrv: bool,
    pub controller: vostok_controller::ControllerConfig,
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        let home = home_dir();
        NamesrvConfig {
            rocketmq_home: std::env::var("ROCKETMQ_HOME").unwrap_or_default(),
            kv_config_path: home.join("namesrv").join("kvConfig.json"),
            config_store_path: home.join("namesrv").join("namesrv.properties"),
            product_env_name: "center".to_owned(),
            cluster_test: false,
            order_message_enable: false,
            return_order_topic_config_to_broker: true,
            scan_not_active_broker_interval: Duration::from_secs(5),
            broker_channel_expired_time: Duration::from_secs(120),
            support_acting_master: false,
            enable_all_topic_list: true,
            enable_topic_list: true,
            need_wait_for_service: false,
            wait_seconds_for_service: 45,
            delete_topic_with_broker_registration: false,
            listen_port: 9876,
            bind_address: "0.0.0.0".to_owned(),
            server_channel_max_idle_time_seconds: 120,
            acl_enable: false,
            route_query_acl_enable: false,
            tls: vostok_remoting::tls::TlsConfig::default(),
            limits: vostok_remoting::ServerLimits::default(),
            metrics: vostok_observe::MetricsConfig::default(),
            embedded_broker: None,
            auth_users: None,
            auth_config_path: None,
            enable_controller_in_namesrv: false,
            controller: vostok_controller::ControllerConfig::default(),
        }
    }
}

/// Whether `key` is one of the name server's own keys (a `shared_key!` line when the
/// controller reads it too): applied to both, and listed once (as the name server's)
/// in the effective configuration.
fn own_key(key: &str) -> bool {
    KEYS.keys.iter().any(|k| k.name == key)
}

/// A shared key: the name server's own rule, then the controller's.
macro_rules! shared_key {
    ($name:literal, $doc:literal, $apply:expr, $print:expr) => {
        Key::new(
            $name,
            $doc,
            |c: &mut NamesrvConfig, v| {
                ($apply)(&mut *c, v)?;
                vostok_controller::config::KEYS.apply_known(&mut c.controller, $name, v)
            },
            $print,
        )
    };
}

fn or_flag(on: &mut bool, v: &str) -> Result<(), String> {
    // Either switch turns the check on; `false` never turns off the other.
    *on |= flag(v)?;
    Ok(())
}

/// Every key a name server reads.
pub static KEYS: Table<NamesrvConfig> = Table {
    keys: &[
        shared_key!(
            "rocketmqHome",
            "the installation directory; also where `conf/plain_acl.yml` is looked for",
            |c: &mut NamesrvConfig, v: &str| {
                c.rocketmq_home = v.trim().to_owned();
                Ok::<(), String>(())
            },
            |c| c.rocketmq_home.clone()
        )
        .default_text("`$ROCKETMQ_HOME`"),
        config_key!("kvConfigPath", kv_config_path: PathCodec, "where the KV store lives", default = "`$HOME/namesrv/kvConfig.json`"),
        config_key!("configStorePath", config_store_path: PathCodec, "the properties file this config came from", default = "`$HOME/namesrv/namesrv.properties`"),
        config_key!("productEnvName", product_env_name: RawText, "informational"),
        config_key!("clusterTest", cluster_test: Flag, "informational (Java's cluster-test routing is not supported)"),
        config_key!("orderMessageEnable", order_message_enable: Flag, "add `orderTopicConf` from the KV namespace `ORDER_TOPIC_CONFIG` to routes", at_run_time),
        config_key!("returnOrderTopicConfigToBroker", return_order_topic_config_to_broker: Flag, "answer REGISTER_BROKER with that namespace", at_run_time),
        shared_key!(
            "scanNotActiveBrokerInterval",
            "how often silent brokers are looked for",
            |c: &mut NamesrvConfig, v: &str| {
                c.scan_not_active_broker_interval = Millis.parse(v)?;
                Ok::<(), String>(())
            },
            |c| Millis.print(&c.scan_not_active_broker_interval)
        ),
        config_key!("brokerChannelExpiredTime", broker_channel_expired_time: Millis, "a broker silent this long is dropped, unless it registered with its own timeout"),
        config_key!("supportActingMaster", support_acting_master: Flag, "show the lowest slave as master of a broker name that lost its master"),
        config_key!("enableAllTopicList", enable_all_topic_list: Flag, "serve GET_ALL_TOPIC_LIST_FROM_NAMESERVER", at_run_time),
        config_key!("enableTopicList", enable_topic_list: Flag, "serve GET_TOPICS_BY_CLUSTER and the unit topic lists", at_run_time),
        config_key!("needWaitForService", need_wait_for_service: Flag, "refuse route lookups for `waitSecondsForService` after start", at_run_time),
        config_key!("waitSecondsForService", wait_seconds_for_service: Num, "seconds route lookups wait after start", at_run_time),
        config_key!("deleteTopicWithBrokerRegistration", delete_topic_with_broker_registration: Flag, "a master's registration also removes the topics it no longer reports"),
        config_key!("listenPort", listen_port: Num, "the port; 0 binds a free port"),
        shared_key!(
            "bindAddress",
            "the address to bind",
            |c: &mut NamesrvConfig, v: &str| {
                c.bind_address = v.trim().to_owned();
                Ok::<(), String>(())
            },
            |c| c.bind_address.clone()
        ),
        config_key!("serverChannelMaxIdleTimeSeconds", server_channel_max_idle_time_seconds: Num, "connections silent this long are closed; 0 never"),
        shared_key!(
            "aclEnable",
            "broker registration, topic deletion and KV writes need a signed admin account",
            |c: &mut NamesrvConfig, v: &str| or_flag(&mut c.acl_enable, v),
            |c| c.acl_enable.to_string()
        ),
        Key {
            kind: Kind::Alias("aclEnable"),
            ..shared_key!(
                "authenticationEnabled",
                "",
                |c: &mut NamesrvConfig, v: &str| or_flag(&mut c.acl_enable, v),
                |_| String::new()
            )
        },
        Key::new(
            "authConfigPath",
            "a directory holding a broker's ACL 2.0 users (`users.json`, `acls.json`), followed as it changes: queries those users sign are answered within their namespaces",
            |c: &mut NamesrvConfig, v: &str| {
                c.auth_config_path = Some(v.trim()).filter(|v| !v.is_empty()).map(PathBuf::from);
                Ok::<(), String>(())
            },
            |c| c.auth_config_path.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
        ),
        config_key!("enableControllerInNamesrv", enable_controller_in_namesrv: Flag, "also run a controller, set up by the controller keys of the same file (printed only then)", default = "`false`"),
        config_key!("routeQueryAclEnable", route_query_acl_enable: Flag, "route and topic-list queries need a signed account too"),
    ],
    nested: &[
        &EmbeddedController,
        config_within!(NamesrvConfig, limits, vostok_remoting::limits::KEYS),
        config_within!(NamesrvConfig, tls, vostok_remoting::tls::config::KEYS),
        config_within!(NamesrvConfig, metrics, vostok_observe::exporter::KEYS),
    ],
};

/// The controller's keys other than the shared ones, printed only when the controller
/// runs. Those that change at run time change through UPDATE_CONTROLLER_CONFIG at the
/// controller's address, never through UPDATE_NAMESRV_CONFIG.
struct EmbeddedController;

impl Part<NamesrvConfig> for EmbeddedController {
    fn apply(
        &self,
        config: &mut NamesrvConfig,
        key: &str,
        value: &str,
    ) -> Option<Result<(), String>> {
        vostok_controller::config::KEYS.apply(&mut config.controller, key, value)
    }

    fn print(&self, config: &NamesrvConfig, out: &mut Vec<(&'static str, String)>) {
        if config.enable_controller_in_namesrv {
            out.extend(
                vostok_controller::config::KEYS
                    .values(&config.controller)
                    .into_iter()
                    .filter(|(k, _)| !own_key(k)),
            );
        }
    }

    fn describe(&self, out: &mut Vec<KeyDoc>) {
        out.extend(
            vostok_controller::config::KEYS
                .describe()
                .into_iter()
                .filter(|k| !own_key(k.name)),
        );
    }

    fn run_time_names(&self, _: &mut Vec<&'static str>) {}
}

impl Section for NamesrvConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl NamesrvConfig {
    /// Sets the field of a RocketMQ key. `Ok(false)` for a key this name server does
    /// not know (the command line refuses those).
    pub fn apply_property(&mut self, key: &str, value: &str) -> Result<bool, NamesrvError> {
        self.set_key(key, value)
            .map_err(|reason| NamesrvError::invalid(key, value, reason))
    }

    /// The ceiling of the process's memory: `maxMemoryBytes`, else an eighth of the
    /// machine's.
    pub fn memory_ceiling(&self) -> u64 {
        self.limits
            .memory_ceiling(8, &vostok_remoting::limits::MachineMemory::read())
    }

    /// Every setting as a RocketMQ key and its text, in a fixed order; feeding them
    /// back through [`Self::apply_property`] gives the same config.
    pub fn to_properties(&self) -> Vec<(String, String)> {
        self.key_values()
    }

    /// The effective config as `.properties` text (`mqnamesrv -p`, GET_NAMESRV_CONFIG).
    pub fn to_properties_text(&self) -> String {
        vostok_remoting::support::properties::render(&self.to_properties())
    }

    /// Applies every key of a `.properties` file and records it as
    /// `config_store_path`. Returns the keys this name server does not know.
    pub fn load_properties_file(&mut self, path: &Path) -> Result<Vec<String>, NamesrvError> {
        let pairs = vostok_remoting::support::properties::load(path)
            .map_err(|e| NamesrvError::io("read config file", path, e))?;
        let mut unknown = Vec::new();
        for (key, value) in pairs {
            if !self.apply_property(&key, &value)? {
                unknown.push(key);
            }
        }
        self.config_store_path = path.to_path_buf();
        Ok(unknown)
    }

    /// Rejects settings the name server cannot run with.
    pub fn validate(&self) -> Result<(), NamesrvError> {
        if self.scan_not_active_broker_interval.is_zero() {
            return Err(NamesrvError::invalid(
                "scanNotActiveBrokerInterval",
                "0",
                "must be at least 1 ms",
            ));
        }
        if self.broker_channel_expired_time.is_zero() {
            return Err(NamesrvError::invalid(
                "brokerChannelExpiredTime",
                "0",
                "must be at least 1 ms",
            ));
        }
        if self.kv_config_path.as_os_str().is_empty() {
            return Err(NamesrvError::invalid(
                "kvConfigPath",
                "",
                "must not be empty",
            ));
        }
        self.metrics.validate().map_err(|e| {
            NamesrvError::invalid(
                "metricsExporterType",
                self.metrics.exporter_type.name(),
                e.to_string(),
            )
        })?;
        if self.bind_address.trim().is_empty() {
            return Err(NamesrvError::invalid(
                "bindAddress",
                "",
                "must not be empty",
            ));
        }
        if let Err((key, reason)) = self.limits.validate() {
            let value = self
                .limits
                .key_values()
                .into_iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v)
                .unwrap_or_default();
            return Err(NamesrvError::invalid(key, &value, reason));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_rocketmq_defaults() {
        let c = NamesrvConfig::default();
        assert_eq!(c.listen_port, 9876);
        assert_eq!(c.bind_address, "0.0.0.0");
        assert_eq!(c.scan_not_active_broker_interval, Duration::from_secs(5));
        assert_eq!(c.broker_channel_expired_time, Duration::from_secs(120));
        assert!(c.return_order_topic_config_to_broker && c.enable_all_topic_list);
        assert!(!c.order_message_enable && !c.need_wait_for_service);
        assert_eq!(c.wait_seconds_for_service, 45);
        assert!(c.kv_config_path.ends_with("namesrv/kvConfig.json"));
        c.validate().unwrap();
    }

    #[test]
    fn the_keys_read_on_each_request_are_the_ones_marked_to_change_at_run_time() {
        let mut marked = KEYS.run_time_names();
        marked.sort_unstable();
        assert_eq!(
            marked,
            [
                "enableAllTopicList",
                "enableTopicList",
                "needWaitForService",
                "orderMessageEnable",
                "returnOrderTopicConfigToBroker",
                "waitSecondsForService",
            ]
        );
        // The embedded controller's are its own request's, though the reference
        // lists them here as changing at run time.
        let controller = vostok_controller::config::KEYS.run_time_names();
        assert!(!controller.is_empty());
        let reference = KEYS.markdown(&NamesrvConfig::default());
        for key in controller {
            assert!(!marked.contains(&key), "{key}");
            assert!(
                reference.contains(&format!("| `{key}` |"))
                    && reference
                        .lines()
                        .any(|l| l.starts_with(&format!("| `{key}` |"))
                            && l.ends_with("changes at run time |")),
                "{key}"
            );
        }
    }

    #[test]
    fn keys_apply_and_round_trip() {
        let mut c = NamesrvConfig::default();
        assert!(c.apply_property("listenPort", " 0 ").unwrap());
        assert!(c
            .apply_property("scanNotActiveBrokerInterval", "1000")
            .unwrap());
        assert!(c.apply_property("orderMessageEnable", "TRUE").unwrap());
        assert!(c
            .apply_property("kvConfigPath", "/tmp/x y/kv.json")
            .unwrap());
        assert!(!c.apply_property("serverWorkerThreads", "8").unwrap());
        assert_eq!(c.listen_port, 0);
        assert_eq!(c.scan_not_active_broker_interval, Duration::from_secs(1));
        assert!(c.order_message_enable);

        let mut back = NamesrvConfig {
            listen_port: 1,
            ..Default::default()
        };
        for (k, v) in c.to_properties() {
            assert!(back.apply_property(&k, &v).unwrap(), "{k}");
        }
        assert_eq!(back, c);

        let text = c.to_properties_text();
        let mut parsed = NamesrvConfig::default();
        for (k, v) in vostok_remoting::support::properties::parse(&text) {
            parsed.apply_property(&k, &v).unwrap();
        }
        assert_eq!(parsed, c);
    }

    /// `mqnamesrv -p` prints every key it reads and nothing else; each reads back.
    #[test]
    fn every_key_is_printed_once_and_reads_back() {
        let c = NamesrvConfig {
            enable_controller_in_namesrv: true,
            ..Default::default()
        };
        vostok_remoting::support::keys::check_printed_keys(&KEYS, &c, NamesrvConfig::default())
            .unwrap();
        let plain = NamesrvConfig::default().to_properties();
        assert!(!plain.iter().any(|(k, _)| k == "controllerDLegerPeers"));
        assert!(!NamesrvConfig::default()
            .apply_property("listenPrt", "1")
            .unwrap());
        assert_eq!(
            vostok_remoting::support::keys::unknown_key("listenPrt", KEYS.names()),
            "unknown key 'listenPrt' (did you mean 'listenPort'?)"
        );
    }

    /// A key of both tables is the name server's, and the controller's rule reads it
    /// too: these five, each a `shared_key!` line.
    #[test]
    fn the_keys_shared_with_the_controller_are_listed_once() {
        let controller = vostok_controller::config::KEYS.names();
        let mut shared: Vec<&str> = KEYS
            .keys
            .iter()
            .map(|k| k.name)
            .filter(|k| controller.contains(k))
            .collect();
        shared.sort_unstable();
        assert_eq!(
            shared,
            [
                "aclEnable",
                "authenticationEnabled",
                "bindAddress",
                "rocketmqHome",
                "scanNotActiveBrokerInterval",
            ]
        );
        let names = KEYS.names();
        for key in shared {
            assert_eq!(names.iter().filter(|k| **k == key).count(), 1, "{key}");
        }
        let mut c = NamesrvConfig::default();
        c.apply_property("scanNotActiveBrokerInterval", "1234")
            .unwrap();
        c.apply_property("bindAddress", "127.0.0.2").unwrap();
        assert_eq!(
            c.controller.scan_not_active_broker_interval,
            Duration::from_millis(1234)
        );
        assert_eq!(c.controller.bind_address, "127.0.0.2");
    }

    #[test]
    fn the_acl_keys_reach_an_embedded_controller_too() {
        let mut c = NamesrvConfig::default();
        assert!(c.apply_property("aclEnable", "true").unwrap());
        assert!(c.apply_property("rocketmqHome", "/opt/rmq").unwrap());
        assert!(c.apply_property("accessKey", "controllers").unwrap());
        assert!(c.acl_enable && c.controller.acl_enable);
        assert_eq!(c.rocketmq_home, "/opt/rmq");
        assert_eq!(c.controller.rocketmq_home, "/opt/rmq");
        assert_eq!(c.controller.access_key, "controllers");
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut c = NamesrvConfig::default();
        let err = c.apply_property("listenPort", "98765").unwrap_err();
        assert!(err.to_string().contains("listenPort"), "{err}");
        assert!(c.apply_property("clusterTest", "yes").is_err());
        c.scan_not_active_broker_interval = Duration::ZERO;
        assert!(c.validate().is_err());
    }

    #[test]
    fn loads_a_properties_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv.conf");
        std::fs::write(
            &path,
            "listenPort=0\n# c\nfoo=bar\nkvConfigPath=/data/kv.json\n",
        )
        .unwrap();
        let mut c = NamesrvConfig::default();
        let unknown = c.load_properties_file(&path).unwrap();
        assert_eq!(unknown, vec!["foo".to_owned()]);
        assert_eq!(c.listen_port, 0);
        assert_eq!(c.kv_config_path, PathBuf::from("/data/kv.json"));
        assert_eq!(c.config_store_path, path);
        assert!(c.load_properties_file(&dir.path().join("missing")).is_err());
    }
}
