//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (PROTOCOL.md 3.1).
//!
//! Checks in RocketMQ's order (broker and topic permission, topic name, forbidden system
//! topics, auto-creation, queue id, retry/DLQ rules, sizes), then the message is turned
//! into a [`MessageInner`]: delayed messages go to `SCHEDULE_TOPIC_XXXX`, timer messages
//! to the timer topic, prepared transaction messages to the half topic.

use std::net::SocketAddr;

use bytes::Bytes;
use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::{batch, sysflag};
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::protocol::{response_code, version};
use vostok_remoting::{Channel, RemotingCommand};
use vostok_store::{MessageInner, PutMessageResult, PutMessageStatus};

use super::error;
use crate::broker::Broker;

pub(crate) async fn send_message(
    broker: &Broker,
    channel: &Channel,
    request: RemotingCommand,
) -> RemotingCommand {
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
    let mut header = header;
    let topic_config = match check_message(broker, channel, &header) {
        Ok(config) => config,
        Err(response) => return response,
    };
    if header.is_batch() {
        return send_batch(broker, channel, &request, &header, &topic_config).await;
    }
    if let Err(response) = handle_retry_and_dlq(broker, &request, &mut header) {
        return response;
    }
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
    let properties = header.properties.take().unwrap_or_default();
    if properties.len() > property::MAX_PROPERTIES_LEN {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "the message properties size {} over max value, MAX: {}",
                properties.len(),
                property::MAX_PROPERTIES_LEN
            ),
        );
    }
    let queue_id = choose_queue(header.queue_id, &topic_config);
    let mut msg = MessageInner {
        topic: std::mem::take(&mut header.topic),
        queue_id,
        flag: header.flag,
        body: request.body.clone(),
        properties,
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
    // One pass over the properties for everything the send path looks at. (The
    // consume-queue tag code is the store's business: it derives it from the record.)
    let scan = SendProperties::scan(&msg.properties);
    let uniq_key = match scan.uniq_key {
        Some(key) => key,
        None => {
            let key = broker.uniq_ids.next_id();
            push_pair(
                &mut msg.properties,
                property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                &key,
            );
            key
        }
    };
    push_pair(
        &mut msg.properties,
        property::CLUSTER,
        &broker.config.broker_cluster_name,
    );
    if scan.prepared {
        if broker.config.reject_transaction_message {
            return error(
                response_code::NO_PERMISSION,
                format!(
                    "the broker[{}] sending transaction message is forbidden",
                    broker.config.broker_ip1
                ),
            );
        }
        crate::transaction::to_half_message(&mut msg);
    } else if scan.timer {
        if let Err(response) = crate::timer::to_timer_message(broker, &mut msg) {
            return response;
        }
    } else if scan.delay_level > 0 && scheduled_kind(msg.sys_flag) {
        crate::schedule::to_schedule_message(broker, &mut msg, scan.delay_level);
    }
    let result = broker.store.put_message(msg).await;
    broker.count_put(1);
    put_response(broker, result, queue_id, Some(uniq_key))
}

/// `msgCheck`: permission, topic name, forbidden topics, auto-creation, queue id.
fn check_message(
    broker: &Broker,
    channel: &Channel,
    header: &SendMessageRequestHeader,
) -> Result<TopicConfig, RemotingCommand> {
    if !broker.config.is_master() {
        return Err(error(
            response_code::SERVICE_NOT_AVAILABLE,
            format!(
                "the broker[{}] is a slave: send to its master",
                broker.config.broker_name
            ),
        ));
    }
    if !perm::is_writeable(broker.config.broker_permission) {
        return Err(error(
            response_code::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden",
                broker.config.broker_ip1
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
            let created = if topic::is_retry_topic(&header.topic) {
                Some(
                    broker
                        .topics
                        .get_or_create(&header.topic, 1, perm::READ | perm::WRITE, 0),
                )
            } else if broker.config.auto_create_topic_enable
                || header.default_topic != topic::AUTO_CREATE_TOPIC_KEY_TOPIC
            {
                let sys_flag = if header.unit_mode.unwrap_or(false) {
                    1
                } else {
                    0
                };
                broker.topics.create_in_send(
                    &header.topic,
                    &header.default_topic,
                    header.default_topic_queue_nums,
                    sys_flag,
                )
            } else {
                None
            };
            match created {
                Some(config) => config,
                None => {
                    return Err(error(
                        response_code::TOPIC_NOT_EXIST,
                        format!(
                            "topic[{}] not exist, apply first please! (producer {})",
                            header.topic,
                            channel.peer_addr()
                        ),
                    ))
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

/// A negative queue id means "any writable queue".
fn choose_queue(requested: i32, config: &TopicConfig) -> i32 {
    if requested >= 0 {
        requested
    } else {
        rand::random_range(0..config.write_queue_nums.max(1))
    }
}

/// Retry-topic sends: an unknown group is refused; past the group's maximum the message
/// goes to the group's DLQ instead (PROTOCOL.md 3.1 step 4).
fn handle_retry_and_dlq(
    broker: &Broker,
    request: &RemotingCommand,
    header: &mut SendMessageRequestHeader,
) -> Result<(), RemotingCommand> {
    let Some(group) = header.topic.strip_prefix(topic::RETRY_GROUP_TOPIC_PREFIX) else {
        return Ok(());
    };
    let group = group.to_owned();
    let Some(group_config) = broker.subscriptions.find_or_create(&group) else {
        return Err(error(
            response_code::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {group}"),
        ));
    };
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
        .get_or_create(&dlq, topic::DLQ_NUMS_PER_GROUP, perm::WRITE, 0);
    tracing::info!(group = %group, reconsume, max_reconsume, "retry message sent to the dead-letter queue");
    header.topic = dlq;
    header.queue_id = 0;
    // A dead letter is never scheduled.
    let props = header.properties.take().unwrap_or_default();
    let mut rebuilt = String::with_capacity(props.len() + 8);
    for (k, v) in property::pairs(&props) {
        if k != property::DELAY_TIME_LEVEL {
            push_pair(&mut rebuilt, k, v);
        }
    }
    header.properties = Some(rebuilt);
    Ok(())
}

/// Adds a UNIQ_KEY when the producer sent none; returns the message's key.
pub(crate) fn ensure_uniq_key(broker: &Broker, properties: &mut String) -> String {
    match property::find(properties, property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX) {
        Some(key) => key.to_owned(),
        None => {
            let key = broker.uniq_ids.next_id();
            push_pair(properties, property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, &key);
            key
        }
    }
}

/// What the send path needs from a message's properties, read in one pass.
struct SendProperties {
    uniq_key: Option<String>,
    /// `TRAN_MSG=true`: a transaction's half message.
    prepared: bool,
    /// `DELAY`, 0 when absent or not a number.
    delay_level: i32,
    /// One of the timer properties is set (PROTOCOL.md 3.1 step 9).
    timer: bool,
}

impl SendProperties {
    fn scan(properties: &str) -> Self {
        let mut scan = SendProperties {
            uniq_key: None,
            prepared: false,
            delay_level: 0,
            timer: false,
        };
        for (k, v) in property::pairs(properties) {
            match k {
                property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX => scan.uniq_key = Some(v.to_owned()),
                property::TRANSACTION_PREPARED => scan.prepared = v.eq_ignore_ascii_case("true"),
                property::DELAY_TIME_LEVEL => scan.delay_level = v.trim().parse().unwrap_or(0),
                property::TIMER_DELIVER_MS
                | property::TIMER_DELAY_SEC
                | property::TIMER_DELAY_MS => scan.timer = true,
                _ => {}
            }
        }
        scan
    }
}

/// Delays apply to ordinary and committed messages only (PROTOCOL.md 7.2).
fn scheduled_kind(sys_flag: i32) -> bool {
    let kind = sysflag::transaction_type(sys_flag);
    kind == sysflag::TRANSACTION_NOT_TYPE || kind == sysflag::TRANSACTION_COMMIT_TYPE
}

/// True when the store kept the message, even if flushing or replication timed out.
pub(crate) fn is_stored(status: PutMessageStatus) -> bool {
    matches!(
        status,
        PutMessageStatus::PutOk
            | PutMessageStatus::FlushDiskTimeout
            | PutMessageStatus::FlushSlaveTimeout
            | PutMessageStatus::SlaveNotAvailable
    )
}

/// The send response for a put result.
pub(crate) fn put_response(
    broker: &Broker,
    result: PutMessageResult,
    queue_id: i32,
    uniq_key: Option<String>,
) -> RemotingCommand {
    let code = match result.status {
        PutMessageStatus::PutOk => response_code::SUCCESS,
        PutMessageStatus::FlushDiskTimeout => response_code::FLUSH_DISK_TIMEOUT,
        PutMessageStatus::FlushSlaveTimeout => response_code::FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus::SlaveNotAvailable => response_code::SLAVE_NOT_AVAILABLE,
        PutMessageStatus::ServiceNotAvailable => {
            return error(
                response_code::SERVICE_NOT_AVAILABLE,
                "service not available now. It may be caused by one of the following reasons: \
                 the broker's disk is full, messages are put to the slave, message store has been shut down, etc.",
            )
        }
        PutMessageStatus::DiskFull => {
            // Retriable for clients (they try another broker); nothing was stored.
            return error(
                response_code::SERVICE_NOT_AVAILABLE,
                "service not available now: the broker's disk is full (no room for the next \
                 commitlog file, or usage above diskSpaceWarningLevelRatio); sends are refused \
                 until space is freed, and nothing was stored",
            )
        }
        PutMessageStatus::CreateMappedFileFailed => {
            return error(
                response_code::SYSTEM_ERROR,
                "create mapped file failed, server is busy or broken.",
            )
        }
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => {
            return error(
                response_code::MESSAGE_ILLEGAL,
                format!(
                    "the message is illegal, maybe msg body or properties length not matched. \
                     msg body length limit {}, msg properties length limit 32k.",
                    broker.config.store.max_message_size
                ),
            )
        }
        PutMessageStatus::OsPageCacheBusy => {
            return error(
                response_code::SYSTEM_BUSY,
                "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
            )
        }
        PutMessageStatus::UnknownError => return error(response_code::SYSTEM_ERROR, "UNKNOWN_ERROR"),
    };
    let Some(append) = result.append else {
        return error(
            response_code::SYSTEM_ERROR,
            "store returned no append result",
        );
    };
    let header = SendMessageResponseHeader {
        msg_id: append.msg_id,
        queue_id,
        queue_offset: append.queue_offset,
        transaction_id: uniq_key,
        batch_uniq_id: None,
        msg_region: Some(broker.config.region_id.clone()),
        trace_on: Some(broker.config.trace_on.to_string()),
    };
    RemotingCommand::response(code, None).with_header(&header)
}

async fn send_batch(
    broker: &Broker,
    channel: &Channel,
    request: &RemotingCommand,
    header: &SendMessageRequestHeader,
    topic_config: &TopicConfig,
) -> RemotingCommand {
    if header.topic.len() > topic::TOPIC_MAX_LENGTH {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!("message topic length too long {}", header.topic.len()),
        );
    }
    if topic::is_retry_topic(&header.topic) {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "batch request does not support retry group {}",
                header.topic
            ),
        );
    }
    if request.body.len() > broker.config.store.max_message_size {
        return error(
            response_code::MESSAGE_ILLEGAL,
            format!(
                "the batch size {} over max value, MAX: {}",
                request.body.len(),
                broker.config.store.max_message_size
            ),
        );
    }
    let entries = match batch::decode(&request.body) {
        Ok(entries) if !entries.is_empty() => entries,
        Ok(_) => return error(response_code::MESSAGE_ILLEGAL, "empty batch"),
        Err(e) => {
            return error(
                response_code::MESSAGE_ILLEGAL,
                format!("bad batch body: {e}"),
            )
        }
    };
    let queue_id = choose_queue(header.queue_id, topic_config);
    let born_host: SocketAddr = channel.peer_addr();
    let mut sys_flag = header.sys_flag;
    if topic_config.topic_filter_type == vostok_remoting::protocol::body::TopicFilterType::MultiTag
    {
        sys_flag |= sysflag::MULTI_TAGS_FLAG;
    }
    let mut msgs = Vec::with_capacity(entries.len());
    let mut uniq_keys = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.properties.len() > property::MAX_PROPERTIES_LEN {
            return error(
                response_code::MESSAGE_ILLEGAL,
                "batch message properties too long",
            );
        }
        let mut properties = entry.properties;
        if property::find(&properties, property::DELAY_TIME_LEVEL)
            .and_then(|v| v.parse::<i32>().ok())
            .is_some_and(|l| l > 0)
        {
            return error(
                response_code::MESSAGE_ILLEGAL,
                "batch messages cannot be delayed",
            );
        }
        uniq_keys.push(ensure_uniq_key(broker, &mut properties));
        msgs.push(MessageInner {
            topic: header.topic.clone(),
            queue_id,
            flag: entry.flag,
            body: Bytes::clone(&entry.body),
            properties,
            tags_code: 0,
            sys_flag,
            born_timestamp: header.born_timestamp,
            born_host,
            store_host: broker.broker_addr,
            reconsume_times: header.reconsume_times.unwrap_or(0),
            prepared_transaction_offset: 0,
        });
    }
    let n = msgs.len() as u64;
    let result = broker.store.put_messages(msgs).await;
    broker.count_put(n);
    put_response(broker, result, queue_id, None)
}
