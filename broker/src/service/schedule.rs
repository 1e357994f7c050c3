//! Delay-level delivery (RocketMQ's `ScheduleMessageService`).
//!
//! A message with `DELAY=n` is parked in `SCHEDULE_TOPIC_XXXX` queue `n-1` (see
//! `reroute`). One task per level walks its queue in order (every message of a level
//! has the same delay, so store order is delivery order) and, when the head is due,
//! stores the message in its real topic and advances the level's offset in
//! [`crate::state::schedule`]. A level with nothing parked waits for the next arrival;
//! one whose head is not due sleeps until it is.
//!
//! The offsets file may lag behind after a crash; at start each level re-checks the
//! messages after its saved offset against the message index (real topic + UNIQ_KEY,
//! stored after the parked record), so a restart neither loses nor duplicates a due
//! message.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic::SCHEDULE_TOPIC;
use vostok_remoting::support::time::now_millis;
use vostok_store::GetMessageStatus;

use crate::reroute;
use crate::state::master_services::ServiceScope;
use crate::state::Broker;

/// How often progress is written (`flushDelayOffsetInterval`).
const FLUSH_INTERVAL: Duration = Duration::from_secs(10);
/// Pause after a failed delivery (`DELAY_FOR_A_PERIOD`).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);
/// Longest sleep before a head that is not due is looked at again: due times are wall
/// clock, sleeps are monotonic, so a wall clock stepped forward is noticed this late.
const MAX_NOT_DUE_SLEEP: Duration = Duration::from_secs(10);

/// Starts one delivery task per level and the progress persister, until `scope`
/// stops (a master only).
pub(crate) fn spawn(broker: &Arc<Broker>, scope: &ServiceScope) {
    let Ok(levels) = broker.config.store.delay_levels() else {
        return;
    };
    for (i, delay) in levels.into_iter().enumerate() {
        let level = i as i32 + 1;
        let (b, stop) = (broker.clone(), scope.stop().clone());
        scope.spawn(async move { deliver_level(b, level, delay, stop).await });
    }
    let (b, stop) = (broker.clone(), scope.stop().clone());
    scope.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(FLUSH_INTERVAL) => b.deferred.delay_offsets.persist(),
                _ = stop.cancelled() => break,
            }
        }
    });
}

enum Step {
    /// Delivered messages up to this offset (exclusive).
    Advanced(i64),
    /// The head is due at this wall-clock time.
    NotDue(i64),
    /// Nothing parked at this level.
    Idle,
    Failed,
}

async fn deliver_level(broker: Arc<Broker>, level: i32, delay: Duration, stop: CancellationToken) {
    // Start after 1 s, as RocketMQ does, and skip what a crash (or the master before
    // a failover) left delivered but unsaved.
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        _ = stop.cancelled() => return,
    }
    let offsets = &broker.deferred.delay_offsets;
    let resumed = skip_already_delivered(&broker, level, offsets.get(level)).await;
    offsets.set(level, resumed);
    loop {
        let step = deliver_batch(&broker, level, delay, offsets.get(level)).await;
        let pause = match step {
            Step::Advanced(next) => {
                offsets.set(level, next);
                if stop.is_cancelled() {
                    break;
                }
                continue;
            }
            Step::NotDue(at) => {
                Duration::from_millis((at - now_millis()).max(1) as u64).min(MAX_NOT_DUE_SLEEP)
            }
            Step::Idle => Duration::MAX,
            Step::Failed => RETRY_AFTER_FAILURE,
        };
        let sleep = async {
            if pause == Duration::MAX {
                std::future::pending::<()>().await
            } else {
                tokio::time::sleep(pause).await
            }
        };
        tokio::select! {
            _ = sleep => {}
            // A new head can only be later than the current one, but an idle level
            // has no head: its first arrival is what it waits for.
            _ = offsets.arrival(level), if matches!(step, Step::Idle) => {}
            _ = stop.cancelled() => break,
        }
    }
}

async fn deliver_batch(broker: &Broker, level: i32, delay: Duration, offset: i64) -> Step {
    let queue_id = level - 1;
    let result =
        broker
            .storage
            .store
            .get_message(SCHEDULE_TOPIC, queue_id, offset, 32, i32::MAX, None);
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
        let Ok(parked) = MessageExt::decode(record, false) else {
            warn!(level, offset = next, "unreadable schedule record skipped");
            next += 1;
            continue;
        };
        let due = parked.store_timestamp + delay.as_millis() as i64;
        if due > now {
            return if next > offset {
                Step::Advanced(next)
            } else {
                Step::NotDue(due)
            };
        }
        let q = parked.queue_offset;
        let Some(msg) = reroute::restore_delayed(&parked, broker.broker_addr) else {
            warn!(
                level,
                offset = q,
                "schedule record without REAL_TOPIC skipped"
            );
            next = q + 1;
            continue;
        };
        let status = broker.storage.store.put_message(msg).await.status;
        if status.is_stored() {
            debug!(level, offset = q, "delayed message delivered");
            next = q + 1;
        } else {
            warn!(
                level,
                offset = q,
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
    Step::Advanced(next)
}

/// Skips schedule entries from `offset` whose restored copy is already in the store.
async fn skip_already_delivered(broker: &Broker, level: i32, mut offset: i64) -> i64 {
    let start = offset;
    loop {
        let result =
            broker
                .storage
                .store
                .get_message(SCHEDULE_TOPIC, level - 1, offset, 32, i32::MAX, None);
        if result.status != GetMessageStatus::Found {
            break;
        }
        for record in &result.messages {
            let Ok(parked) = MessageExt::decode(record, false) else {
                return offset;
            };
            if !reroute::already_restored(&broker.storage.store, &parked) {
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
            offset = parked.queue_offset + 1;
        }
    }
    offset
}
