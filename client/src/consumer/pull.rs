//! The pull task of one assigned queue (Java `PullMessageService` +
//! `DefaultMQPushConsumerImpl.pullMessage`): long-polling PULL_MESSAGE in a loop,
//! throttled by the consumer's flow control, until the queue is dropped.

use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info};
use vostok_remoting::protocol::body::MessageQueue;
use vostok_remoting::protocol::header::{
    PullMessageRequestHeader, PULL_FLAG_COMMIT_OFFSET, PULL_FLAG_LITE_PULL, PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
};
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;

use super::core::ConsumerCore;
use super::process_queue::ProcessQueue;
use crate::api::{self, PullStatus};
use crate::error::ClientError;

/// Delay before pulling a queue an orderly consumer has not locked (Java 3 s).
const PULL_DELAY_WHEN_NOT_LOCKED: Duration = Duration::from_secs(3);
const FLOW_CONTROL_DELAY: Duration = Duration::from_millis(20);

pub(crate) fn spawn(core: Arc<ConsumerCore>, mq: MessageQueue, pq: Arc<ProcessQueue>, offset: i64) {
    let tracker = core.tracker.clone();
    tracker.spawn(async move {
        run(core, mq, pq, offset).await;
    });
}

/// Sleeps unless the queue is dropped or the consumer stops first.
async fn pause(core: &ConsumerCore, delay: Duration) {
    tokio::select! {
        _ = core.shutdown.cancelled() => {}
        _ = tokio::time::sleep(delay) => {}
    }
}

async fn run(
    core: Arc<ConsumerCore>,
    mq: MessageQueue,
    pq: Arc<ProcessQueue>,
    mut next_offset: i64,
) {
    let kind = core.kind.clone();
    let mut previously_locked = false;
    // The broker's last `suggestWhichBrokerId` for this queue (Java `PullAPIWrapper`).
    let mut suggested_broker_id = 0;
    debug!(group = %core.group, %mq, offset = next_offset, "pull task started");
    loop {
        if pq.is_dropped() || core.shutdown.is_cancelled() {
            break;
        }
        pq.last_pull_ms
            .store(now_millis(), std::sync::atomic::Ordering::Relaxed);
        if let Some(delay) = kind.flow_control(&mq, &pq) {
            pause(&core, delay).await;
            continue;
        }
        if core.orderly && core.clustering() {
            if !pq.is_locked() {
                pause(&core, PULL_DELAY_WHEN_NOT_LOCKED).await;
                continue;
            }
            if !previously_locked {
                // The previous owner may have committed since this queue was assigned.
                match core.compute_pull_from_where(&mq).await {
                    Ok(o) => next_offset = o,
                    Err(e) => {
                        core.log_pull_error(&mq, &e);
                        pause(&core, core.pull.exception_delay).await;
                        continue;
                    }
                }
                previously_locked = true;
            }
        }
        let Some(sub) = core.subscription(&mq.topic) else {
            pause(&core, core.pull.exception_delay).await;
            continue;
        };
        let (addr, slave) = match core.pull_addr(&mq, suggested_broker_id).await {
            Ok(a) => a,
            Err(e) => {
                core.log_pull_error(&mq, &e);
                pause(&core, core.pull.exception_delay).await;
                continue;
            }
        };
        let mut sys_flag = PULL_FLAG_SUSPEND;
        let mut commit_offset = 0;
        if core.clustering() && !core.pull.lite {
            if let Some(o) = core.offsets.read_memory(&mq).filter(|o| *o > 0) {
                commit_offset = o;
                sys_flag |= PULL_FLAG_COMMIT_OFFSET;
            }
        }
        if slave {
            // A slave keeps no offsets a consumer commits in a pull (Java clears the bit).
            sys_flag &= !PULL_FLAG_COMMIT_OFFSET;
        }
        if core.pull.post_subscription || core.pull.lite {
            sys_flag |= PULL_FLAG_SUBSCRIPTION;
        }
        if core.pull.lite {
            sys_flag |= PULL_FLAG_LITE_PULL;
        }
        let header = PullMessageRequestHeader {
            consumer_group: core.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            queue_offset: next_offset,
            max_msg_nums: core.pull.batch_size,
            sys_flag,
            commit_offset,
            suspend_timeout_millis: core.pull.suspend.as_millis() as i64,
            subscription: (sys_flag & PULL_FLAG_SUBSCRIPTION != 0)
                .then(|| sub.data.sub_string.clone()),
            sub_version: sub.data.sub_version,
            expression_type: Some(sub.data.expression_type.clone()),
            max_msg_bytes: None,
            broker_name: Some(mq.broker_name.clone()),
        };
        let result = tokio::select! {
            _ = core.shutdown.cancelled() => break,
            r = api::pull_message(core.instance.long_polls(&addr), &addr, &header, core.pull.timeout) => r,
        };
        if let Ok(r) = &result {
            suggested_broker_id = r.suggest_which_broker_id;
        }
        match result {
            Ok(r) => match r.status {
                PullStatus::Found => {
                    next_offset = r.next_begin_offset;
                    let msgs = core.fix_messages(r.messages, &sub);
                    if pq.is_dropped() {
                        break;
                    }
                    if msgs.is_empty() {
                        // Everything was filtered out here (tag hash collision, routing
                        // pattern): the offset moves past them now (or when the cached
                        // messages are consumed) rather than after the next long poll
                        // comes back empty.
                        pq.pulled_through(next_offset - 1);
                        if pq.msg_count() == 0 && core.clustering() && !core.pull.lite {
                            core.offsets.update(&mq, next_offset, true);
                        }
                        continue;
                    }
                    kind.clone()
                        .deliver(core.clone(), mq.clone(), pq.clone(), msgs)
                        .await;
                    // Messages filtered out behind the delivered ones count as consumed
                    // once those are (after `deliver` cached them, never before).
                    pq.pulled_through(next_offset - 1);
                }
                PullStatus::NoNewMsg | PullStatus::NoMatchedMsg => {
                    next_offset = r.next_begin_offset;
                    if pq.is_dropped() {
                        // The queue moved away or was reset while the pull was parked:
                        // its offset belongs to whoever dropped it now.
                        break;
                    }
                    // Skipped by the broker's filter: consumed once the cached ones are.
                    pq.pulled_through(next_offset - 1);
                    if pq.msg_count() == 0 && core.clustering() && !core.pull.lite {
                        // Nothing cached: everything before here is consumed or filtered.
                        core.offsets.update(&mq, next_offset, true);
                    }
                }
                PullStatus::OffsetIllegal => {
                    info!(group = %core.group, %mq, requested = next_offset, next = r.next_begin_offset, "pull offset illegal; correcting");
                    pq.set_dropped();
                    core.offsets.update(&mq, r.next_begin_offset, false);
                    core.offsets.persist(&mq).await;
                    core.pqs.locked().remove(&mq);
                    core.instance.rebalance_immediately();
                    break;
                }
            },
            Err(ClientError::Broker { code, .. }) if code == response_code::FLOW_CONTROL => {
                pause(&core, FLOW_CONTROL_DELAY).await;
                continue;
            }
            Err(ClientError::Broker { code, .. }) if sub.is_routing() && refuses_routing(code) => {
                // A broker without routing keys (subscribed after the start check, or
                // a broker added since): filter on the client from now on.
                if core.filter_routing_on_client(&mq.topic) {
                    let instance = core.instance.clone();
                    tokio::spawn(async move { instance.send_heartbeat_to_all_brokers().await });
                }
                continue;
            }
            Err(e) => {
                core.log_pull_error(&mq, &e);
                pause(&core, core.pull.exception_delay).await;
                continue;
            }
        }
        if !core.pull.interval.is_zero() {
            pause(&core, core.pull.interval).await;
        }
    }
    debug!(group = %core.group, %mq, "pull task stopped");
}

/// The answers of a broker that does not serve the `ROUTING` expression type: Apache
/// RocketMQ answers SYSTEM_ERROR without property filters, SUBSCRIPTION_PARSE_FAILED
/// or FILTER_DATA_NOT_EXIST with them.
fn refuses_routing(code: i32) -> bool {
    matches!(
        code,
        response_code::SYSTEM_ERROR
            | response_code::SUBSCRIPTION_PARSE_FAILED
            | response_code::FILTER_DATA_NOT_EXIST
    )
}
