//! Timer delivery (RocketMQ 5's `TimerMessageStore` dequeue side): pops due timers
//! from [`crate::state::timer`] and stores their messages in the real topic.
//!
//! A timer that holds the watermark back for long is rolled: a copy is appended at the
//! queue's end and the old entry counts as delivered. At start the heap is rebuilt from
//! the watermark; due messages whose copy already reached their real topic (found
//! through the message index) are not delivered again.

use std::cmp::Reverse;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::message::{property, MessageExt};
use vostok_remoting::protocol::topic::TIMER_TOPIC;
use vostok_remoting::support::time::now_millis;
use vostok_store::GetMessageStatus;

use crate::reroute::{self, TIMER_ROLL_FROM};
use crate::state::master_services::ServiceScope;
use crate::state::Broker;

/// Delivered offsets above the watermark before the blocking timer is rolled forward.
const ROLL_THRESHOLD: usize = 10_000;
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// Most rolls done in one go, so delivery is never held up for long.
const MAX_ROLLS_PER_PASS: usize = 256;

/// Starts the delivery task and the checkpoint writer, until `scope` stops (a master
/// only).
pub(crate) fn spawn(broker: &Arc<Broker>, scope: &ServiceScope) {
    if !broker.config.timer_wheel_enable {
        return;
    }
    let (b, stop) = (broker.clone(), scope.stop().clone());
    scope.spawn(async move {
        rebuild(&b).await;
        deliver_loop(&b, &stop).await;
    });
    let (b, stop) = (broker.clone(), scope.stop().clone());
    scope.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(CHECKPOINT_INTERVAL) => b.deferred.timers.persist(),
                _ = stop.cancelled() => break,
            }
        }
    });
}

/// Rebuilds the heap from the timer queue above the watermark: at start, and on each
/// promotion (a slave's heap, filled by dispatch, still holds the timers its master
/// delivered; their copies are found in the index and marked delivered here).
async fn rebuild(broker: &Broker) {
    let timers = &broker.deferred.timers;
    {
        let mut p = timers.lock();
        p.heap.clear();
        p.clear_tracking();
    }
    let now = now_millis();
    let mut offset = timers.lock().watermark;
    let mut restored = 0usize;
    let mut skipped = 0usize;
    // Rolled copies name the record they replace; a record may come before its copy.
    let mut replaced: HashSet<i64> = HashSet::new();
    let mut candidates = Vec::new();
    loop {
        let result = broker
            .storage
            .store
            .get_message(TIMER_TOPIC, 0, offset, 256, i32::MAX, None);
        match result.status {
            GetMessageStatus::Found => {}
            GetMessageStatus::OffsetTooSmall => {
                offset = result.next_begin_offset;
                let mut p = timers.lock();
                p.watermark = p.watermark.max(offset);
                continue;
            }
            _ => break,
        }
        for record in &result.messages {
            let Ok(parked) = MessageExt::decode(record, false) else {
                continue;
            };
            let q = parked.queue_offset;
            offset = q + 1;
            if let Some(from) = parked
                .property(TIMER_ROLL_FROM)
                .and_then(|v| v.parse().ok())
            {
                replaced.insert(from);
            }
            if timers.lock().is_delivered(q) {
                continue;
            }
            let at = due_at(&parked);
            // Only a message already due could have been delivered before a crash.
            let delivered = at <= now && reroute::already_restored(&broker.storage.store, &parked);
            let real_topic = parked
                .property(property::REAL_TOPIC)
                .unwrap_or_default()
                .to_owned();
            candidates.push((at, q, delivered, real_topic));
        }
        if result.messages.is_empty() {
            break;
        }
    }
    let mut p = timers.lock();
    for (at, q, delivered, real_topic) in candidates {
        if delivered || replaced.contains(&q) {
            p.mark_delivered(q);
            skipped += 1;
        } else {
            p.heap.push(Reverse((at, q)));
            p.track(&real_topic);
            restored += 1;
        }
    }
    drop(p);
    if restored + skipped > 0 {
        info!(restored, skipped, "timer messages restored");
    }
}

fn due_at(parked: &MessageExt) -> i64 {
    parked
        .property(property::TIMER_OUT_MS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn deliver_loop(broker: &Broker, stop: &CancellationToken) {
    let timers = &broker.deferred.timers;
    let mut roll_checked = Instant::now();
    loop {
        // Rolling looks at the oldest pending record: once a second is plenty.
        if roll_checked.elapsed() >= Duration::from_secs(1) {
            maybe_roll(broker).await;
            roll_checked = Instant::now();
        }
        let head = timers.lock().head();
        let now = now_millis();
        match head {
            Some(at) if at <= now => {
                let Some(Reverse((at, offset))) = timers.lock().heap.pop() else {
                    continue;
                };
                if timers.lock().is_delivered(offset) {
                    continue;
                }
                if !deliver(broker, offset).await {
                    // Put it back and retry shortly; the store refused the write.
                    timers.lock().heap.push(Reverse((at, offset)));
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = stop.cancelled() => return,
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
                    _ = timers.wake.notified() => {}
                    _ = stop.cancelled() => return,
                }
            }
        }
    }
}

/// Reads the timer record at `offset` and stores its message in the real topic.
async fn deliver(broker: &Broker, offset: i64) -> bool {
    let result = broker
        .storage
        .store
        .get_message(TIMER_TOPIC, 0, offset, 1, i32::MAX, None);
    let Some(record) = result.messages.first() else {
        warn!(offset, status = ?result.status, "timer record not readable; dropped");
        broker.deferred.timers.lock().mark_delivered(offset);
        return true;
    };
    let Some(msg) = MessageExt::decode(record, false)
        .ok()
        .and_then(|parked| reroute::restore_timer(&parked, broker.broker_addr))
    else {
        warn!(
            offset,
            "timer record unreadable or without REAL_TOPIC; dropped"
        );
        broker.deferred.timers.lock().mark_delivered(offset);
        return true;
    };
    let topic = msg.topic.clone();
    let status = broker.storage.store.put_message(msg).await.status;
    if status.is_stored() {
        debug!(offset, topic, "timer message delivered");
        {
            let mut p = broker.deferred.timers.lock();
            p.mark_delivered(offset);
            p.untrack(&topic);
        }
        broker.observed.metrics.events.timer_delivered(&topic);
        true
    } else {
        warn!(offset, ?status, "timer delivery failed; will retry");
        false
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
            let p = broker.deferred.timers.lock();
            (p.watermark, p.delivered.len())
        };
        let result = broker
            .storage
            .store
            .get_message(TIMER_TOPIC, 0, watermark, 1, i32::MAX, None);
        let Some(parked) = result
            .messages
            .first()
            .and_then(|r| MessageExt::decode(r, false).ok())
        else {
            return;
        };
        let old = now_millis().saturating_sub(parked.store_timestamp) > roll_age;
        if backlog < ROLL_THRESHOLD && !old {
            return;
        }
        if !roll(broker, &parked, watermark).await {
            return;
        }
    }
}

/// Appends a copy of the timer record at `offset`; true when it was stored.
async fn roll(broker: &Broker, parked: &MessageExt, offset: i64) -> bool {
    let copy = reroute::roll_timer(parked, offset, broker.broker_addr);
    let status = broker.storage.store.put_message(copy).await.status;
    if status.is_stored() {
        debug!(offset, "timer rolled forward");
        let mut p = broker.deferred.timers.lock();
        p.mark_delivered(offset);
        // The copy is counted as it arrives.
        p.untrack(parked.property(property::REAL_TOPIC).unwrap_or_default());
        true
    } else {
        warn!(offset, ?status, "cannot roll a timer forward; will retry");
        false
    }
}
