//! `broker.conf` keys: reading one (`apply_property`, an unknown key is an error) and
//! writing the effective config back as RocketMQ key/value pairs (`mqbroker -p`,
//! GET_BROKER_CONFIG).

use std::time::Duration;

use super::BrokerConfig;
use crate::error::BrokerError;

fn parse<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, BrokerError> {
    value.trim().parse().map_err(|_| BrokerError::Config {
        key: key.to_owned(),
        reason: format!("cannot parse {value:?}"),
    })
}

fn parse_bool(key: &str, value: &str) -> Result<bool, BrokerError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(BrokerError::Config {
            key: key.to_owned(),
            reason: format!("expected true or false, got {value:?}"),
        }),
    }
}

fn millis(key: &str, value: &str) -> Result<Duration, BrokerError> {
    Ok(Duration::from_millis(parse(key, value)?))
}

impl BrokerConfig {
    /// Applies one `broker.conf` entry. Unknown keys are an error: a misspelt key
    /// silently ignored is a misconfigured production broker.
    pub fn apply_property(&mut self, key: &str, value: &str) -> Result<(), BrokerError> {
        let v = value.trim();
        match key {
            "brokerClusterName" => self.broker_cluster_name = v.to_owned(),
            "brokerName" => self.broker_name = v.to_owned(),
            "brokerId" => self.broker_id = parse(key, v)?,
            "brokerIP1" => self.broker_ip1 = v.to_owned(),
            "brokerIP2" => self.broker_ip2 = v.to_owned(),
            "bindAddress" => self.bind_address = v.trim().to_owned(),
            "listenPort" => self.listen_port = parse(key, v)?,
            "haListenPort" => self.ha_listen_port = Some(parse(key, v)?),
            "portOffset" => self.port_offset = parse(key, v)?,
            "fastListenEnable" => self.fast_listen_enable = parse_bool(key, v)?,
            "namesrvAddr" => {
                self.namesrv_addr = Some(v.to_owned()).filter(|s| !s.is_empty());
            }
            "embeddedNamesrvPort" => self.embedded_namesrv_port = parse(key, v)?,
            "brokerRole" => {
                self.broker_role = v.parse().map_err(|reason| BrokerError::Config {
                    key: key.to_owned(),
                    reason,
                })?
            }
            "regionId" => self.region_id = v.to_owned(),
            "traceOn" => self.trace_on = parse_bool(key, v)?,
            "traceTopicEnable" => self.trace_topic_enable = parse_bool(key, v)?,
            "msgTraceTopicName" => self.msg_trace_topic_name = v.to_owned(),
            "brokerPermission" => self.broker_permission = parse(key, v)?,
            "autoCreateTopicEnable" => self.auto_create_topic_enable = parse_bool(key, v)?,
            "autoCreateSubscriptionGroup" => {
                self.auto_create_subscription_group = parse_bool(key, v)?
            }
            "defaultTopicQueueNums" => self.default_topic_queue_nums = parse(key, v)?,
            "clusterTopicEnable" => self.cluster_topic_enable = parse_bool(key, v)?,
            "brokerTopicEnable" => self.broker_topic_enable = parse_bool(key, v)?,
            "registerNameServerPeriod" => self.register_name_server_period = millis(key, v)?,
            "registerBrokerTimeoutMills" => self.register_broker_timeout = millis(key, v)?,
            "compressedRegister" => self.compressed_register = parse_bool(key, v)?,
            "enableSplitRegistration" => self.enable_split_registration = parse_bool(key, v)?,
            "splitRegistrationSize" => self.split_registration_size = parse(key, v)?,
            "forceRegister" => self.force_register = parse_bool(key, v)?,
            "longPollingEnable" => self.long_polling_enable = parse_bool(key, v)?,
            "shortPollingTimeMills" => self.short_polling_time = millis(key, v)?,
            "notifyConsumerIdsChangedEnable" => {
                self.notify_consumer_ids_changed_enable = parse_bool(key, v)?
            }
            "flushConsumerOffsetInterval" => self.flush_consumer_offset_interval = millis(key, v)?,
            "channelExpiredTimeout" => self.channel_expired_timeout = millis(key, v)?,
            "serverChannelMaxIdleTimeSeconds" => {
                self.server_channel_max_idle = Duration::from_secs(parse(key, v)?)
            }
            "transactionTimeOut" => self.transaction_timeout = millis(key, v)?,
            "transactionCheckMax" => self.transaction_check_max = parse(key, v)?,
            "transactionCheckInterval" => self.transaction_check_interval = millis(key, v)?,
            "rejectTransactionMessage" => self.reject_transaction_message = parse_bool(key, v)?,
            "slaveReadEnable" => self.slave_read_enable = parse_bool(key, v)?,
            "sendThreadPoolQueueCapacity" => self.send_thread_pool_queue_capacity = parse(key, v)?,
            "enablePropertyFilter" => self.enable_property_filter = parse_bool(key, v)?,
            "duplicationWindowSeconds" => {
                self.duplication_window = Duration::from_secs(parse(key, v)?)
            }
            "duplicationWindowMaxEntries" => self.duplication_window_max_entries = parse(key, v)?,
            "storeReplyMessageEnable" => self.store_reply_message_enable = parse_bool(key, v)?,
            "maxFrameSize" => self.max_frame_size = parse(key, v)?,
            "timerWheelEnable" => self.timer_wheel_enable = parse_bool(key, v)?,
            "timerMaxDelaySec" => self.timer_max_delay = Duration::from_secs(parse(key, v)?),
            _ if self
                .limits
                .apply(key, v)
                .map_err(|reason| BrokerError::Config {
                    key: key.to_owned(),
                    reason,
                })? => {}
            _ if self.pop.apply_property(key, v)? => {}
            _ if self.metadata.apply_property(key, v)? => {}
            _ if self.controller.apply_property(key, v)? => {}
            _ if self.security.apply(key, v)? => {}
            _ if self.grpc.apply_property(key, v)? => {}
            _ if self.ops.apply_property(key, v)? => {}
            _ => {
                let known = self
                    .store
                    .apply_property(key, v)
                    .map_err(|e| BrokerError::Config {
                        key: key.to_owned(),
                        reason: e.to_string(),
                    })?;
                if !known {
                    return Err(BrokerError::Config {
                        key: key.to_owned(),
                        reason: "unknown configuration key".to_owned(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The effective configuration as RocketMQ key/value pairs (`mqbroker -p`).
    pub fn to_properties(&self) -> Vec<(String, String)> {
        let ms = |d: Duration| d.as_millis().to_string();
        let mut out: Vec<(String, String)> = vec![
            ("brokerClusterName".into(), self.broker_cluster_name.clone()),
            ("brokerName".into(), self.broker_name.clone()),
            ("brokerId".into(), self.broker_id.to_string()),
            ("brokerIP1".into(), self.broker_ip1.clone()),
            ("brokerIP2".into(), self.broker_ip2.clone()),
            ("bindAddress".into(), self.bind_address.clone()),
            ("listenPort".into(), self.listen_port.to_string()),
            ("haListenPort".into(), self.ha_listen_port().to_string()),
            ("portOffset".into(), self.port_offset.to_string()),
            (
                "fastListenEnable".into(),
                self.fast_listen_enable.to_string(),
            ),
            (
                "namesrvAddr".into(),
                self.namesrv_addr.clone().unwrap_or_default(),
            ),
            (
                "embeddedNamesrvPort".into(),
                self.embedded_namesrv_port.to_string(),
            ),
            ("brokerRole".into(), self.broker_role.name().to_owned()),
            ("regionId".into(), self.region_id.clone()),
            ("traceOn".into(), self.trace_on.to_string()),
            (
                "traceTopicEnable".into(),
                self.trace_topic_enable.to_string(),
            ),
            (
                "msgTraceTopicName".into(),
                self.msg_trace_topic_name.clone(),
            ),
            (
                "brokerPermission".into(),
                self.broker_permission.to_string(),
            ),
            (
                "autoCreateTopicEnable".into(),
                self.auto_create_topic_enable.to_string(),
            ),
            (
                "autoCreateSubscriptionGroup".into(),
                self.auto_create_subscription_group.to_string(),
            ),
            (
                "defaultTopicQueueNums".into(),
                self.default_topic_queue_nums.to_string(),
            ),
            (
                "clusterTopicEnable".into(),
                self.cluster_topic_enable.to_string(),
            ),
            (
                "brokerTopicEnable".into(),
                self.broker_topic_enable.to_string(),
            ),
            (
                "registerNameServerPeriod".into(),
                ms(self.register_name_server_period),
            ),
            (
                "registerBrokerTimeoutMills".into(),
                ms(self.register_broker_timeout),
            ),
            (
                "compressedRegister".into(),
                self.compressed_register.to_string(),
            ),
            (
                "enableSplitRegistration".into(),
                self.enable_split_registration.to_string(),
            ),
            (
                "splitRegistrationSize".into(),
                self.split_registration_size.to_string(),
            ),
            ("forceRegister".into(), self.force_register.to_string()),
            (
                "longPollingEnable".into(),
                self.long_polling_enable.to_string(),
            ),
            ("shortPollingTimeMills".into(), ms(self.short_polling_time)),
            (
                "notifyConsumerIdsChangedEnable".into(),
                self.notify_consumer_ids_changed_enable.to_string(),
            ),
            (
                "flushConsumerOffsetInterval".into(),
                ms(self.flush_consumer_offset_interval),
            ),
            (
                "channelExpiredTimeout".into(),
                ms(self.channel_expired_timeout),
            ),
            (
                "serverChannelMaxIdleTimeSeconds".into(),
                self.server_channel_max_idle.as_secs().to_string(),
            ),
            ("transactionTimeOut".into(), ms(self.transaction_timeout)),
            (
                "transactionCheckMax".into(),
                self.transaction_check_max.to_string(),
            ),
            (
                "transactionCheckInterval".into(),
                ms(self.transaction_check_interval),
            ),
            (
                "rejectTransactionMessage".into(),
                self.reject_transaction_message.to_string(),
            ),
            ("slaveReadEnable".into(), self.slave_read_enable.to_string()),
            (
                "sendThreadPoolQueueCapacity".into(),
                self.send_thread_pool_queue_capacity.to_string(),
            ),
            (
                "enablePropertyFilter".into(),
                self.enable_property_filter.to_string(),
            ),
            (
                "duplicationWindowSeconds".into(),
                self.duplication_window.as_secs().to_string(),
            ),
            (
                "duplicationWindowMaxEntries".into(),
                self.duplication_window_max_entries.to_string(),
            ),
            (
                "storeReplyMessageEnable".into(),
                self.store_reply_message_enable.to_string(),
            ),
            ("maxFrameSize".into(), self.max_frame_size.to_string()),
            (
                "timerWheelEnable".into(),
                self.timer_wheel_enable.to_string(),
            ),
            (
                "timerMaxDelaySec".into(),
                self.timer_max_delay.as_secs().to_string(),
            ),
        ];
        out.extend(self.pop.to_properties());
        out.extend(self.controller.to_properties());
        out.extend(self.grpc.to_properties());
        out.extend(self.ops.to_properties());
        out.extend(self.metadata.to_properties());
        out.extend(self.store.to_properties());
        out.extend(self.security.to_properties());
        out.extend(self.limits.to_properties());
        out
    }
}
