//! POP keys of `broker.conf` (docs/pop.md#configuration), with RocketMQ's names and
//! defaults.

use std::time::Duration;

use vostok_remoting::config_key;
use vostok_remoting::support::keys::{Flag, Millis, Num, Section, Table};

use crate::error::BrokerError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PopConfig {
    /// `reviveQueueNum`: queues of the revive topic; checkpoints are spread over them.
    pub revive_queue_num: i32,
    /// `reviveInterval`: how often the revive service looks for due checkpoints.
    pub revive_interval: Duration,
    /// `enableRetryTopicV2`: POP retry topics named `%RETRY%group+topic` instead of
    /// `%RETRY%group_topic`.
    pub enable_retry_topic_v2: bool,
    /// `popFromRetryProbability`: percent of pops that read the retry topic first.
    pub pop_from_retry_probability: i32,
    /// `popPollingSize`: POP requests held per (topic, group, queue).
    pub pop_polling_size: usize,
    /// `maxPopPollingSize`: POP requests held in all.
    pub max_pop_polling_size: usize,
    /// `popResponseReturnActualRetryTopic`: retried messages keep their retry topic in
    /// the response instead of being shown under the topic popped.
    pub pop_response_return_actual_retry_topic: bool,
    /// `popCkMaxBufferSize`. **Vostok differs:** the most live checkpoints kept; pops
    /// beyond it answer POLLING_FULL until acks or revives free room.
    pub pop_ck_max_buffer_size: usize,
}

impl Default for PopConfig {
    fn default() -> Self {
        PopConfig {
            revive_queue_num: 8,
            revive_interval: Duration::from_millis(1000),
            enable_retry_topic_v2: false,
            pop_from_retry_probability: 20,
            pop_polling_size: 1024,
            max_pop_polling_size: 100_000,
            pop_response_return_actual_retry_topic: false,
            pop_ck_max_buffer_size: 200_000,
        }
    }
}

/// The POP keys.
pub static KEYS: Table<PopConfig> = Table {
    keys: &[
        config_key!("reviveQueueNum", revive_queue_num: Num, "POP: queues of the revive topic `rmq_sys_REVIVE_LOG_<cluster>`"),
        config_key!("reviveInterval", revive_interval: Millis, "POP: ms between revive passes (messages not acked in time come back)"),
        config_key!("enableRetryTopicV2", enable_retry_topic_v2: Flag, "POP retry topics `%RETRY%group+topic` instead of `%RETRY%group_topic`"),
        config_key!("popFromRetryProbability", pop_from_retry_probability: Num, "POP: percent of pops that read the retry topic first"),
        config_key!("popPollingSize", pop_polling_size: Num, "POP requests held per (topic, group, queue), beyond which POLLING_FULL"),
        config_key!("maxPopPollingSize", max_pop_polling_size: Num, "POP requests held in all, beyond which POLLING_FULL"),
        config_key!("popResponseReturnActualRetryTopic", pop_response_return_actual_retry_topic: Flag, "POP: show retried messages under their retry topic"),
        config_key!("popCkMaxBufferSize", pop_ck_max_buffer_size: Num, "POP: most live checkpoints; beyond, pops answer POLLING_FULL"),
    ],
    nested: &[],
};

impl Section for PopConfig {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl PopConfig {
    pub(crate) fn validate(&self) -> Result<(), BrokerError> {
        let invalid = |key: &str, reason: &str| {
            Err(BrokerError::Config {
                key: key.to_owned(),
                reason: reason.to_owned(),
            })
        };
        if !(1..=64).contains(&self.revive_queue_num) {
            return invalid("reviveQueueNum", "must be between 1 and 64");
        }
        if self.revive_interval.is_zero() {
            return invalid("reviveInterval", "must be greater than 0");
        }
        if !(0..=100).contains(&self.pop_from_retry_probability) {
            return invalid("popFromRetryProbability", "must be between 0 and 100");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_apply_and_print() {
        let mut c = PopConfig::default();
        assert!(c.set_key("reviveQueueNum", "4").unwrap());
        assert!(c.set_key("enableRetryTopicV2", "true").unwrap());
        assert!(!c.set_key("listenPort", "1").unwrap());
        assert!(c.set_key("popPollingSize", "x").is_err());
        assert_eq!(c.revive_queue_num, 4);
        assert!(c
            .key_values()
            .iter()
            .any(|(k, v)| k == "enableRetryTopicV2" && v == "true"));
        c.revive_queue_num = 0;
        assert!(c.validate().is_err());
    }
}
