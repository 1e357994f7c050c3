//! Rebalancing (Java `RebalanceImpl`): which queues this member consumes.
//!
//! For each subscribed topic: all readable queues (sorted) and all client ids of the
//! group (sorted, from a broker of the topic) go through the allocation strategy;
//! broadcasting members take every queue. Queues no longer ours are dropped first —
//! their pulls stop, listener calls in flight finish, and the offset is committed to
//! the broker with an answered UPDATE_CONSUMER_OFFSET so the next owner starts where
//! this one stopped — then new queues start from their committed offset (9.3).
//! Orderly clustering consumers lock a queue on the broker before consuming it
//! (LOCK_BATCH_MQ, renewed every rebalance) and unlock it when it leaves.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info, warn};
use vostok_remoting::protocol::body::{LockBatchRequestBody, MessageQueue};
use vostok_remoting::support::sync::{MutexExt, RwLockExt};

use super::core::ConsumerCore;
use super::process_queue::ProcessQueue;
use super::pull;
use crate::api;
use crate::route::subscribe_queues;

/// How long a dropped queue waits for its listener calls before committing anyway.
const DROP_WAIT: Duration = Duration::from_secs(10);

pub(crate) async fn do_rebalance(core: &Arc<ConsumerCore>) {
    if core.shutdown.is_cancelled() || core.assigned.load(Ordering::Acquire) {
        return;
    }
    let _guard = core.rebalance_lock.lock().await;
    if core.orderly && core.clustering() {
        lock_all(core).await;
    }
    for topic in core.subscribed_topics() {
        let Some(mq_all) = topic_queues(core, &topic).await else {
            debug!(group = %core.group, topic = %topic, "no route yet; rebalance later");
            continue;
        };
        let allocated: BTreeSet<MessageQueue> = if core.clustering() {
            let mut cids = match core
                .instance
                .find_consumer_id_list(&topic, &core.group)
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    debug!(group = %core.group, topic = %topic, error = %e, "no consumer list; rebalance later");
                    continue;
                }
            };
            cids.sort();
            cids.dedup();
            core.strategy
                .allocate(core.instance.client_id(), &mq_all, &cids)
                .into_iter()
                .collect()
        } else {
            mq_all.into_iter().collect()
        };
        update_process_queues(core, &topic, allocated).await;
    }
}

async fn topic_queues(core: &ConsumerCore, topic: &str) -> Option<Vec<MessageQueue>> {
    let cached = core.topic_queues.read_locked().get(topic).cloned();
    if let Some(q) = cached.filter(|q| !q.is_empty()) {
        return Some(q);
    }
    let route = core.instance.update_route(topic).await.ok()??;
    let queues = subscribe_queues(topic, &route);
    core.topic_queues
        .write_locked()
        .insert(topic.to_owned(), queues.clone());
    Some(queues)
}

async fn update_process_queues(
    core: &Arc<ConsumerCore>,
    topic: &str,
    allocated: BTreeSet<MessageQueue>,
) {
    let removed: Vec<(MessageQueue, Arc<ProcessQueue>)> = {
        let pqs = core.pqs.locked();
        pqs.iter()
            .filter(|(mq, _)| mq.topic == topic && !allocated.contains(mq))
            .map(|(mq, pq)| (mq.clone(), pq.clone()))
            .collect()
    };
    for (mq, pq) in removed {
        info!(group = %core.group, %mq, "queue moved away");
        remove_queue(core, &mq, &pq).await;
    }
    for mq in allocated {
        if core.process_queue(&mq).is_some() {
            continue;
        }
        let pq = Arc::new(ProcessQueue::new());
        if core.orderly && core.clustering() {
            if !lock(core, &mq).await {
                debug!(group = %core.group, %mq, "queue locked by another member; later");
                continue;
            }
            pq.set_locked(true);
        }
        core.offsets.remove(&mq);
        let offset = match core.compute_pull_from_where(&mq).await {
            Ok(o) => o,
            Err(e) => {
                warn!(group = %core.group, %mq, error = %e, "cannot compute the start offset; later");
                continue;
            }
        };
        info!(group = %core.group, %mq, offset, "queue assigned");
        core.pqs.locked().insert(mq.clone(), pq.clone());
        pull::spawn(core.clone(), mq, pq, offset);
    }
}

/// Stops a queue: no more pulls or listener calls, waits for calls in flight, commits
/// its offset, unlocks it (orderly) and forgets it.
pub(crate) async fn remove_queue(
    core: &Arc<ConsumerCore>,
    mq: &MessageQueue,
    pq: &Arc<ProcessQueue>,
) {
    pq.set_dropped();
    core.kind.on_queue_removed(core, mq, pq).await;
    if !pq.wait_idle(DROP_WAIT).await {
        warn!(group = %core.group, %mq, "listener still running on a dropped queue; committing anyway");
    }
    let guard = if core.orderly {
        tokio::time::timeout(Duration::from_secs(1), pq.consume_lock.lock())
            .await
            .ok()
    } else {
        None
    };
    core.offsets.persist(mq).await;
    core.offsets.remove(mq);
    if core.orderly && core.clustering() {
        unlock(core, mq).await;
    }
    drop(guard);
    core.pqs.locked().remove(mq);
}

/// RESET_CONSUMER_CLIENT_OFFSET on this member: the assigned queues of `topic` listed
/// in `offsets` stop, their listener calls finish, the new offsets are committed (with
/// an answered UPDATE_CONSUMER_OFFSET, or the local file) and the queues are released,
/// so the next rebalance takes them again from the new offsets. Queues not assigned
/// here are left alone, as in Java (their owners get the same request).
pub(crate) async fn reset_offsets(
    core: &Arc<ConsumerCore>,
    topic: &str,
    offsets: &std::collections::HashMap<MessageQueue, i64>,
) {
    let _guard = core.rebalance_lock.lock().await;
    let targets: Vec<(MessageQueue, Arc<ProcessQueue>, i64)> = core
        .pqs
        .locked()
        .iter()
        .filter(|(mq, _)| mq.topic == topic)
        .filter_map(|(mq, pq)| offsets.get(mq).map(|o| (mq.clone(), pq.clone(), *o)))
        .collect();
    for (_, pq, _) in &targets {
        pq.set_dropped();
    }
    // One wait for all of them, as Java's single pause: listener calls end in parallel.
    let idle =
        futures_util::future::join_all(targets.iter().map(|(_, pq, _)| pq.wait_idle(DROP_WAIT)))
            .await;
    for ((mq, pq, offset), idle) in targets.into_iter().zip(idle) {
        if !idle {
            warn!(group = %core.group, %mq, "listener still running on a reset queue");
        }
        info!(group = %core.group, %mq, offset, "offset reset");
        core.offsets.update(&mq, offset, false);
        remove_queue(core, &mq, &pq).await;
    }
}

fn lock_body(core: &ConsumerCore, mqs: BTreeSet<MessageQueue>) -> LockBatchRequestBody {
    LockBatchRequestBody {
        client_id: core.instance.client_id().to_owned(),
        consumer_group: core.group.clone(),
        mq_set: mqs,
        only_this_broker: false,
    }
}

async fn lock(core: &ConsumerCore, mq: &MessageQueue) -> bool {
    let Ok(addr) = core.broker_addr(mq).await else {
        return false;
    };
    let body = lock_body(core, [mq.clone()].into());
    match api::lock_batch_mq(
        core.instance.remoting(),
        &addr,
        &body,
        core.instance.api_timeout(),
    )
    .await
    {
        Ok(locked) => locked.contains(mq),
        Err(e) => {
            debug!(%mq, error = %e, "lock failed");
            false
        }
    }
}

async fn unlock(core: &ConsumerCore, mq: &MessageQueue) {
    let Ok(addr) = core.broker_addr(mq).await else {
        return;
    };
    let body = lock_body(core, [mq.clone()].into());
    if let Err(e) = api::unlock_batch_mq(
        core.instance.remoting(),
        &addr,
        &body,
        false,
        core.instance.api_timeout(),
    )
    .await
    {
        debug!(%mq, error = %e, "unlock failed");
    }
}

/// Renews the locks of every queue this member holds, per broker.
pub(crate) async fn lock_all(core: &ConsumerCore) {
    let mut by_broker: BTreeMap<String, BTreeSet<MessageQueue>> = BTreeMap::new();
    let pqs = core.process_queues();
    for (mq, _) in &pqs {
        by_broker
            .entry(mq.broker_name.clone())
            .or_default()
            .insert(mq.clone());
    }
    for (broker, mqs) in by_broker {
        let Some(addr) = core.instance.find_broker_addr_in_subscribe(&broker) else {
            continue;
        };
        let body = lock_body(core, mqs.clone());
        let locked = match api::lock_batch_mq(
            core.instance.remoting(),
            &addr,
            &body,
            core.instance.api_timeout(),
        )
        .await
        {
            Ok(l) => l,
            Err(e) => {
                debug!(broker = %broker, error = %e, "lock renewal failed");
                continue;
            }
        };
        for (mq, pq) in pqs.iter().filter(|(m, _)| mqs.contains(m)) {
            pq.set_locked(locked.contains(mq));
        }
    }
}
