//! POP consumption operations (docs/pop.md): what a POP consumer can do, as functions
//! of the shared state that any front end calls (the remoting processors in
//! `processor::pop`, `processor::ack` and `processor::notification` are thin wrappers).
//!
//! * [`receive`]: pop messages from a topic (one queue or all), with or without FIFO
//!   order, holding the request while nothing is there.
//! * [`ack`]: ack one message or a batch.
//! * [`invisible`]: change a popped message's invisible time.
//!
//! Their state is `state::pop`; messages not acked in time come back through
//! `service::revive`.

pub(crate) mod ack;
pub(crate) mod invisible;
pub(crate) mod receive;
#[cfg(test)]
mod tests;

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::perm;
use vostok_remoting::Channel;

use crate::config::BrokerConfig;
use crate::ops::auto_create::find_or_create_group;
use crate::state::pop::PopState;
use crate::state::runtime_config::RuntimeConfig;
use crate::state::subscription::SubscriptionGroupConfig;
use crate::state::topic::TopicConfigManager;
use crate::state::{Broker, Consumers, Lifecycle, Observed, Storage};

/// What pop, ack and a change of invisible time read and write: the storage, the
/// consumer tables (offsets, groups) and the POP state; the broker's name and address
/// that checkpoint and ack records carry, its run-time permission (a pop of a broker
/// that may not be read is refused), the counters a pop adds to, and the stop signal
/// that ends a held pop.
#[derive(Clone, Copy)]
pub(crate) struct PopTables<'a> {
    pub(crate) config: &'a BrokerConfig,
    pub(crate) runtime: &'a RuntimeConfig,
    pub(crate) storage: &'a Storage,
    pub(crate) consumers: &'a Consumers,
    pub(crate) pop: &'a PopState,
    pub(crate) observed: &'a Observed,
    pub(crate) life: &'a Lifecycle,
    pub(crate) broker_addr: std::net::SocketAddr,
}

impl<'a> PopTables<'a> {
    /// The broker's tables a POP operation uses.
    pub(crate) fn of(b: &'a Broker) -> Self {
        PopTables {
            config: &b.config,
            runtime: &b.runtime,
            storage: &b.storage,
            consumers: &b.consumers,
            pop: &b.pop,
            observed: &b.observed,
            life: &b.life,
            broker_addr: b.broker_addr,
        }
    }
}

/// A POP operation refused, as a RocketMQ response code and remark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PopError {
    pub(crate) code: i32,
    pub(crate) remark: String,
}

impl PopError {
    pub(crate) fn new(code: i32, remark: impl Into<String>) -> Self {
        PopError {
            code,
            remark: remark.into(),
        }
    }
}

/// The topic, which must exist and be readable.
pub(crate) fn readable_topic(
    topics: &TopicConfigManager,
    topic: &str,
) -> Result<TopicConfig, PopError> {
    let config = topics.get(topic).ok_or_else(|| {
        PopError::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist, apply first please!"),
        )
    })?;
    if !perm::is_readable(config.perm) {
        return Err(PopError::new(
            response_code::NO_PERMISSION,
            format!("the topic[{topic}] peeking message is forbidden"),
        ));
    }
    Ok(config)
}

/// The group, created on first use for the client on `client` when allowed, which
/// must be allowed to consume.
pub(crate) fn consuming_group(
    consumers: &Consumers,
    group: &str,
    client: Option<&Channel>,
) -> Result<SubscriptionGroupConfig, PopError> {
    let config = find_or_create_group(consumers, group, client).map_err(|reason| {
        PopError::new(
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group [{group}] does not exist: {reason}"),
        )
    })?;
    if !config.consume_enable {
        return Err(PopError::new(
            response_code::NO_PERMISSION,
            format!("subscription group no permission, {group}"),
        ));
    }
    Ok(config)
}

/// Checks a queue id and offset of an ack or invisible-time change against the store:
/// MESSAGE_ILLEGAL for a queue the topic does not have, NO_MESSAGE for an offset
/// outside `[min, max]` (`max_inclusive`) or `[min, max)`.
pub(crate) fn check_offset(
    storage: &Storage,
    topic: &str,
    queue_id: i32,
    offset: i64,
    max_inclusive: bool,
) -> Result<(), PopError> {
    let config = storage.topics.get(topic).ok_or_else(|| {
        PopError::new(
            response_code::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist, apply first please!"),
        )
    })?;
    if queue_id < 0 || queue_id >= config.read_queue_nums {
        return Err(PopError::new(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}]",
                config.read_queue_nums
            ),
        ));
    }
    let min = storage.store.min_offset_in_queue(topic, queue_id);
    let max = storage.store.max_offset_in_queue(topic, queue_id);
    let above = if max_inclusive {
        offset > max
    } else {
        offset >= max
    };
    if offset < min || above {
        return Err(PopError::new(
            response_code::NO_MESSAGE,
            format!(
                "offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{min}~{max}"
            ),
        ));
    }
    Ok(())
}
