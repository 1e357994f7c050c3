//! Sending one message (docs/commands.md#sending), for SEND_MESSAGE(_V2), the reply
//! and batch checks, and gRPC's SendMessage.
//!
//! Checks in RocketMQ's order (broker and topic permission, topic name, forbidden system
//! topics, auto-creation, queue id, retry/DLQ rules, sizes), then the message is turned
//! into a [`MessageInner`]: delayed messages are parked in `SCHEDULE_TOPIC_XXXX`, timer
//! messages in the timer topic, prepared transaction messages in the half topic (see
//! `reroute`). The property string is parsed once: normalised (as Java's decoder
//! would read it) while the fields the send path needs are picked out.

use std::borrow::Cow;
use std::net::SocketAddr;

use bytes::Bytes;
use vostok_remoting::protocol::body::{TopicConfig, TopicFilterType};
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::MemoryBudget;
use vostok_store::MessageInner;

use super::auto_create::{create_topic_in_send, find_or_create_group, NotCreated};
use super::send_dedupe;
use super::stored::{choose_queue, stamp_append, stored, Stored};
use super::{Client, Refusal, Refused};
use crate::config::BrokerConfig;
use crate::reroute::{self, Parking};
use crate::state::memory::pending_timer_limit;
use crate::state::metrics::MessageKind;
use crate::state::runtime_config::RuntimeConfig;
use crate::state::{Broker, Consumers, Deferred, Intake, Observed, Roles, Storage};

/// Where a send goes: what the checks before storing read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Destination {
    pub(crate) topic: String,
    /// The topic a new topic copies (`TBW102` unless the producer names another):
    /// borrowed when it is `TBW102`, as nearly always, so that a send copies no name.
    pub(crate) default_topic: Cow<'static, str>,
    pub(crate) default_topic_queue_nums: i32,
    /// A negative id means "any writable queue".
    pub(crate) queue_id: i32,
    pub(crate) unit_mode: bool,
}

/// One message to store.
#[derive(Debug, Clone)]
pub(crate) struct SendRequest {
    pub(crate) to: Destination,
    pub(crate) sys_flag: i32,
    pub(crate) born_timestamp: i64,
    pub(crate) flag: i32,
    /// The encoded property string (docs/message.md#property-string).
    pub(crate) properties: String,
    pub(crate) body: Bytes,
    pub(crate) reconsume_times: i32,
    /// The producer's own retry limit, when its client may set one.
    pub(crate) max_reconsume_times: Option<i32>,
    /// When the request arrived, in the latency trace's clock; `None` when it is off.
    pub(crate) received: Option<u64>,
}

/// What storing a message reads and writes, for a send, a batch, a reply, a send back
/// and the end of a transaction: the config and its run-time keys, the standing among
/// replicas (a slave or a master without its lease takes no sends), the storage, the
/// consumer tables (retry topics follow their group), the timers and half messages,
/// the intake (permits, unique ids, the duplication window), the counters, the memory
/// account, and the address records carry as their store host.
#[derive(Clone, Copy)]
pub(crate) struct SendTables<'a> {
    pub(crate) config: &'a BrokerConfig,
    pub(crate) runtime: &'a RuntimeConfig,
    pub(crate) roles: &'a Roles,
    pub(crate) storage: &'a Storage,
    pub(crate) consumers: &'a Consumers,
    pub(crate) deferred: &'a Deferred,
    pub(crate) intake: &'a Intake,
    pub(crate) observed: &'a Observed,
    pub(crate) memory: &'a MemoryBudget,
    pub(crate) broker_addr: SocketAddr,
}

impl<'a> SendTables<'a> {
    /// The broker's tables a send uses.
    pub(crate) fn of(b: &'a Broker) -> Self {
        SendTables {
            config: &b.config,
            runtime: &b.runtime,
            roles: &b.roles,
            storage: &b.storage,
            consumers: &b.consumers,
            deferred: &b.deferred,
            intake: &b.intake,
            observed: &b.observed,
            memory: &b.memory,
            broker_addr: b.broker_addr,
        }
    }

    /// Takes sends ([`Broker::is_master`]).
    pub(crate) fn is_master(&self) -> bool {
        self.roles.is_master(self.config)
    }

    /// A controller-mode master still holding its lease ([`Roles::holds_lease`]).
    pub(crate) fn holds_lease(&self) -> bool {
        self.roles.holds_lease(self.config)
    }

    /// A topic's duplication window ([`Broker::duplication_window`]).
    pub(crate) fn duplication_window(&self, topic: &TopicConfig) -> std::time::Duration {
        crate::state::dedupe::window_for(self.config.duplication_window, topic)
    }
}

fn refused(kind: Refused, remark: impl Into<String>) -> Refusal {
    Refusal::new(kind, remark)
}

/// The admission checks before any send: bounded permits, page cache, memory. The
/// permit is held while the send runs.
pub(crate) fn admit<'a>(
    intake: &'a Intake,
    storage: &Storage,
    memory: &MemoryBudget,
) -> Result<tokio::sync::SemaphorePermit<'a>, Refusal> {
    // Bounded admission: a flood of sends meets SYSTEM_BUSY, not an unbounded queue.
    let Ok(permit) = intake.permits.try_acquire() else {
        return Err(refused(
            Refused::Busy,
            "[OVERLOAD]system busy, start flow control for a while",
        ));
    };
    if storage.store.is_os_page_cache_busy() {
        return Err(refused(
            Refused::Busy,
            "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
        ));
    }
    // Near the memory ceiling producers wait, rather than memory growing to it.
    if memory.is_pressed() {
        return Err(refused(
            Refused::Busy,
            "[MEMORY]broker busy: memory nearly at its ceiling, start flow control for a while",
        ));
    }
    Ok(permit)
}

/// Stores one message sent by `client`.
pub(crate) async fn send(
    tables: SendTables<'_>,
    client: Client<'_>,
    mut request: SendRequest,
) -> Result<Stored, Refusal> {
    let _permit = admit(tables.intake, tables.storage, tables.memory)?;
    let topic_config = check_message(tables, client, &request.to)?;
    send_checked(tables, client, &mut request, &topic_config).await
}

async fn send_checked(
    tables: SendTables<'_>,
    client: Client<'_>,
    request: &mut SendRequest,
    topic_config: &TopicConfig,
) -> Result<Stored, Refusal> {
    handle_retry_and_dlq(tables, client, request)?;
    let dead_letter = topic::is_dlq_topic(&request.to.topic);
    let max = tables.config.store.max_message_size;
    if request.body.len() > max {
        return Err(refused(
            Refused::MessageIllegal,
            format!(
                "the message body size {} over max value, MAX: {max}",
                request.body.len()
            ),
        ));
    }
    let raw = std::mem::take(&mut request.properties);
    if raw.len() > property::MAX_PROPERTIES_LEN {
        return Err(refused(
            Refused::MessageIllegal,
            format!(
                "the message properties size {} over max value, MAX: {}",
                raw.len(),
                property::MAX_PROPERTIES_LEN
            ),
        ));
    }
    // The one parse of the property string: normalised, and the fields the send path
    // needs picked out on the way.
    let mut scan = SendProperties {
        dead_letter,
        ..SendProperties::default()
    };
    let mut props = Properties::decode_owned_with(raw, |k, v| scan.visit(k, v));
    let queue_id = choose_queue(request.to.queue_id, topic_config);
    let topic = std::mem::take(&mut request.to.topic);
    let mut msg = MessageInner {
        flag: request.flag,
        sys_flag: request.sys_flag,
        born_timestamp: request.born_timestamp,
        born_host: client.addr,
        reconsume_times: request.reconsume_times,
        ..MessageInner::new(
            topic,
            queue_id,
            request.body.clone(),
            String::new(),
            tables.broker_addr,
        )
    };
    if topic_config.topic_filter_type == TopicFilterType::MultiTag {
        msg.sys_flag |= sysflag::MULTI_TAGS_FLAG;
    }
    if scan.dead_letter {
        // A dead letter is never scheduled.
        props.remove(property::DELAY_TIME_LEVEL);
        scan.delay_level = 0;
    }
    let client_key = scan.uniq_key.is_some();
    let uniq_key = match scan.uniq_key {
        Some(key) => key,
        None => {
            let key = tables.intake.ids.next_id();
            props.insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, &key);
            key
        }
    };
    // A retry of a message stored within the topic's duplication window gets the
    // original answer; a retry racing the first attempt waits for its outcome.
    let claim = match client_key {
        true => send_dedupe::claim(tables, topic_config, &msg.topic, &[&uniq_key]).await,
        false => None,
    };
    if let Some(claim) = claim.as_ref().filter(|c| c.all_duplicates()) {
        return send_dedupe::duplicate(tables, claim, Some(uniq_key));
    }
    props.insert(property::CLUSTER, &tables.config.broker_cluster_name);
    if scan.prepared {
        if tables.runtime.reject_transaction_message() {
            return Err(refused(
                Refused::NoPermission,
                format!(
                    "the broker[{}] sending transaction message is forbidden",
                    tables.config.broker_ip1
                ),
            ));
        }
        reroute::park(&mut msg, props, Parking::Half);
    } else if scan.delay_level > 0 && scheduled_kind(msg.sys_flag) {
        // A delay level wins over timer properties, as in RocketMQ.
        let props = reroute::without_timer_request(props);
        let level = scan.delay_level.min(max_delay_level(tables.config));
        reroute::park(&mut msg, props, Parking::Delay { level });
    } else if scan.timer {
        match timer_parking(tables, &props) {
            Ok(Some(parking)) => reroute::park(&mut msg, props, parking),
            Ok(None) => msg.properties = reroute::without_timer_request(props).into_string(),
            Err(refusal) => return Err(refusal),
        }
    } else {
        msg.properties = props.into_string();
    }
    let kind = if scan.prepared {
        MessageKind::Transaction
    } else if scan.fifo || MessageKind::is_fifo_topic(topic_config) {
        MessageKind::Fifo
    } else if scan.delay_level > 0 || scan.timer {
        MessageKind::Delay
    } else {
        MessageKind::Normal
    };
    let dead_letter_group = scan.dead_letter.then(|| {
        msg.topic
            .trim_start_matches(topic::DLQ_GROUP_TOPIC_PREFIX)
            .to_owned()
    });
    let result = tables.storage.store.put_message(msg).await;
    tables.observed.count_put(1);
    tables
        .observed
        .metrics
        .record_put(&topic_config.topic_name, kind, &result);
    if result.is_ok() {
        let events = &tables.observed.metrics.events;
        if let Some(group) = dead_letter_group {
            events.dlq_moved(&group, &topic_config.topic_name);
        }
        if scan.prepared {
            events.half_stored(&topic_config.topic_name);
        }
    }
    stamp_append(request.received, &result);
    if let Some(claim) = claim {
        send_dedupe::record(claim, &result, queue_id);
    }
    stored(
        tables.config.store.max_message_size,
        result,
        queue_id,
        Some(uniq_key),
    )
}

/// `msgCheck`: permission, topic name, forbidden topics, auto-creation, queue id.
pub(crate) fn check_message(
    tables: SendTables<'_>,
    client: Client<'_>,
    to: &Destination,
) -> Result<TopicConfig, Refusal> {
    if !tables.is_master() {
        return Err(refused(
            Refused::NotAvailable,
            format!(
                "the broker[{}] is a slave: send to its master",
                tables.config.broker_name
            ),
        ));
    }
    if !tables.holds_lease() {
        // Fencing: a master that reached no controller for a lease may have been
        // replaced (docs/controller.md#fencing).
        return Err(refused(
            Refused::NotAvailable,
            format!(
                "the broker[{}] lost contact with its controllers: not taking sends",
                tables.config.broker_name
            ),
        ));
    }
    if !perm::is_writeable(tables.runtime.broker_permission()) {
        return Err(refused(
            Refused::NoPermission,
            format!(
                "the broker[{}] sending message is forbidden: the broker is read-only (brokerPermission={})",
                tables.config.broker_ip1,
                tables.runtime.broker_permission()
            ),
        ));
    }
    if let Err(reason) = topic::validate_topic(&to.topic) {
        return Err(refused(Refused::InvalidParameter, reason));
    }
    if topic::is_not_allowed_send_topic(&to.topic) {
        return Err(refused(
            Refused::NoPermission,
            format!("Sending message to topic[{}] is forbidden.", to.topic),
        ));
    }
    let config = match tables.storage.topics.get(&to.topic) {
        Some(config) => config,
        None => {
            let created = if let Some(group) =
                to.topic.strip_prefix(topic::RETRY_GROUP_TOPIC_PREFIX)
            {
                // A retry topic follows its group: created only with a group that exists
                // or may be created, so that the bounds on groups bound it too.
                if let Err(reason) =
                    find_or_create_group(tables.consumers, group, client.connection)
                {
                    return Err(refused(
                        Refused::GroupNotExist,
                        format!("subscription group not exist, {group}: {reason}"),
                    ));
                }
                Ok(tables
                    .storage
                    .topics
                    .get_or_create(&to.topic, 1, perm::READ | perm::WRITE, 0))
            } else if tables.runtime.auto_create_topic_enable()
                || to.default_topic != topic::AUTO_CREATE_TOPIC_KEY_TOPIC
            {
                let sys_flag = if to.unit_mode { 1 } else { 0 };
                create_topic_in_send(
                    &tables.storage.topics,
                    &tables.consumers.clients,
                    client.connection,
                    &to.topic,
                    &to.default_topic,
                    to.default_topic_queue_nums,
                    sys_flag,
                )
            } else {
                Err(NotCreated::NotAllowed(
                    "autoCreateTopicEnable is off".to_owned(),
                ))
            };
            match created {
                Ok(config) => config,
                Err(reason) => {
                    if matches!(reason, NotCreated::OverLimit(_)) {
                        tracing::warn!(topic = %to.topic, producer = %client.addr, %reason, "topic not created by a send");
                    }
                    return Err(refused(
                        Refused::TopicNotExist,
                        format!(
                            "topic[{}] not exist, apply first please! (producer {}: {reason})",
                            to.topic, client.addr
                        ),
                    ));
                }
            }
        }
    };
    if !perm::is_writeable(config.perm) {
        return Err(refused(
            Refused::NoPermission,
            format!("the topic[{}] sending message is forbidden", to.topic),
        ));
    }
    let valid = config.read_queue_nums.max(config.write_queue_nums);
    if to.queue_id >= valid {
        return Err(refused(
            Refused::InvalidParameter,
            format!(
                "request queueId[{}] is illegal, topic {} has {valid} queues, producer: {}",
                to.queue_id, to.topic, client.addr
            ),
        ));
    }
    Ok(config)
}

/// Retry-topic sends: an unknown group is refused; past the group's maximum the message
/// goes to the group's DLQ instead (docs/commands.md#sending, step 4).
fn handle_retry_and_dlq(
    tables: SendTables<'_>,
    client: Client<'_>,
    request: &mut SendRequest,
) -> Result<(), Refusal> {
    let Some(group) = request
        .to
        .topic
        .strip_prefix(topic::RETRY_GROUP_TOPIC_PREFIX)
    else {
        return Ok(());
    };
    let group = group.to_owned();
    let group_config =
        find_or_create_group(tables.consumers, &group, client.connection).map_err(|reason| {
            refused(
                Refused::GroupNotExist,
                format!("subscription group not exist, {group}: {reason}"),
            )
        })?;
    let mut max_reconsume = group_config.retry_max_times;
    if let Some(max) = request.max_reconsume_times {
        max_reconsume = max;
    }
    let reconsume = request.reconsume_times;
    let holds_locks = tables
        .consumers
        .locks
        .group_holds_locks(&group, std::time::Instant::now());
    if reconsume <= max_reconsume && !holds_locks {
        return Ok(());
    }
    let dlq = topic::dlq_topic(&group);
    tables.storage.topics.get_or_create(
        &dlq,
        topic::DLQ_NUMS_PER_GROUP,
        perm::READ | perm::WRITE,
        0,
    );
    tracing::info!(group = %group, reconsume, max_reconsume, "retry message sent to the dead-letter queue");
    request.to.topic = dlq;
    request.to.queue_id = 0;
    Ok(())
}

/// What the send path needs from a message's properties, read in one pass.
#[derive(Default)]
struct SendProperties {
    uniq_key: Option<String>,
    /// `TRAN_MSG=true`: a transaction's half message.
    prepared: bool,
    /// `DELAY`, 0 when absent or not a number.
    delay_level: i32,
    /// One of the timer properties is set.
    timer: bool,
    /// The message goes to a DLQ (its retries are exhausted).
    dead_letter: bool,
    /// `__SHARDINGKEY` is set: a FIFO message (a gRPC client's message group).
    fifo: bool,
}

impl SendProperties {
    fn visit(&mut self, k: &str, v: &str) {
        match k {
            property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX => self.uniq_key = Some(v.to_owned()),
            property::TRANSACTION_PREPARED => self.prepared = v.eq_ignore_ascii_case("true"),
            property::DELAY_TIME_LEVEL => self.delay_level = v.trim().parse().unwrap_or(0),
            property::TIMER_DELIVER_MS | property::TIMER_DELAY_SEC | property::TIMER_DELAY_MS => {
                self.timer = true
            }
            property::SHARDING_KEY => self.fifo = true,
            _ => {}
        }
    }
}

/// The number of delay levels (`messageDelayLevel`).
pub(crate) fn max_delay_level(config: &BrokerConfig) -> i32 {
    config
        .store
        .delay_levels()
        .map(|l| l.len() as i32)
        .unwrap_or(18)
}

/// Timer messages due within this much of now are delivered at once.
const TIMER_PRECISION_MS: i64 = 1000;

/// Where a timer message waits, `None` when it is due within the timer's precision
/// (it is then stored at once), or MESSAGE_ILLEGAL, or SYSTEM_BUSY when the pending
/// timers are at their limit.
fn timer_parking(tables: SendTables<'_>, props: &Properties) -> Result<Option<Parking>, Refusal> {
    let illegal = |remark: String| refused(Refused::MessageIllegal, remark);
    if !tables.config.timer_wheel_enable {
        return Err(illegal(
            "timer messages are disabled on this broker (timerWheelEnable=false)".into(),
        ));
    }
    let now = vostok_remoting::support::time::now_millis();
    let at = reroute::timer_due_at(props, now).map_err(illegal)?;
    let max = tables.config.timer_max_delay.as_millis() as i64;
    let delay = at.saturating_sub(now);
    if delay > max {
        return Err(illegal(format!(
            "timer message delay {delay} ms exceeds the maximum of {max} ms"
        )));
    }
    if delay <= TIMER_PRECISION_MS / 10 {
        return Ok(None);
    }
    // Bounded like every table that grows with load (docs/limits.md).
    let limit = pending_timer_limit(tables.memory.soft_limit());
    if tables.deferred.timers.pending() >= limit {
        return Err(refused(
            Refused::Busy,
            format!("[TIMER]timer message is under flow control, max num limit is {limit}"),
        ));
    }
    Ok(Some(Parking::Timer { at }))
}

/// Delays apply to ordinary and committed messages only (docs/flows.md#delay-levels).
fn scheduled_kind(sys_flag: i32) -> bool {
    let kind = sysflag::transaction_type(sys_flag);
    kind == sysflag::TRANSACTION_NOT_TYPE || kind == sysflag::TRANSACTION_COMMIT_TYPE
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::testing::{broker, peer};
    use super::*;

    pub(crate) fn to(topic: &str) -> SendRequest {
        SendRequest {
            to: Destination {
                topic: topic.to_owned(),
                default_topic: Cow::Borrowed(topic::AUTO_CREATE_TOPIC_KEY_TOPIC),
                default_topic_queue_nums: 4,
                queue_id: 0,
                unit_mode: false,
            },
            sys_flag: 0,
            born_timestamp: 1,
            flag: 0,
            properties: String::new(),
            body: Bytes::from_static(b"hello"),
            reconsume_times: 0,
            max_reconsume_times: None,
            received: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_send_is_stored_in_its_queue_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let first = send(SendTables::of(b), peer(), to("ops-send"))
            .await
            .unwrap();
        let second = send(SendTables::of(b), peer(), to("ops-send"))
            .await
            .unwrap();
        assert_eq!(first.ack, super::super::stored::Ack::Stored);
        assert_eq!((first.queue_id, first.queue_offset), (0, 0));
        assert_eq!((second.queue_id, second.queue_offset), (0, 1));
        assert!(
            first.uniq_key.is_some(),
            "a key is given when none was sent"
        );
        assert_ne!(first.msg_id, second.msg_id);
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_send_is_refused_in_words_every_front_end_maps() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let kind = |r: Result<Stored, Refusal>| r.err().map(|r| r.kind);
        let mut big = to("ops-big");
        big.body = Bytes::from(vec![0u8; b.config.store.max_message_size + 1]);
        assert_eq!(
            kind(send(SendTables::of(b), peer(), big).await),
            Some(Refused::MessageIllegal)
        );
        assert_eq!(
            kind(send(SendTables::of(b), peer(), to("bad topic!")).await),
            Some(Refused::InvalidParameter)
        );
        assert_eq!(
            kind(send(SendTables::of(b), peer(), to(topic::SCHEDULE_TOPIC)).await),
            Some(Refused::NoPermission)
        );
        let mut past = to("ops-queue");
        past.to.queue_id = 99;
        assert_eq!(
            kind(send(SendTables::of(b), peer(), past).await),
            Some(Refused::InvalidParameter)
        );
        handle.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_retry_past_its_limit_goes_to_the_dead_letter_queue() {
        let dir = tempfile::tempdir().unwrap();
        let handle = broker(dir.path()).await;
        let b = handle.broker();
        let mut retry = to(&format!("{}ops-group", topic::RETRY_GROUP_TOPIC_PREFIX));
        retry.reconsume_times = 3;
        retry.max_reconsume_times = Some(1);
        let stored = send(SendTables::of(b), peer(), retry).await.unwrap();
        assert_eq!(stored.queue_id, 0);
        let (_, at) =
            vostok_remoting::protocol::message::id::decode_offset_msg_id(&stored.msg_id).unwrap();
        let record = b.storage.store.look_message_by_offset(at).unwrap();
        assert_eq!(
            record.topic,
            topic::dlq_topic("ops-group"),
            "stored in the DLQ"
        );
        handle.shutdown().await;
    }
}
