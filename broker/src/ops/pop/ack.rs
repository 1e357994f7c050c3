//! Acking popped messages (`AckMessageProcessor`, docs/pop.md#ack_message).
//!
//! A plain ack sets the message's bit in its live checkpoint after storing an ack
//! record in the checkpoint's revive queue, so that it holds across a restart. An ack
//! of a checkpoint that is no longer live (fully acked, or taken by the revive service
//! because its invisible time was over) changes nothing and still succeeds, as in
//! RocketMQ. A FIFO ack (revive queue 999) moves the group's offset to the batch's
//! first unacked message and wakes the pops waiting for that queue.

use vostok_remoting::protocol::pop::ExtraInfo;
use vostok_remoting::protocol::response_code;

use super::{check_offset, PopError, PopTables};
use crate::state::pop::checkpoint::{AckOutcome, CkKey};
use crate::state::pop::journal;
use crate::state::pop::order::OrderError;

/// Acks one message: `topic` is the topic it was read from (its POP retry topic for a
/// retried message), `offset` its queue offset, `extra` its handle.
pub(crate) async fn ack(
    tables: PopTables<'_>,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    extra: &ExtraInfo,
) -> Result<(), PopError> {
    check_offset(tables.storage, topic, queue_id, offset, true)?;
    if extra.is_order() {
        return ack_orderly(tables, group, topic, queue_id, offset, extra.pop_time);
    }
    let key = CkKey {
        topic: topic.into(),
        group: group.into(),
        queue_id,
        start_offset: extra.ck_queue_offset,
        pop_time: extra.pop_time,
    };
    ack_offsets(tables, &key, &[offset]).await.map(|_| ())
}

/// Acks several offsets of one checkpoint with one record; returns how many were
/// pending. Offsets already acked or not in the checkpoint are ignored.
pub(crate) async fn ack_offsets(
    tables: PopTables<'_>,
    key: &CkKey,
    offsets: &[i64],
) -> Result<usize, PopError> {
    let (revive_qid, pending) = {
        let table = tables.pop.checkpoints();
        let Some(ck) = table.get(key) else {
            return Ok(0);
        };
        let pending: Vec<i64> = offsets
            .iter()
            .copied()
            .filter(|o| table.is_pending(key, *o))
            .collect();
        (ck.revive_qid, pending)
    };
    if pending.is_empty() {
        return Ok(0);
    }
    let record = journal::ack_record(
        key,
        &pending,
        &tables.pop.revive_topic,
        revive_qid,
        &tables.config.broker_name,
        tables.broker_addr,
    );
    let status = tables.storage.store.put_message(record).await.status;
    if !status.is_stored() {
        return Err(PopError::new(
            response_code::SYSTEM_ERROR,
            format!("cannot store the ack: {}", status.as_str()),
        ));
    }
    let mut table = tables.pop.checkpoints();
    for o in &pending {
        if let AckOutcome::Acked { done: true, .. } = table.ack(key, *o) {
            break;
        }
    }
    Ok(pending.len())
}

/// `ackOrderly`: marks a FIFO message acked and commits the batch's first unacked
/// offset.
pub(crate) fn ack_orderly(
    tables: PopTables<'_>,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    pop_time: i64,
) -> Result<(), PopError> {
    let committed = tables.consumers.offsets.query(group, topic, queue_id);
    if offset < committed {
        return Ok(());
    }
    let key = (topic.to_owned(), group.to_owned(), queue_id);
    let next = tables.pop.orders().commit_and_next(&key, offset, pop_time);
    match next {
        Ok(next) => {
            if next > tables.consumers.offsets.query(group, topic, queue_id) {
                tables.consumers.offsets.commit(group, topic, queue_id, next);
            }
            tables.pop.polling.notify_group(topic, group);
            Ok(())
        }
        // A handle of an earlier pop of the queue: RocketMQ ignores it.
        Err(OrderError::StalePopTime) => Ok(()),
        Err(OrderError::NotFound) => Err(PopError::new(
            response_code::MESSAGE_ILLEGAL,
            format!("offset is illegal, key:{topic}@{group}@{queue_id}, old:{committed}, commit:{offset}"),
        )),
    }
}
