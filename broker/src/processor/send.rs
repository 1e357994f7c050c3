//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (docs/commands.md#sending).
//!
//! Checks in RocketMQ's order (broker and topic permission, topic name, forbidden system
//! topics, auto-creation, queue id, retry/DLQ rules, sizes), then the message is turned
//! into a [`MessageInner`]: delayed messages are parked in `SCHEDULE_TOPIC_XXXX`, timer
//! messages in the timer topic, prepared transaction messages in the half topic (see
//! `reroute`). The property string is parsed once: normalised (as Java's decoder
//! would read it) while the fields the send path needs are picked out.

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::header::SendMessageRequestHeader;
use vostok_remoting::protocol::message::property::{self, Properties};
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::protocol::{response_code, version};
use vostok_remoting::support::latency_trace;
use vostok_remoting::{Channel, RemotingCommand};
use vostok_store::MessageInner;

use super::error;
use super::put_response::{choose_queue, put_response, stamp_append};
use super::send_dedupe;
use crate::reroute::{self, Parking};
use crate::state::auto_create::NotCreated;
use crate::state::metrics::MessageKind;
use crate::state::Broker;

pub(crate) async fn send_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
    let received = latency_trace::enabled().then(latency_trace::now_micros);
    let header = match SendMessageRequestHeader::decode(request.code, &request.ext_fields) {
        Ok(h) => h,
        Err(e) => return super::header_error(&request, e),
    };
    // Bounded admission: a flood of sends meets SYSTEM_BUSY, not an unbounded queue.
    let Ok(_permit) = broker.send_permits.try_acquire() else {
        return error(
            response_code::SYSTEM_BUSY,
            "[OVERLOAD]system busy, start flow control for a while",
        );
    };
    if broker.store.is_os_page_cache_busy() {
        return error(
            response_code::SYSTEM_BUSY,
            "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
        );
    }
    // Near the memory ceiling producers wait, rather than memory growing to it.
    if broker.memory.is_pressed() {
        return error(
            response_code::SYSTEM_BUSY,
            "[MEMORY]broker busy: memory nearly at its ceiling, start flow control for a while",
        );
    }
    let mut header = header;
    let topic_config = match check_message(broker, channel, &header) {
        Ok(config) => config,
        Err(response) => return response,
    };
    if header.is_batch() {
        return super::send_batch::send_batch(
            broker,
            channel,
            &request,
            &header,
            &topic_config,
            received,
        )
        .await;
    }
    let dead_letter = match handle_retry_and_dlq(broker, channel, &request, &mut header) {
        Ok(()) => topic::is_dlq_topic(&header.topic),
        Err(response) => return response,
    };
    let max = broker.config.store.max_message_size;
    if request.body.len() > max {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "the message body size {} over max value, MAX: {max}",
                request.body.len()
            ),
        );
    }
    let raw = header.properties.take().unwrap_or_default();
    if raw.len() > property::MAX_PROPERTIES_LEN {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "the message properties size {} over max value, MAX: {}",
                raw.len(),
                property::MAX_PROPERTIES_LEN
            ),
        );
    }
    // The one parse of the property string: normalised, and the fields the send path
    // needs picked out on the way.
    let mut scan = SendProperties {
        dead_letter,
        ..SendProperties::default()
    };
    let mut props = Properties::decode_owned_with(raw, |k, v| scan.visit(k, v));
    let queue_id = choose_queue(header.queue_id, &topic_config);
    let mut msg = MessageInner {
        topic: std::mem::take(&mut header.topic),
        queue_id,
        flag: header.flag,
        body: request.body.clone(),
        properties: String::new(),
        tags_code: 0,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        born_host: channel.peer_addr(),
        store_host: broker.broker_addr,
        reconsume_times: header.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
    };
    if topic_config.topic_filter_type == vostok_remoting::protocol::body::TopicFilterType::MultiTag
    {
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
            let key = broker.uniq_ids.next_id();
            props.insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, &key);
            key
        }
    };
    // A retry of a message stored within the topic's duplication window gets the
    // original answer; a retry racing the first attempt waits for its outcome.
    let claim = match client_key {
        true => send_dedupe::claim(broker, &topic_config, &msg.topic, &[&uniq_key]).await,
        false => None,
    };
    if let Some(claim) = claim.as_ref().filter(|c| c.all_duplicates()) {
        return send_dedupe::duplicate_response(broker, claim, Some(uniq_key));
    }
    props.insert(property::CLUSTER, &broker.config.broker_cluster_name);
    if scan.prepared {
        if broker.runtime.reject_transaction_message() {
            return error(
                response_code::NO_PERMISSION,
                format!(
                    "the broker[{}] sending transaction message is forbidden",
                    broker.config.broker_ip1
                ),
            );
        }
        reroute::park(&mut msg, props, Parking::Half);
    } else if scan.delay_level > 0 && scheduled_kind(msg.sys_flag) {
        // A delay level wins over timer properties, as in RocketMQ.
        let props = reroute::without_timer_request(props);
        let level = scan.delay_level.min(max_delay_level(broker));
        reroute::park(&mut msg, props, Parking::Delay { level });
    } else if scan.timer {
        match timer_parking(broker, &props) {
            Ok(Some(parking)) => reroute::park(&mut msg, props, parking),
            Ok(None) => msg.properties = reroute::without_timer_request(props).into_string(),
            Err(response) => return response,
        }
    } else {
        msg.properties = props.into_string();
    }
    let kind = if scan.prepared {
        MessageKind::Transaction
    } else if scan.fifo || MessageKind::is_fifo_topic(&topic_config) {
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
    let result = broker.store.put_message(msg).await;
    broker.count_put(1);
    broker
        .metrics
        .record_put(&topic_config.topic_name, kind, &result);
    if result.is_ok() {
        let events = &broker.metrics.events;
        if let Some(group) = dead_letter_group {
            events.dlq_moved(&group, &topic_config.topic_name);
        }
        if scan.prepared {
            events.half_stored(&topic_config.topic_name);
        }
    }
    stamp_append(received, &result);
    if let Some(claim) = claim {
        send_dedupe::record(claim, &result, queue_id);
    }
    put_response(broker, result, queue_id, Some(uniq_key))
}

/// `msgCheck`: permission, topic name, forbidden topics, auto-creation, queue id.
pub(super) fn check_message(
    broker: &Broker,
    channel: &Channel,
    header: &SendMessageRequestHeader,
) -> Result<TopicConfig, RemotingCommand> {
    if !broker.is_master() {
        return Err(error(
            response_code::SERVICE_NOT_AVAILABLE,
            format!(
                "the broker[{}] is a slave: send to its master",
                broker.config.broker_name
            ),
        ));
    }
    if !broker.holds_lease() {
        // Fencing: a master that reached no controller for a lease may have been
        // replaced (docs/controller.md#fencing).
        return Err(error(
            response_code::SERVICE_NOT_AVAILABLE,
            format!(
                "the broker[{}] lost contact with its controllers: not taking sends",
                broker.config.broker_name
            ),
        ));
    }
    if !perm::is_writeable(broker.runtime.broker_permission()) {
        return Err(error(
            response_code::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden: the broker is read-only (brokerPermission={})",
                broker.config.broker_ip1,
                broker.runtime.broker_permission()
            ),
        ));
    }
    if let Err(reason) = topic::validate_topic(&header.topic) {
        return Err(error(response_code::INVALID_PARAMETER, reason));
    }
    if topic::is_not_allowed_send_topic(&header.topic) {
        return Err(error(
            response_code::NO_PERMISSION,
            format!("Sending message to topic[{}] is forbidden.", header.topic),
        ));
    }
    let config = match broker.topics.get(&header.topic) {
        Some(config) => config,
        None => {
            let created =
                if let Some(group) = header.topic.strip_prefix(topic::RETRY_GROUP_TOPIC_PREFIX) {
                    // A retry topic follows its group: created only with a group that exists
                    // or may be created, so that the bounds on groups bound it too.
                    if let Err(reason) = broker.find_or_create_group(group, Some(channel)) {
                        return Err(error(
                            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                            format!("subscription group not exist, {group}: {reason}"),
                        ));
                    }
                    Ok(broker
                        .topics
                        .get_or_create(&header.topic, 1, perm::READ | perm::WRITE, 0))
                } else if broker.runtime.auto_create_topic_enable()
                    || header.default_topic != topic::AUTO_CREATE_TOPIC_KEY_TOPIC
                {
                    let sys_flag = if header.unit_mode.unwrap_or(false) {
                        1
                    } else {
                        0
                    };
                    broker.create_topic_in_send(
                        Some(channel),
                        &header.topic,
                        &header.default_topic,
                        header.default_topic_queue_nums,
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
                        tracing::warn!(topic = %header.topic, producer = %channel.peer_addr(), %reason, "topic not created by a send");
                    }
                    return Err(error(
                        response_code::TOPIC_NOT_EXIST,
                        format!(
                            "topic[{}] not exist, apply first please! (producer {}: {reason})",
                            header.topic,
                            channel.peer_addr()
                        ),
                    ));
                }
            }
        }
    };
    if !perm::is_writeable(config.perm) {
        return Err(error(
            response_code::NO_PERMISSION,
            format!("the topic[{}] sending message is forbidden", header.topic),
        ));
    }
    let valid = config.read_queue_nums.max(config.write_queue_nums);
    if header.queue_id >= valid {
        return Err(error(
            response_code::INVALID_PARAMETER,
            format!(
                "request queueId[{}] is illegal, topic {} has {valid} queues, producer: {}",
                header.queue_id,
                header.topic,
                channel.peer_addr()
            ),
        ));
    }
    Ok(config)
}

/// Retry-topic sends: an unknown group is refused; past the group's maximum the message
/// goes to the group's DLQ instead (docs/commands.md#sending, step 4).
fn handle_retry_and_dlq(
    broker: &Broker,
    channel: &Channel,
    request: &RemotingCommand,
    header: &mut SendMessageRequestHeader,
) -> Result<(), RemotingCommand> {
    let Some(group) = header.topic.strip_prefix(topic::RETRY_GROUP_TOPIC_PREFIX) else {
        return Ok(());
    };
    let group = group.to_owned();
    let group_config = broker
        .find_or_create_group(&group, Some(channel))
        .map_err(|reason| {
            error(
                response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("subscription group not exist, {group}: {reason}"),
            )
        })?;
    let mut max_reconsume = group_config.retry_max_times;
    if request.version >= version::V3_4_9 {
        if let Some(max) = header.max_reconsume_times {
            max_reconsume = max;
        }
    }
    let reconsume = header.reconsume_times.unwrap_or(0);
    let holds_locks = broker
        .locks
        .group_holds_locks(&group, std::time::Instant::now());
    if reconsume <= max_reconsume && !holds_locks {
        return Ok(());
    }
    let dlq = topic::dlq_topic(&group);
    broker
        .topics
        .get_or_create(&dlq, topic::DLQ_NUMS_PER_GROUP, perm::READ | perm::WRITE, 0);
    tracing::info!(group = %group, reconsume, max_reconsume, "retry message sent to the dead-letter queue");
    header.topic = dlq;
    header.queue_id = 0;
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
pub(super) fn max_delay_level(broker: &Broker) -> i32 {
    broker
        .config
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
fn timer_parking(broker: &Broker, props: &Properties) -> Result<Option<Parking>, RemotingCommand> {
    let illegal =
        |remark: String| RemotingCommand::response(response_code::MESSAGE_ILLEGAL, remark);
    if !broker.config.timer_wheel_enable {
        return Err(illegal(
            "timer messages are disabled on this broker (timerWheelEnable=false)".into(),
        ));
    }
    let now = vostok_remoting::support::time::now_millis();
    let at = reroute::timer_due_at(props, now).map_err(illegal)?;
    let max = broker.config.timer_max_delay.as_millis() as i64;
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
    let limit = broker.max_pending_timers();
    if broker.timers.pending() >= limit {
        return Err(RemotingCommand::response(
            response_code::SYSTEM_BUSY,
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
