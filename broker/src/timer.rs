//! Timer messages: delivery at an arbitrary time (RocketMQ 5's `TIMER_DELIVER_MS`,
//! `TIMER_DELAY_SEC`, `TIMER_DELAY_MS`).
//!
//! A timer message is stored in the timer topic (queue 0) with its real topic, queue
//! and delivery time (`TIMER_OUT_MS`) in properties, so the store itself is the
//! persisted wheel. In memory the broker keeps only a min-heap of
//! `(deliver time, queue offset)`, 16 bytes per pending message: delivery pops what is
//! due and sleeps until the next head, never scanning the pending set.
//!
//! Progress is a watermark (every queue offset below it is delivered) plus the
//! delivered offsets above it, saved in `config/timerCheckpoint.json`. A timer that
//! holds the watermark back for long is rolled: a copy is appended at the queue's end
//! and the old entry counts as delivered. At start the heap is rebuilt from the
//! watermark; due messages whose copy already reached their real topic (found through
//! the message index) are not delivered again.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::RecordView;
use vostok_remoting::protocol::response_code;
use vostok_remoting::protocol::topic::TIMER_TOPIC;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;
use vostok_remoting::RemotingCommand;
use vostok_store::{GetMessageStatus, MessageInner};

use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::schedule::props_without;

/// Messages due within this much of now are delivered at once (timer precision).
const PRECISION_MS: i64 = 1000;
/// Delivered offsets above the watermark before the blocking timer is rolled forward.
const ROLL_THRESHOLD: usize = 10_000;
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// On a rolled copy: the queue offset of the record it replaces, so that a restart
/// before the next checkpoint does not deliver both. Removed on delivery.
const TIMER_ROLL_FROM: &str = "TIMER_ROLL_FROM";
/// Most rolls done in one go, so delivery is never held up for long.
const MAX_ROLLS_PER_PASS: usize = 256;

const TIMER_PROPERTIES: &[&str] = &[
    property::TIMER_DELIVER_MS,
    property::TIMER_DELAY_SEC,
    property::TIMER_DELAY_MS,
    property::TIMER_OUT_MS,
];

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Checkpoint {
    watermark: i64,
    #[serde(default)]
    delivered: BTreeSet<i64>,
}

#[derive(Default)]
struct Progress {
    watermark: i64,
    delivered: BTreeSet<i64>,
    /// Pending timers: Reverse((deliver at, queue offset)).
    heap: BinaryHeap<Reverse<(i64, i64)>>,
    dirty: bool,
}

impl Progress {
    fn mark_delivered(&mut self, offset: i64) {
        if offset < self.watermark {
            return;
        }
        self.delivered.insert(offset);
        while self.delivered.remove(&self.watermark) {
            self.watermark += 1;
        }
        self.dirty = true;
    }

    fn is_delivered(&self, offset: i64) -> bool {
        offset < self.watermark || self.delivered.contains(&offset)
    }
}

pub struct TimerService {
    file: ConfigFile,
    progress: Mutex<Progress>,
    /// Signalled when a timer earlier than the current head arrives.
    wake: Notify,
}

/// The absolute delivery time of a timer message, or a remark for MESSAGE_ILLEGAL.
fn deliver_at(properties: &str, now: i64) -> Result<i64, String> {
    let read = |name: &str| -> Result<Option<i64>, String> {
        property::find(properties, name)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("{name} {v:?} is not a number"))
            })
            .transpose()
    };
    if let Some(at) = read(property::TIMER_DELIVER_MS)? {
        return Ok(at);
    }
    if let Some(secs) = read(property::TIMER_DELAY_SEC)? {
        return Ok(now.saturating_add(secs.saturating_mul(1000)));
    }
    if let Some(ms) = read(property::TIMER_DELAY_MS)? {
        return Ok(now.saturating_add(ms));
    }
    Err("no timer property".to_owned())
}

/// Rewrites a timer message for the timer topic; one due within the precision is
/// delivered as a normal message.
pub(crate) fn to_timer_message(
    broker: &Broker,
    msg: &mut MessageInner,
) -> Result<(), RemotingCommand> {
    let illegal =
        |remark: String| RemotingCommand::response(response_code::MESSAGE_ILLEGAL, remark);
    if !broker.config.timer_wheel_enable {
        return Err(illegal(
            "timer messages are disabled on this broker (timerWheelEnable=false)".into(),
        ));
    }
    let now = now_millis();
    let at = deliver_at(&msg.properties, now).map_err(illegal)?;
    let max = broker.config.timer_max_delay.as_millis() as i64;
    let delay = at.saturating_sub(now);
    if delay > max {
        return Err(illegal(format!(
            "timer message delay {delay} ms exceeds the maximum of {max} ms"
        )));
    }
    let mut props = props_without(&msg.properties, TIMER_PROPERTIES);
    if delay <= PRECISION_MS / 10 {
        msg.properties = props;
        return Ok(());
    }
    push_pair(&mut props, property::TIMER_OUT_MS, &at.to_string());
    push_pair(&mut props, property::REAL_TOPIC, &msg.topic);
    push_pair(
        &mut props,
        property::REAL_QUEUE_ID,
        &msg.queue_id.to_string(),
    );
    msg.properties = props;
    msg.topic = TIMER_TOPIC.to_owned();
    msg.queue_id = 0;
    msg.tags_code = at;
    Ok(())
}

impl TimerService {
    pub(crate) fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("timerCheckpoint.json"));
        let checkpoint: Checkpoint = file
            .load(|bytes| serde_json::from_slice(bytes).ok())
            .unwrap_or_default();
        TimerService {
            file,
            progress: Mutex::new(Progress {
                watermark: checkpoint.watermark,
                delivered: checkpoint.delivered,
                ..Default::default()
            }),
            wake: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.locked()
    }

    /// A timer message was dispatched at `offset`, due at `deliver_at`.
    pub(crate) fn on_arrival(&self, offset: i64, deliver_at: i64) {
        let mut p = self.lock();
        if p.is_delivered(offset) {
            return;
        }
        let earlier = p
            .heap
            .peek()
            .is_none_or(|Reverse((head, _))| deliver_at < *head);
        p.heap.push(Reverse((deliver_at, offset)));
        drop(p);
        if earlier {
            self.wake.notify_one();
        }
    }

    /// Number of timers waiting.
    pub fn pending(&self) -> usize {
        self.lock().heap.len()
    }

    pub(crate) fn persist(&self) {
        if !self.lock().dirty {
            return;
        }
        let written = self.file.persist_with(|| {
            let mut p = self.lock();
            p.dirty = false;
            serde_json::to_vec(&Checkpoint {
                watermark: p.watermark,
                delivered: p.delivered.clone(),
            })
            .unwrap_or_default()
        });
        if let Err(e) = written {
            self.lock().dirty = true;
            warn!(file = %self.file.path().display(), error = %e, "cannot persist timer checkpoint");
        }
    }
}

/// Starts the delivery task and the checkpoint writer.
pub(crate) fn spawn(broker: &Arc<Broker>) {
    if !broker.config.is_master() || !broker.config.timer_wheel_enable {
        return;
    }
    let b = broker.clone();
    broker.tasks.spawn(async move {
        rebuild(&b).await;
        deliver_loop(&b).await;
    });
    let b = broker.clone();
    broker.tasks.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(CHECKPOINT_INTERVAL) => b.timer.persist(),
                _ = b.shutdown.cancelled() => break,
            }
        }
    });
}

/// Rebuilds the heap from the timer queue above the watermark.
async fn rebuild(broker: &Broker) {
    let timer = &broker.timer;
    let now = now_millis();
    let mut offset = timer.lock().watermark;
    let mut restored = 0usize;
    let mut skipped = 0usize;
    // Rolled copies name the record they replace; a record may come before its copy.
    let mut replaced: std::collections::HashSet<i64> = std::collections::HashSet::new();
    let mut candidates = Vec::new();
    loop {
        let result = broker
            .store
            .get_message("TIMER", TIMER_TOPIC, 0, offset, 256, i32::MAX, None);
        match result.status {
            GetMessageStatus::Found => {}
            GetMessageStatus::OffsetTooSmall => {
                offset = result.next_begin_offset;
                let mut p = timer.lock();
                p.watermark = p.watermark.max(offset);
                continue;
            }
            _ => break,
        }
        for record in &result.messages {
            let Ok(view) = RecordView::parse_message(record, false) else {
                continue;
            };
            let q = view.queue_offset();
            offset = q + 1;
            if let Some(from) = view.property(TIMER_ROLL_FROM).and_then(|v| v.parse().ok()) {
                replaced.insert(from);
            }
            if timer.lock().is_delivered(q) {
                continue;
            }
            let at = view
                .property(property::TIMER_OUT_MS)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            // Only a message already due could have been delivered before a crash.
            let delivered = at <= now && crate::schedule::already_delivered(broker, &view);
            candidates.push((at, q, delivered));
        }
        if result.messages.is_empty() {
            break;
        }
    }
    let mut p = timer.lock();
    for (at, q, delivered) in candidates {
        if delivered || replaced.contains(&q) {
            p.mark_delivered(q);
            skipped += 1;
        } else {
            p.heap.push(Reverse((at, q)));
            restored += 1;
        }
    }
    drop(p);
    if restored + skipped > 0 {
        info!(restored, skipped, "timer messages restored");
    }
}

async fn deliver_loop(broker: &Broker) {
    let timer = &broker.timer;
    let mut roll_checked = std::time::Instant::now();
    loop {
        // Rolling looks at the oldest pending record: once a second is plenty.
        if roll_checked.elapsed() >= Duration::from_secs(1) {
            maybe_roll(broker).await;
            roll_checked = std::time::Instant::now();
        }
        let head = timer.lock().heap.peek().map(|Reverse((at, _))| *at);
        let now = now_millis();
        match head {
            Some(at) if at <= now => {
                let Some(Reverse((at, offset))) = timer.lock().heap.pop() else {
                    continue;
                };
                if timer.lock().is_delivered(offset) {
                    continue;
                }
                if !deliver(broker, offset).await {
                    // Put it back and retry shortly; the store refused the write.
                    timer.lock().heap.push(Reverse((at, offset)));
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = broker.shutdown.cancelled() => return,
                    }
                }
            }
            _ => {
                // At most a second, so that rolling is looked at every second.
                let wait = head
                    .map(|at| Duration::from_millis((at - now).clamp(1, 1000) as u64))
                    .unwrap_or(Duration::from_secs(1));
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = timer.wake.notified() => {}
                    _ = broker.shutdown.cancelled() => return,
                }
            }
        }
    }
}

/// Reads the timer record at `offset` and stores its message in the real topic.
async fn deliver(broker: &Broker, offset: i64) -> bool {
    let result = broker
        .store
        .get_message("TIMER", TIMER_TOPIC, 0, offset, 1, i32::MAX, None);
    let Some(record) = result.messages.first() else {
        warn!(offset, status = ?result.status, "timer record not readable; dropped");
        broker.timer.lock().mark_delivered(offset);
        return true;
    };
    let Ok(view) = RecordView::parse_message(record, false) else {
        broker.timer.lock().mark_delivered(offset);
        return true;
    };
    let (Some(topic), Some(queue_id)) = (
        view.property(property::REAL_TOPIC),
        view.property(property::REAL_QUEUE_ID)
            .and_then(|q| q.parse::<i32>().ok()),
    ) else {
        warn!(offset, "timer record without REAL_TOPIC; dropped");
        broker.timer.lock().mark_delivered(offset);
        return true;
    };
    let mut properties = props_without(
        view.properties(),
        &[
            property::REAL_TOPIC,
            property::REAL_QUEUE_ID,
            property::WAIT_STORE_MSG_OK,
            TIMER_ROLL_FROM,
        ],
    );
    push_pair(
        &mut properties,
        property::TIMER_DEQUEUE_MS,
        &now_millis().to_string(),
    );
    let msg = MessageInner {
        topic: topic.to_owned(),
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
        prepared_transaction_offset: 0,
    };
    match broker.store.put_message(msg).await.status {
        status if crate::processor::is_stored(status) => {
            debug!(offset, topic, "timer message delivered");
            broker.timer.lock().mark_delivered(offset);
            true
        }
        status => {
            warn!(offset, ?status, "timer delivery failed; will retry");
            false
        }
    }
}

/// Rolls the oldest pending timer forward (a copy at the queue's end, the old entry
/// counted as delivered) while it holds back many deliveries, or while its record is
/// old enough that retention could delete its commitlog file before it is due.
async fn maybe_roll(broker: &Broker) {
    // Half the retention time: a rolled record is new, so it is safe for as long again.
    let roll_age = (broker.config.store.file_reserved_time.as_millis() / 2) as i64;
    for _ in 0..MAX_ROLLS_PER_PASS {
        let (watermark, backlog) = {
            let p = broker.timer.lock();
            (p.watermark, p.delivered.len())
        };
        let result =
            broker
                .store
                .get_message("TIMER", TIMER_TOPIC, 0, watermark, 1, i32::MAX, None);
        let Some(view) = result
            .messages
            .first()
            .and_then(|r| RecordView::parse_message(r, false).ok())
        else {
            return;
        };
        let old = now_millis().saturating_sub(view.store_timestamp()) > roll_age;
        if backlog < ROLL_THRESHOLD && !old {
            return;
        }
        if !roll(broker, &view, watermark).await {
            return;
        }
    }
}

/// Appends a copy of the timer record at `offset`; true when it was stored.
async fn roll(broker: &Broker, view: &RecordView<'_>, offset: i64) -> bool {
    let rolls: i64 = view
        .property(property::TIMER_ROLL_TIMES)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut properties = props_without(
        view.properties(),
        &[property::TIMER_ROLL_TIMES, TIMER_ROLL_FROM],
    );
    push_pair(
        &mut properties,
        property::TIMER_ROLL_TIMES,
        &(rolls + 1).to_string(),
    );
    push_pair(&mut properties, TIMER_ROLL_FROM, &offset.to_string());
    let at = view
        .property(property::TIMER_OUT_MS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let copy = MessageInner {
        topic: TIMER_TOPIC.to_owned(),
        queue_id: 0,
        flag: view.flag(),
        body: bytes::Bytes::copy_from_slice(view.body()),
        properties,
        tags_code: at,
        sys_flag: view.sys_flag(),
        born_timestamp: view.born_timestamp(),
        born_host: view.born_host(),
        store_host: broker.broker_addr,
        reconsume_times: view.reconsume_times(),
        prepared_transaction_offset: 0,
    };
    let status = broker.store.put_message(copy).await.status;
    if crate::processor::is_stored(status) {
        debug!(offset, "timer rolled forward");
        broker.timer.lock().mark_delivered(offset);
        true
    } else {
        warn!(offset, ?status, "cannot roll a timer forward; will retry");
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_time_from_each_property() {
        let p = |k: &str, v: &str| {
            let mut s = String::new();
            push_pair(&mut s, k, v);
            s
        };
        assert_eq!(
            deliver_at(&p(property::TIMER_DELIVER_MS, "5000"), 1000),
            Ok(5000)
        );
        assert_eq!(
            deliver_at(&p(property::TIMER_DELAY_SEC, "3"), 1000),
            Ok(4000)
        );
        assert_eq!(
            deliver_at(&p(property::TIMER_DELAY_MS, "250"), 1000),
            Ok(1250)
        );
        assert!(deliver_at(&p(property::TIMER_DELAY_MS, "soon"), 1000).is_err());
    }

    #[test]
    fn watermark_advances_over_delivered_offsets() {
        let mut p = Progress::default();
        p.mark_delivered(1);
        p.mark_delivered(2);
        assert_eq!(p.watermark, 0);
        assert!(p.is_delivered(2) && !p.is_delivered(0));
        p.mark_delivered(0);
        assert_eq!(p.watermark, 3);
        assert!(p.delivered.is_empty());
    }
}
