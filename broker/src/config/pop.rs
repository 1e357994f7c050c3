//! POP keys of `broker.conf` (docs/pop.md#configuration), with RocketMQ's names and
//! defaults.

use std::time::Duration;

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

fn bad(key: &str, value: &str) -> BrokerError {
    BrokerError::Config {
        key: key.to_owned(),
        reason: format!("cannot parse {value:?}"),
    }
}

fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, BrokerError> {
    v.trim().parse().map_err(|_| bad(key, v))
}

fn flag(key: &str, v: &str) -> Result<bool, BrokerError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, v)),
    }
}

impl PopConfig {
    /// Applies one key; false when it is not a POP key.
    pub fn apply_property(&mut self, key: &str, v: &str) -> Result<bool, BrokerError> {
        match key {
            "reviveQueueNum" => self.revive_queue_num = num(key, v)?,
            "reviveInterval" => self.revive_interval = Duration::from_millis(num(key, v)?),
            "enableRetryTopicV2" => self.enable_retry_topic_v2 = flag(key, v)?,
            "popFromRetryProbability" => self.pop_from_retry_probability = num(key, v)?,
            "popPollingSize" => self.pop_polling_size = num(key, v)?,
            "maxPopPollingSize" => self.max_pop_polling_size = num(key, v)?,
            "popResponseReturnActualRetryTopic" => {
                self.pop_response_return_actual_retry_topic = flag(key, v)?
            }
            "popCkMaxBufferSize" => self.pop_ck_max_buffer_size = num(key, v)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn to_properties(&self) -> Vec<(String, String)> {
        [
            ("reviveQueueNum", self.revive_queue_num.to_string()),
            (
                "reviveInterval",
                self.revive_interval.as_millis().to_string(),
            ),
            ("enableRetryTopicV2", self.enable_retry_topic_v2.to_string()),
            (
                "popFromRetryProbability",
                self.pop_from_retry_probability.to_string(),
            ),
            ("popPollingSize", self.pop_polling_size.to_string()),
            ("maxPopPollingSize", self.max_pop_polling_size.to_string()),
            (
                "popResponseReturnActualRetryTopic",
                self.pop_response_return_actual_retry_topic.to_string(),
            ),
            (
                "popCkMaxBufferSize",
                self.pop_ck_max_buffer_size.to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

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
        assert!(c.apply_property("reviveQueueNum", "4").unwrap());
        assert!(c.apply_property("enableRetryTopicV2", "true").unwrap());
        assert!(!c.apply_property("listenPort", "1").unwrap());
        assert!(c.apply_property("popPollingSize", "x").is_err());
        assert_eq!(c.revive_queue_num, 4);
        assert!(c
            .to_properties()
            .iter()
            .any(|(k, v)| k == "enableRetryTopicV2" && v == "true"));
        c.revive_queue_num = 0;
        assert!(c.validate().is_err());
    }
}
