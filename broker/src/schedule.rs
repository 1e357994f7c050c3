//! Delay levels (`ScheduleMessageService`, PROTOCOL.md 7.2).
//!
//! A message with `DELAY=n` is stored in `SCHEDULE_TOPIC_XXXX` queue `n-1` with its real
//! topic and queue in properties. One task per level walks its queue in order (every
//! message of a level has the same delay, so store order is delivery order) and, when
//! the head is due, stores a copy in the real topic and advances the level's offset.
//!
//! Progress is kept in `config/delayOffset.json` (RocketMQ's layout). The file may lag
//! behind after a crash; at start each level re-checks the messages after its saved
//! offset against the message index (real topic + UNIQ_KEY, stored after the scheduled
//! copy), so a restart neither loses nor duplicates a due message.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tracing::{debug, info, warn};
use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::RecordView;
use vostok_remoting::protocol::topic::SCHEDULE_TOPIC;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;
use vostok_store::{GetMessageStatus, MessageInner};

use crate::broker::Broker;

/// How often progress is written (`flushDelayOffsetInterval`).
const FLUSH_INTERVAL: Duration = Duration::from_secs(10);
/// Pause after a failed delivery (`DELAY_FOR_A_PERIOD`).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);
/// Pause when a level's queue is empty.
const IDLE_POLL: Duration = Duration::from_millis(100);

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DelayOffsets {
    #[serde(default)]
    offset_table: BTreeMap<i32, i64>,
}

/// Per-level progress, shared by the level tasks and the persister.
pub(crate) struct ScheduleState {
    file: ConfigFile,
    offsets: Mutex<BTreeMap<i32, i64>>,
}

impl ScheduleState {
    pub(crate) fn load(config: &crate::config::BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("delayOffset.json"));
        let stored: DelayOffsets = file
            .load(|bytes| {
                vostok_remoting::protocol::json::from_slice("delayOffset.json", bytes).ok()
            })
            .unwrap_or_default();
        ScheduleState {
            file,
            offsets: Mutex::new(stored.offset_table),
        }
    }

    fn get(&self, level: i32) -> i64 {
        *self.offsets.locked().get(&level).unwrap_or(&0)
    }

    fn set(&self, level: i32, offset: i64) {
        self.offsets.locked().insert(level, offset);
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let offsets = self.offsets.locked().clone();
        serde_json::to_vec_pretty(&DelayOffsets {
            offset_table: offsets,
        })
        .unwrap_or_default()
    }

    pub(crate) fn persist(&self) {
        if let Err(e) = self.file.persist_with(|| self.encode()) {
            warn!(file = %self.file.path().display(), error = %e, "cannot persist delay offsets");
        }
    }
}

/// Rewrites a message with `DELAY=level` for the schedule topic (`transformDelayLevelMessage`).
pub(crate) fn to_schedule_message(broker: &Broker, msg: &mut MessageInner, level: i32) {
    let max_level = broker
        .config
        .store
        .delay_levels()
        .map(|l| l.len() as i32)
        .unwrap_or(18);
    let level = level.min(max_level).max(1);
    let mut props = std::mem::take(&mut msg.properties);
    if property::find(&props, property::DELAY_TIME_LEVEL) != Some(&level.to_string()) {
        props = props_without(&props, &[property::DELAY_TIME_LEVEL]);
        push_pair(&mut props, property::DELAY_TIME_LEVEL, &level.to_string());
    }
    push_pair(&mut props, property::REAL_TOPIC, &msg.topic);
    push_pair(
        &mut props,
        property::REAL_QUEUE_ID,
        &msg.queue_id.to_string(),
    );
    msg.properties = props;
    msg.topic = SCHEDULE_TOPIC.to_owned();
    msg.queue_id = level - 1;
}

/// The property string without `names`.
pub(crate) fn props_without(props: &str, names: &[&str]) -> String {
    let mut out = String::with_capacity(props.len());
    for (k, v) in property::pairs(props) {
        if !names.contains(&k) {
            push_pair(&mut out, k, v);
        }
    }
    out
}

/// Starts one delivery task per level and the progress persister.
pub(crate) fn spawn(broker: &Arc<Broker>) {
    let Ok(levels) = broker.config.store.delay_levels() else {
        return;
    };
    if !broker.config.is_master() {
        return;
    }
    let state = broker.schedule.clone();
    for (i, delay) in levels.into_iter().enumerate() {
        let level = i as i32 + 1;
        let b = broker.clone();
        let s = state.clone();
        broker
            .tasks
            .spawn(async move { deliver_level(b, s, level, delay).await });
    }
    let b = broker.clone();
    broker.tasks.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(FLUSH_INTERVAL) => state.persist(),
                _ = b.shutdown.cancelled() => break,
            }
        }
    });
}

enum Step {
    /// Delivered messages up to this offset (exclusive).
    Advanced(i64),
    /// The head is due at this wall-clock time.
    NotDue(i64),
    Idle,
    Failed,
}

async fn deliver_level(
    broker: Arc<Broker>,
    state: Arc<ScheduleState>,
    level: i32,
    delay: Duration,
) {
    // Start after 1 s, as RocketMQ does, and skip what a crash left delivered but unsaved.
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        _ = broker.shutdown.cancelled() => return,
    }
    let resumed = skip_already_delivered(&broker, level, state.get(level)).await;
    state.set(level, resumed);
    loop {
        let offset = state.get(level);
        let step = deliver_batch(&broker, level, delay, offset).await;
        let pause = match step {
            Step::Advanced(next) => {
                state.set(level, next);
                Duration::ZERO
            }
            Step::NotDue(at) => Duration::from_millis((at - now_millis()).clamp(1, 1000) as u64),
            Step::Idle => IDLE_POLL,
            Step::Failed => RETRY_AFTER_FAILURE,
        };
        if pause.is_zero() {
            if broker.shutdown.is_cancelled() {
                break;
            }
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = broker.shutdown.cancelled() => break,
        }
    }
}

async fn deliver_batch(broker: &Broker, level: i32, delay: Duration, offset: i64) -> Step {
    let queue_id = level - 1;
    let result = broker.store.get_message(
        "SCHEDULE",
        SCHEDULE_TOPIC,
        queue_id,
        offset,
        32,
        i32::MAX,
        None,
    );
    match result.status {
        GetMessageStatus::Found => {}
        GetMessageStatus::OffsetTooSmall | GetMessageStatus::OffsetOverflowBadly => {
            // Retention removed data, or the file points past the queue: follow the store.
            return Step::Advanced(result.next_begin_offset);
        }
        _ => return Step::Idle,
    }
    let now = now_millis();
    let mut next = offset;
    for record in &result.messages {
        let Ok(view) = RecordView::parse_message(record, false) else {
            warn!(level, offset = next, "unreadable schedule record skipped");
            next += 1;
            continue;
        };
        let due = view.store_timestamp() + delay.as_millis() as i64;
        if due > now {
            return if next > offset {
                Step::Advanced(next)
            } else {
                Step::NotDue(due)
            };
        }
        let Some(msg) = restore(broker, &view) else {
            warn!(
                level,
                offset = view.queue_offset(),
                "schedule record without REAL_TOPIC skipped"
            );
            next = view.queue_offset() + 1;
            continue;
        };
        let result = broker.store.put_message(msg).await;
        match result.status {
            status if crate::processor::is_stored(status) => {
                debug!(
                    level,
                    offset = view.queue_offset(),
                    "delayed message delivered"
                );
                next = view.queue_offset() + 1;
            }
            status => {
                warn!(
                    level,
                    offset = view.queue_offset(),
                    ?status,
                    "delayed delivery failed; retrying later"
                );
                return if next > offset {
                    Step::Advanced(next)
                } else {
                    Step::Failed
                };
            }
        }
    }
    Step::Advanced(next)
}

/// The message to deliver for a schedule record (`messageTimeUp`).
fn restore(broker: &Broker, view: &RecordView<'_>) -> Option<MessageInner> {
    let topic = view.property(property::REAL_TOPIC)?.to_owned();
    let queue_id = view.property(property::REAL_QUEUE_ID)?.parse().ok()?;
    let mut properties = props_without(
        view.properties(),
        &[property::DELAY_TIME_LEVEL, property::WAIT_STORE_MSG_OK],
    );
    push_pair(&mut properties, property::WAIT_STORE_MSG_OK, "false");
    Some(MessageInner {
        topic,
        queue_id,
        flag: view.flag(),
        body: bytes::Bytes::copy_from_slice(view.body()),
        tags_code: tags_code(property::find(&properties, property::TAGS)),
        properties,
        sys_flag: view.sys_flag(),
        born_timestamp: view.born_timestamp(),
        born_host: view.born_host(),
        store_host: broker.broker_addr,
        reconsume_times: view.reconsume_times(),
        prepared_transaction_offset: view.prepared_transaction_offset(),
    })
}

/// Skips schedule entries from `offset` whose delivered copy is already in the store:
/// the index has `REAL_TOPIC#UNIQ_KEY` stored at or after the schedule record.
async fn skip_already_delivered(broker: &Broker, level: i32, mut offset: i64) -> i64 {
    let start = offset;
    loop {
        let result = broker.store.get_message(
            "SCHEDULE",
            SCHEDULE_TOPIC,
            level - 1,
            offset,
            32,
            i32::MAX,
            None,
        );
        if result.status != GetMessageStatus::Found {
            break;
        }
        for record in &result.messages {
            let Ok(view) = RecordView::parse_message(record, false) else {
                return offset;
            };
            if !already_delivered(broker, &view) {
                if offset > start {
                    info!(
                        level,
                        from = start,
                        to = offset,
                        "skipped delayed messages delivered before a crash"
                    );
                }
                return offset;
            }
            offset = view.queue_offset() + 1;
        }
    }
    offset
}

/// True when a message with the record's UNIQ_KEY was stored in its real topic after the record.
pub(crate) fn already_delivered(broker: &Broker, view: &RecordView<'_>) -> bool {
    let (Some(topic), Some(key)) = (
        view.property(property::REAL_TOPIC),
        view.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
    ) else {
        return false;
    };
    let found = broker
        .store
        .query_message(topic, key, 64, view.store_timestamp(), i64::MAX);
    found.messages.iter().any(|record| {
        RecordView::parse_message(record, false).is_ok_and(|copy| {
            copy.topic() == topic
                && copy.physical_offset() > view.physical_offset()
                && copy.property(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == Some(key)
        })
    })
}
