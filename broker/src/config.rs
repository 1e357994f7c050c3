//! Broker configuration: RocketMQ's `broker.conf` keys and defaults.
//!
//! Loaded in layers: defaults, then the `-c` properties file, then command-line flags,
//! then [`BrokerConfig::validate`]. Store keys (`storePathRootDir`, `flushDiskType`,
//! `mappedFileSizeCommitLog`, ...) are handed to [`StoreConfig`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use vostok_namesrv::NamesrvConfig;
use vostok_remoting::limits::MachineMemory;
use vostok_remoting::protocol::topic::perm;
use vostok_remoting::ServerLimits;
use vostok_store::StoreConfig;

use crate::error::BrokerError;

mod controller;
mod grpc;
mod keys;
mod metadata;
mod ops;
mod pop;
mod security;

pub use controller::ControllerModeConfig;
pub use grpc::GrpcConfig;
/// Every `broker.conf` key (docs/keys.md is generated from it).
pub use keys::KEYS;
pub use metadata::MetadataLimits;
pub use ops::OpsConfig;
pub use pop::PopConfig;
pub use security::SecurityConfig;

/// `brokerRole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    AsyncMaster,
    SyncMaster,
    Slave,
}

impl BrokerRole {
    pub fn name(self) -> &'static str {
        match self {
            BrokerRole::AsyncMaster => "ASYNC_MASTER",
            BrokerRole::SyncMaster => "SYNC_MASTER",
            BrokerRole::Slave => "SLAVE",
        }
    }
}

impl std::str::FromStr for BrokerRole {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "ASYNC_MASTER" => Ok(BrokerRole::AsyncMaster),
            "SYNC_MASTER" => Ok(BrokerRole::SyncMaster),
            "SLAVE" => Ok(BrokerRole::Slave),
            other => Err(format!(
                "unknown brokerRole {other:?} (ASYNC_MASTER, SYNC_MASTER or SLAVE)"
            )),
        }
    }
}

/// Everything a broker is configured with. `Default` is RocketMQ's defaults, except the
/// store root, which is `./data` so that `cargo run` keeps its data in the checkout.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    pub broker_cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    /// Address clients use; stored in every record as STOREHOST. Empty until
    /// [`BrokerConfig::resolve_addresses`]: 127.0.0.1 in standalone mode, else the
    /// host's outward address.
    pub broker_ip1: String,
    /// Address slaves replicate from; empty means `brokerIP1`.
    pub broker_ip2: String,
    /// Address the listeners bind (RocketMQ's `bindAddress`). Empty until
    /// [`BrokerConfig::resolve_addresses`]: 127.0.0.1 in standalone mode, so a
    /// development broker is not reachable from the network, else 0.0.0.0.
    pub bind_address: String,
    pub listen_port: u16,
    /// Replication port; `None` means `listenPort + 1`, as RocketMQ derives it.
    pub ha_listen_port: Option<u16>,
    /// `portOffset` (**Vostok**): added to every port the broker binds (`listenPort`,
    /// `haListenPort`, `embeddedNamesrvPort`, `grpcServerPort`, `consolePort`,
    /// `metricsPromExporterPort`; a port of 0 stays 0), so that a second broker on
    /// one host is one setting. Applied once by [`BrokerConfig::apply_port_offset`].
    pub port_offset: u16,
    /// Whether the ports have been moved by `port_offset` (not a key).
    pub port_offset_applied: bool,
    /// Also listen on `listenPort - 2`, where Java clients up to 4.4 send (the "VIP" channel).
    pub fast_listen_enable: bool,
    /// `;`-separated name server list. `None`: run an embedded name server.
    pub namesrv_addr: Option<String>,
    /// Port of the embedded name server (standalone mode).
    pub embedded_namesrv_port: u16,
    pub broker_role: BrokerRole,
    pub region_id: String,
    pub trace_on: bool,
    /// Create the message trace topic at start (`traceTopicEnable`; docs/trace.md).
    pub trace_topic_enable: bool,
    /// The message trace topic (`msgTraceTopicName`).
    pub msg_trace_topic_name: String,
    pub broker_permission: i32,
    pub auto_create_topic_enable: bool,
    pub auto_create_subscription_group: bool,
    pub default_topic_queue_nums: i32,
    pub cluster_topic_enable: bool,
    pub broker_topic_enable: bool,
    pub register_name_server_period: Duration,
    pub register_broker_timeout: Duration,
    pub compressed_register: bool,
    /// `enableSplitRegistration`: register the topic table in parts of
    /// `splitRegistrationSize` topics. A registration is split anyway where it would
    /// not fit one frame (docs/flows.md#broker-registration).
    pub enable_split_registration: bool,
    /// `splitRegistrationSize`: topics per part of a split registration.
    pub split_registration_size: usize,
    pub force_register: bool,
    pub long_polling_enable: bool,
    pub short_polling_time: Duration,
    pub notify_consumer_ids_changed_enable: bool,
    pub flush_consumer_offset_interval: Duration,
    /// Clients silent this long are dropped.
    pub channel_expired_timeout: Duration,
    pub server_channel_max_idle: Duration,
    pub transaction_timeout: Duration,
    pub transaction_check_max: i32,
    pub transaction_check_interval: Duration,
    pub reject_transaction_message: bool,
    pub slave_read_enable: bool,
    /// Sends queued or in progress at once before new ones get SYSTEM_BUSY
    /// (`sendThreadPoolQueueCapacity`).
    pub send_thread_pool_queue_capacity: usize,
    /// SQL92 subscriptions (expression type `SQL92`) are served.
    pub enable_property_filter: bool,
    /// How long a message's unique id is remembered per topic, so that a producer's
    /// retry is answered with the original instead of stored twice
    /// (`duplicationWindowSeconds`; zero: off). A topic's
    /// `duplication.window.seconds` attribute overrides it.
    pub duplication_window: Duration,
    /// Most unique ids the window holds; the oldest go first when it is full. The
    /// default is the most whose index fits 2^20 slots: about 45 MB when full
    /// (49 bytes an entry plus the index's slack).
    pub duplication_window_max_entries: usize,
    /// Replies (SEND_REPLY_MESSAGE) are stored in the reply topic as well as pushed
    /// to the requester (`storeReplyMessageEnable`).
    pub store_reply_message_enable: bool,
    /// Largest frame accepted from a client.
    pub max_frame_size: usize,
    /// Timer messages (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS).
    pub timer_wheel_enable: bool,
    /// Longest delay a timer message may ask for (`timerMaxDelaySec`, 3 days in RocketMQ;
    /// Vostok allows 30 days by default).
    pub timer_max_delay: Duration,
    /// POP consumption (`reviveQueueNum`, `popPollingSize`, ...).
    pub pop: PopConfig,
    /// Controller mode (`enableControllerMode`, `controllerAddr`, ...).
    pub controller: ControllerModeConfig,
    /// The gRPC endpoint (`grpcServerPort`, ...).
    pub grpc: GrpcConfig,
    /// Metrics exporter, message trace and web console keys.
    pub ops: OpsConfig,
    /// Bounds on the groups and topics clients make the broker create and hold.
    pub metadata: MetadataLimits,
    pub store: StoreConfig,
    /// ACL and TLS keys.
    pub security: SecurityConfig,
    /// Memory ceiling and connection bounds (`maxMemoryBytes`, `serverMaxConnections`,
    /// ...; docs/limits.md). A broker's memory ceiling defaults to a quarter of the
    /// machine's memory.
    pub limits: ServerLimits,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        let store = StoreConfig {
            store_path_root_dir: PathBuf::from("./data"),
            ..StoreConfig::default()
        };
        BrokerConfig {
            broker_cluster_name: "DefaultCluster".to_owned(),
            broker_name: default_broker_name(),
            broker_id: 0,
            broker_ip1: String::new(),
            broker_ip2: String::new(),
            bind_address: String::new(),
            listen_port: 10911,
            ha_listen_port: None,
            port_offset: 0,
            port_offset_applied: false,
            fast_listen_enable: true,
            namesrv_addr: std::env::var("NAMESRV_ADDR")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            embedded_namesrv_port: 9876,
            broker_role: BrokerRole::AsyncMaster,
            region_id: "DefaultRegion".to_owned(),
            trace_on: true,
            trace_topic_enable: false,
            msg_trace_topic_name: vostok_remoting::protocol::topic::TRACE_TOPIC.to_owned(),
            broker_permission: perm::READ | perm::WRITE,
            auto_create_topic_enable: true,
            auto_create_subscription_group: true,
            default_topic_queue_nums: 8,
            cluster_topic_enable: true,
            broker_topic_enable: true,
            register_name_server_period: Duration::from_secs(30),
            register_broker_timeout: Duration::from_secs(24),
            compressed_register: false,
            enable_split_registration: false,
            split_registration_size: 800,
            force_register: true,
            long_polling_enable: true,
            short_polling_time: Duration::from_millis(1000),
            notify_consumer_ids_changed_enable: true,
            flush_consumer_offset_interval: Duration::from_secs(5),
            channel_expired_timeout: Duration::from_secs(120),
            server_channel_max_idle: Duration::from_secs(120),
            transaction_timeout: Duration::from_millis(6000),
            transaction_check_max: 15,
            transaction_check_interval: Duration::from_secs(60),
            reject_transaction_message: false,
            slave_read_enable: false,
            send_thread_pool_queue_capacity: 10_000,
            enable_property_filter: false,
            duplication_window: Duration::ZERO,
            duplication_window_max_entries: 900_000,
            store_reply_message_enable: true,
            max_frame_size: vostok_remoting::codec::DEFAULT_MAX_FRAME,
            timer_wheel_enable: true,
            timer_max_delay: Duration::from_secs(30 * 24 * 3600),
            pop: PopConfig::default(),
            controller: ControllerModeConfig::default(),
            grpc: GrpcConfig::default(),
            ops: OpsConfig::default(),
            metadata: MetadataLimits::default(),
            store,
            security: SecurityConfig::default(),
            limits: ServerLimits::default(),
        }
    }
}

/// The default `brokerName`: derived from the host name, always valid.
fn default_broker_name() -> String {
    host_name()
        .map(|h| broker_name_from_host(&h))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "broker-a".to_owned())
}

/// This host's name, if it has one.
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    std::str::from_utf8(&buf[..len])
        .ok()
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

/// A valid `brokerName` (`^[%|a-zA-Z0-9_-]+$`, at most 127 bytes) made from a host
/// name: the part before the first dot, any other character replaced by `-`
/// (`dev-laptop.local` → `dev-laptop`). Empty when nothing is left.
pub fn broker_name_from_host(host: &str) -> String {
    host.trim()
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(vostok_remoting::protocol::topic::TOPIC_MAX_LENGTH)
        .collect()
}

/// The address other hosts reach us on: the source address of a route to a public
/// address (no packet is sent), else loopback.
pub fn local_ip() -> IpAddr {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("8.8.8.8:53").map(|_| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

impl BrokerConfig {
    /// A standalone broker named `name` on loopback, for a broker embedded in a program
    /// or a test: every port (remoting, gRPC, the embedded name server's) picked by the
    /// system, no fast port, no outside name server, its store under `store_root`.
    /// Read the ports it got from the running broker's handle.
    pub fn loopback(name: &str, store_root: PathBuf) -> BrokerConfig {
        let mut config = BrokerConfig {
            broker_name: name.into(),
            broker_ip1: "127.0.0.1".into(),
            broker_ip2: "127.0.0.1".into(),
            listen_port: 0,
            fast_listen_enable: false,
            namesrv_addr: None,
            embedded_namesrv_port: 0,
            ..BrokerConfig::default()
        };
        config.grpc.grpc_server_port = 0;
        config.store.store_path_root_dir = store_root;
        config
    }

    /// Checks combinations a single key cannot.
    pub fn validate(&self) -> Result<(), BrokerError> {
        let bad = |key: &str, reason: &str| Err(BrokerError::config(key, reason));
        if self.broker_name.is_empty() {
            return bad("brokerName", "must not be empty");
        }
        if vostok_remoting::protocol::topic::validate_topic(&self.broker_name).is_err() {
            return bad(
                "brokerName",
                &format!(
                    "{:?} must match ^[%|a-zA-Z0-9_-]+$ (it is also a topic name)",
                    self.broker_name
                ),
            );
        }
        if let Some(list) = &self.namesrv_addr {
            if let Err(e) = vostok_remoting::support::namesrv_addr::parse(list) {
                return bad("namesrvAddr", &e.to_string());
            }
        }
        self.controller.validate()?;
        if self.controller.enable {
            // brokerId and brokerRole are placeholders the controller replaces.
        } else if self.broker_role == BrokerRole::Slave && self.broker_id == 0 {
            return bad("brokerId", "a SLAVE needs a brokerId > 0");
        }
        if !self.controller.enable && self.broker_role != BrokerRole::Slave && self.broker_id != 0 {
            return bad("brokerId", "a master has brokerId 0");
        }
        if self.store.transient_store_pool_enable {
            // Apache ignores the key on a slave (and with SYNC_FLUSH, where Vostok
            // honours it); a setting that does nothing is refused instead.
            if !self.controller.enable && self.broker_role == BrokerRole::Slave {
                return bad(
                    "transientStorePoolEnable",
                    "needs a master (brokerRole ASYNC_MASTER or SYNC_MASTER), not a SLAVE",
                );
            }
        }
        if self.default_topic_queue_nums <= 0 {
            return bad("defaultTopicQueueNums", "must be positive");
        }
        if self.split_registration_size == 0 {
            return bad("splitRegistrationSize", "must be positive");
        }
        for (key, value) in [
            ("brokerIP1", &self.broker_ip1),
            ("brokerIP2", &self.broker_ip2),
            ("bindAddress", &self.bind_address),
        ] {
            if !value.is_empty() && value.parse::<IpAddr>().is_err() {
                return bad(key, "must be an IP address");
            }
        }
        for (key, value) in [
            (
                "flushConsumerOffsetInterval",
                self.flush_consumer_offset_interval,
            ),
            ("transactionCheckInterval", self.transaction_check_interval),
            ("registerNameServerPeriod", self.register_name_server_period),
            ("shortPollingTimeMills", self.short_polling_time),
            ("channelExpiredTimeout", self.channel_expired_timeout),
        ] {
            if value.is_zero() {
                return bad(key, "must be greater than 0");
            }
        }
        self.pop.validate()?;
        self.grpc.validate()?;
        self.limits
            .validate()
            .map_err(|(key, reason)| BrokerError::Config {
                key: key.to_owned(),
                reason,
            })?;
        self.ops.validate()?;
        self.store.delay_levels().map_err(|e| BrokerError::Config {
            key: "messageDelayLevel".to_owned(),
            reason: e.to_string(),
        })?;
        Ok(())
    }

    /// The ceiling of the process's memory: `maxMemoryBytes`, else a quarter of the
    /// machine's (the page cache needs the rest for the commitlog).
    pub fn memory_ceiling(&self) -> u64 {
        self.limits.memory_ceiling(4, &MachineMemory::read())
    }

    /// True when no name server is configured: the broker runs its own.
    pub fn is_standalone(&self) -> bool {
        self.namesrv_addr.is_none()
    }

    /// Fills in the addresses left empty: standalone mode binds and advertises
    /// 127.0.0.1; a broker of a cluster binds every interface and advertises the
    /// host's outward address. `brokerIP2` follows `brokerIP1`.
    pub fn resolve_addresses(&mut self) {
        let standalone = self.is_standalone();
        if self.broker_ip1.is_empty() {
            self.broker_ip1 = if standalone {
                Ipv4Addr::LOCALHOST.to_string()
            } else {
                local_ip().to_string()
            };
        }
        if self.broker_ip2.is_empty() {
            self.broker_ip2 = self.broker_ip1.clone();
        }
        if self.bind_address.is_empty() {
            self.bind_address = if standalone { "127.0.0.1" } else { "0.0.0.0" }.to_owned();
        }
    }

    /// `bindAddress:port`.
    pub fn bind_addr(&self, port: u16) -> SocketAddr {
        let ip = self
            .bind_address
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        SocketAddr::new(ip, port)
    }

    /// `brokerIP1:listenPort`, the address registered and stored in records.
    pub fn broker_addr(&self, bound_port: u16) -> SocketAddr {
        let ip = self
            .broker_ip1
            .parse()
            .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        SocketAddr::new(ip, bound_port)
    }

    /// Name servers to register with (`;` or `,` separated; [`BrokerConfig::validate`]
    /// refuses a malformed list).
    pub fn namesrv_list(&self) -> Vec<String> {
        self.namesrv_addr
            .as_deref()
            .unwrap_or("")
            .split([';', ','])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Adds `portOffset` to every port the broker binds, once (a second call changes
    /// nothing; `-p` prints the offset and the moved ports). A port of 0 stays 0.
    pub fn apply_port_offset(&mut self) -> Result<(), BrokerError> {
        let offset = self.port_offset;
        if offset == 0 || self.port_offset_applied {
            return Ok(());
        }
        let shift = |key: &str, port: u16| -> Result<u16, BrokerError> {
            if port == 0 {
                return Ok(0);
            }
            port.checked_add(offset).ok_or_else(|| BrokerError::Config {
                key: "portOffset".to_owned(),
                reason: format!("{key} {port} + {offset} is beyond port 65535"),
            })
        };
        self.listen_port = shift("listenPort", self.listen_port)?;
        if let Some(p) = self.ha_listen_port {
            self.ha_listen_port = Some(shift("haListenPort", p)?);
        }
        self.embedded_namesrv_port = shift("embeddedNamesrvPort", self.embedded_namesrv_port)?;
        self.grpc.grpc_server_port = shift("grpcServerPort", self.grpc.grpc_server_port)?;
        self.ops.console_port = shift("consolePort", self.ops.console_port)?;
        self.ops.metrics.prom_port = shift("metricsPromExporterPort", self.ops.metrics.prom_port)?;
        self.port_offset_applied = true;
        Ok(())
    }

    /// Config of the embedded name server of standalone mode; its KV file lives in the store.
    pub fn embedded_namesrv_config(&self) -> NamesrvConfig {
        NamesrvConfig {
            listen_port: self.embedded_namesrv_port,
            kv_config_path: self
                .store
                .store_path_root_dir
                .join("namesrv")
                .join("kvConfig.json"),
            // Its connections are bounded like the broker's; its memory is the
            // broker's own account.
            limits: self.limits.clone(),
            ..NamesrvConfig::default()
        }
    }

    /// The replication port: `haListenPort`, else `listenPort + 1`, or a free port
    /// (0) when `listenPort` is.
    pub fn ha_listen_port(&self) -> u16 {
        match (self.ha_listen_port, self.listen_port) {
            (Some(port), _) => port,
            (None, 0) => 0,
            (None, listen) => listen.wrapping_add(1),
        }
    }

    pub fn is_master(&self) -> bool {
        self.broker_role != BrokerRole::Slave
    }

    pub fn is_writeable(&self) -> bool {
        self.is_master() && perm::is_writeable(self.broker_permission)
    }

    pub fn is_readable(&self) -> bool {
        perm::is_readable(self.broker_permission)
    }

    pub fn config_dir(&self) -> PathBuf {
        self.store.store_path_root_dir.join("config")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_rocketmq_keys_and_rejects_unknown_ones() {
        let mut c = BrokerConfig::default();
        for (k, v) in vostok_remoting::support::properties::parse(
            "brokerClusterName=C1\nbrokerName=broker-b\nbrokerId=0\nlistenPort=20911\nautoCreateTopicEnable=false\nnamesrvAddr=1.1.1.1:9876;2.2.2.2:9876\nflushDiskType=SYNC_FLUSH\n",
        ) {
            c.apply_property(&k, &v).unwrap();
        }
        assert_eq!(c.broker_cluster_name, "C1");
        assert_eq!(c.listen_port, 20911);
        assert!(!c.auto_create_topic_enable);
        assert_eq!(c.namesrv_list(), ["1.1.1.1:9876", "2.2.2.2:9876"]);
        assert!(c.apply_property("listenPrt", "1").is_err());
        assert!(c.apply_property("listenPort", "x").is_err());
        assert!(c.apply_property("brokerRole", "LEADER").is_err());
        c.validate().unwrap();
        let props = c.to_properties();
        assert!(props
            .iter()
            .any(|(k, v)| k == "flushDiskType" && v == "SYNC_FLUSH"));
    }

    #[test]
    fn config_refuses_the_write_buffer_on_a_slave() {
        let parsed = |text: &str| {
            let mut c = BrokerConfig::default();
            for (k, v) in vostok_remoting::support::properties::parse(text) {
                c.apply_property(&k, &v).unwrap();
            }
            c
        };
        let on = parsed("transientStorePoolEnable=true\n");
        assert!(on.store.transient_store_pool_enable);
        on.validate().unwrap();
        assert!(on
            .to_properties()
            .iter()
            .any(|(k, v)| k == "transientStorePoolEnable" && v == "true"));
        // With SYNC_FLUSH it is honoured (a send still waits for the disk).
        parsed("transientStorePoolEnable=true\nflushDiskType=SYNC_FLUSH\n")
            .validate()
            .unwrap();
        let e = parsed("transientStorePoolEnable=true\nbrokerRole=SLAVE\nbrokerId=1\n")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("transientStorePoolEnable") && e.contains("SLAVE"),
            "{e}"
        );
        // Off, both are fine; in controller mode the role comes at run time.
        parsed("flushDiskType=SYNC_FLUSH\n").validate().unwrap();
        assert!(!BrokerConfig::default().store.transient_store_pool_enable);
    }

    #[test]
    fn a_host_name_always_gives_a_valid_broker_name() {
        for (host, name) in [
            ("dev-laptop.local", "dev-laptop"),
            ("ip-10-0-0-1.ec2.internal", "ip-10-0-0-1"),
            ("büro", "b-ro"),
            ("plain", "plain"),
        ] {
            assert_eq!(broker_name_from_host(host), name);
            let c = BrokerConfig {
                broker_name: broker_name_from_host(host),
                ..Default::default()
            };
            c.validate().unwrap();
        }
        assert_eq!(broker_name_from_host(".local"), "");
        assert_eq!(broker_name_from_host(&"x".repeat(300)).len(), 127);
        BrokerConfig::default().validate().unwrap();
    }

    #[test]
    fn port_offset_moves_every_port_once() {
        let mut c = BrokerConfig::default();
        c.apply_property("portOffset", "100").unwrap();
        c.apply_property("metricsExporterType", "PROM").unwrap();
        c.apply_property("grpcServerPort", "0").unwrap();
        c.apply_port_offset().unwrap();
        c.apply_port_offset().unwrap();
        assert_eq!(c.listen_port, 11011);
        assert_eq!(c.ha_listen_port(), 11012);
        assert_eq!(c.embedded_namesrv_port, 9976);
        assert_eq!(c.grpc.grpc_server_port, 0, "any free port stays so");
        assert_eq!(c.ops.console_port, 8182);
        assert_eq!(c.ops.metrics.prom_port, 5657);
        let mut c = BrokerConfig::default();
        c.apply_property("haListenPort", "30000").unwrap();
        c.apply_property("portOffset", "40000").unwrap();
        let e = c.apply_port_offset().unwrap_err().to_string();
        assert!(e.contains("haListenPort 30000 + 40000"), "{e}");
    }

    #[test]
    fn validation_catches_inconsistent_roles() {
        let mut c = BrokerConfig {
            broker_name: "b".into(),
            broker_role: BrokerRole::Slave,
            ..Default::default()
        };
        assert!(c.validate().is_err());
        c.broker_id = 1;
        assert!(c.validate().is_ok());
    }
}
