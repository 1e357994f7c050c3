//! `broker.conf` keys, declared once: the broker's own keys, then the tables of its
//! sections (POP, controller mode, gRPC, metrics and console, metadata bounds, store,
//! security, memory bounds). Reading a key (`apply_property`, an unknown key is an
//! error naming the nearest known one), writing the effective config back as RocketMQ
//! key/value pairs (`mqbroker -p`, GET_BROKER_CONFIG) and docs/keys.md all come from
//! [`KEYS`].

use vostok_remoting::support::keys::{
    unknown_key, Flag, Key, Millis, Num, OptText, Secs, Section, Table, Text,
};
use vostok_remoting::{config_key, config_within};

use super::BrokerConfig;
use crate::error::BrokerError;

/// Every key `broker.conf` accepts.
pub static KEYS: Table<BrokerConfig> = Table {
    keys: &[
        config_key!("brokerClusterName", broker_cluster_name: Text, "the cluster this broker registers in", important),
        config_key!("brokerName", broker_name: Text, "master and slaves share it; also a topic name: `[%|a-zA-Z0-9_-]`", default = "the host name before its first dot, other characters than `[a-zA-Z0-9_-]` replaced by `-`", important),
        config_key!("brokerId", broker_id: Num, "0 = master, > 0 = slave", important),
        config_key!("brokerIP1", broker_ip1: Text, "what clients connect to; stored in every record as STOREHOST", default = "`127.0.0.1` standalone, else the host's outward address", important),
        config_key!("brokerIP2", broker_ip2: Text, "the address slaves replicate from; empty: `brokerIP1`"),
        config_key!("bindAddress", bind_address: Text, "the address the listeners bind", default = "`127.0.0.1` standalone, else `0.0.0.0`"),
        config_key!("listenPort", listen_port: Num, "the remoting port; 0 binds a free port", important),
        Key::new(
            "haListenPort",
            "where a master accepts its slaves; advertised as `brokerIP2:haListenPort`",
            |c: &mut BrokerConfig, v| {
                c.ha_listen_port = Some(vostok_remoting::support::keys::num(v)?);
                Ok(())
            },
            |c| c.ha_listen_port().to_string(),
        )
        .default_text("`listenPort + 1` (a free port when `listenPort` is 0)"),
        config_key!("portOffset", port_offset: Num, "added to every port the broker binds (a port of 0 stays free-port)"),
        config_key!("fastListenEnable", fast_listen_enable: Flag, "also serve `listenPort - 2`, where Java clients up to 4.4 send"),
        config_key!("namesrvAddr", namesrv_addr: OptText, "`host:port;host:port`; empty: an embedded name server (standalone)", default = "`$NAMESRV_ADDR`, else none (standalone)", important),
        config_key!("embeddedNamesrvPort", embedded_namesrv_port: Num, "the embedded name server's port (standalone mode)"),
        Key::new(
            "brokerRole",
            "`ASYNC_MASTER`, `SYNC_MASTER` (a send is acknowledged once a slave holds it) or `SLAVE`",
            |c: &mut BrokerConfig, v| {
                c.broker_role = v.parse()?;
                Ok(())
            },
            |c| c.broker_role.name().to_owned(),
        )
        .important(),
        config_key!("regionId", region_id: Text, "the region clients' trace records name"),
        config_key!("traceOn", trace_on: Flag, "whether clients trace sends to this broker"),
        config_key!("traceTopicEnable", trace_topic_enable: Flag, "create the message trace topic at start"),
        config_key!("msgTraceTopicName", msg_trace_topic_name: Text, "the message trace topic"),
        config_key!("brokerPermission", broker_permission: Num, "4 read, 2 write", at_run_time),
        config_key!("autoCreateTopicEnable", auto_create_topic_enable: Flag, "create unknown topics on first send from `TBW102`", at_run_time, important),
        config_key!("autoCreateSubscriptionGroup", auto_create_subscription_group: Flag, "create unknown groups on first use", at_run_time),
        config_key!("defaultTopicQueueNums", default_topic_queue_nums: Num, "queues of `TBW102`, the auto-create template"),
        config_key!("clusterTopicEnable", cluster_topic_enable: Flag, "create a topic named after the cluster"),
        config_key!("brokerTopicEnable", broker_topic_enable: Flag, "create a topic named after the broker"),
        config_key!("registerNameServerPeriod", register_name_server_period: Millis, "re-registration period (clamped to 10-60 s)"),
        config_key!("registerBrokerTimeoutMills", register_broker_timeout: Millis, "how long one registration may take"),
        config_key!("compressedRegister", compressed_register: Flag, "compress the registration body"),
        config_key!("enableSplitRegistration", enable_split_registration: Flag, "register the topic table in parts of `splitRegistrationSize` topics"),
        config_key!("splitRegistrationSize", split_registration_size: Num, "topics per part of a split registration"),
        config_key!("forceRegister", force_register: Flag, "register even when nothing changed"),
        config_key!("longPollingEnable", long_polling_enable: Flag, "hold empty pulls until a message arrives", at_run_time),
        config_key!("shortPollingTimeMills", short_polling_time: Millis, "how long an empty pull is held without long polling", at_run_time),
        config_key!("notifyConsumerIdsChangedEnable", notify_consumer_ids_changed_enable: Flag, "tell a group's consumers when one joins or leaves"),
        config_key!("flushConsumerOffsetInterval", flush_consumer_offset_interval: Millis, "ms between writes of `config/consumerOffset.json`"),
        config_key!("channelExpiredTimeout", channel_expired_timeout: Millis, "drop clients silent this long"),
        config_key!("serverChannelMaxIdleTimeSeconds", server_channel_max_idle: Secs, "close connections idle this long"),
        config_key!("transactionTimeOut", transaction_timeout: Millis, "half messages younger than this are not checked back", at_run_time),
        config_key!("transactionCheckMax", transaction_check_max: Num, "checks before a half message is discarded", at_run_time),
        config_key!("transactionCheckInterval", transaction_check_interval: Millis, "check-back period", at_run_time),
        config_key!("rejectTransactionMessage", reject_transaction_message: Flag, "refuse half messages", at_run_time),
        config_key!("slaveReadEnable", slave_read_enable: Flag, "send consumers far behind to a slave", at_run_time),
        config_key!("sendThreadPoolQueueCapacity", send_thread_pool_queue_capacity: Num, "sends in progress before SYSTEM_BUSY"),
        config_key!("enablePropertyFilter", enable_property_filter: Flag, "serve SQL92 subscriptions", at_run_time),
        config_key!("duplicationWindowSeconds", duplication_window: Secs, "remember each message's `UNIQ_KEY` per topic this long and answer a retried send with the original; 0 off"),
        config_key!("duplicationWindowMaxEntries", duplication_window_max_entries: Num, "most keys remembered; the oldest go first"),
        config_key!("storeReplyMessageEnable", store_reply_message_enable: Flag, "store replies in `<cluster>_REPLY_TOPIC` as well as pushing them"),
        config_key!("maxFrameSize", max_frame_size: Num, "largest frame accepted from a client"),
        config_key!("timerWheelEnable", timer_wheel_enable: Flag, "serve timer messages"),
        config_key!("timerMaxDelaySec", timer_max_delay: Secs, "longest timer delay"),
    ],
    nested: &[
        config_within!(BrokerConfig, pop, super::pop::KEYS),
        config_within!(BrokerConfig, controller, super::controller::KEYS),
        config_within!(BrokerConfig, grpc, super::grpc::KEYS),
        config_within!(BrokerConfig, ops, super::ops::KEYS),
        config_within!(BrokerConfig, metadata, super::metadata::KEYS),
        config_within!(BrokerConfig, store, vostok_store::config::KEYS),
        config_within!(BrokerConfig, security, super::security::KEYS),
        config_within!(BrokerConfig, limits, vostok_remoting::limits::KEYS),
    ],
};

impl Section for BrokerConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl BrokerConfig {
    /// Applies one `broker.conf` entry. Unknown keys are an error: a misspelt key
    /// silently ignored is a misconfigured production broker.
    pub fn apply_property(&mut self, key: &str, value: &str) -> Result<(), BrokerError> {
        let result = match KEYS.apply(self, key, value) {
            Some(result) => result,
            None => Err(unknown_key(key, KEYS.names())),
        };
        result.map_err(|reason| BrokerError::Config {
            key: key.to_owned(),
            reason,
        })
    }

    /// The effective configuration as RocketMQ key/value pairs (`mqbroker -p`).
    pub fn to_properties(&self) -> Vec<(String, String)> {
        KEYS.print(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::support::keys::check_printed_keys;

    /// `mqbroker -m` prints these, marked on their lines in the tables.
    #[test]
    fn the_important_keys_are_the_ones_marked() {
        let mut marked = KEYS.important_names();
        marked.sort_unstable();
        assert_eq!(
            marked,
            [
                "autoCreateTopicEnable",
                "brokerClusterName",
                "brokerIP1",
                "brokerId",
                "brokerName",
                "brokerRole",
                "flushDiskType",
                "listenPort",
                "namesrvAddr",
                "storePathRootDir",
            ]
        );
    }

    /// `-p` prints every key the parser accepts (aliases and keys accepted only for
    /// RocketMQ's files aside) and nothing else, and each printed value parses back.
    #[test]
    fn every_key_is_printed_once_and_parses_back() {
        let mut config = BrokerConfig::default();
        config.ops.console_enable = Some(true);
        check_printed_keys(&KEYS, &config, BrokerConfig::default()).unwrap();
        // Every section's own table too, as GET_BROKER_CONFIG and `-p` print them.
        let tls = "tls.server.keyPath";
        config.apply_property(tls, "/k.pem").unwrap();
        config.apply_property("listenPort", "0").unwrap();
        check_printed_keys(&KEYS, &config, BrokerConfig::default()).unwrap();
    }

    #[test]
    fn a_misspelt_key_is_named_with_the_key_meant() {
        let e = BrokerConfig::default()
            .apply_property("brokerClustername", "c")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown key 'brokerClustername' (did you mean 'brokerClusterName'?)"),
            "{e}"
        );
        let e = BrokerConfig::default()
            .apply_property("flushDiskTyp", "SYNC_FLUSH")
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean 'flushDiskType'"), "{e}");
    }

    #[test]
    fn the_ha_port_of_a_free_listen_port_is_a_free_port() {
        let mut config = BrokerConfig::default();
        config.apply_property("listenPort", "0").unwrap();
        let printed = config.to_properties();
        assert!(printed.contains(&("haListenPort".to_owned(), "0".to_owned())));
    }

    #[test]
    fn p_prints_the_port_offset_given_beside_the_moved_ports() {
        let mut config = BrokerConfig::default();
        config.apply_property("portOffset", "57").unwrap();
        config.apply_port_offset().unwrap();
        config.apply_port_offset().unwrap();
        let printed = config.to_properties();
        let value = |key: &str| {
            printed
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(value("portOffset"), Some("57"));
        assert_eq!(value("listenPort"), Some("10968"));
        assert_eq!(value("haListenPort"), Some("10969"));
    }
}
