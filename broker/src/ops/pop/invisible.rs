//! Changing a popped message's invisible time (`ChangeInvisibleTimeProcessor`,
//! docs/pop.md#change_message_invisibletime).
//!
//! For a plain pop: a new one-message checkpoint (start offset = the message's offset,
//! pop time = now) is stored and added, then the message is acked in its old
//! checkpoint; the answer's pop time and invisible time make the new handle. For a FIFO
//! pop only the offset's next visible time changes. **Vostok differs:** a message whose
//! old checkpoint is gone (acked, or already revived) answers NO_MESSAGE instead of
//! getting a checkpoint that would deliver it again.

use vostok_remoting::protocol::pop::{ExtraInfo, ORDER_REVIVE_QUEUE};
use vostok_remoting::protocol::response_code;
use vostok_remoting::support::time::now_millis;

use super::ack::ack_offsets;
use super::{check_offset, PopError, PopTables};
use crate::state::pop::checkpoint::{Checkpoint, CkKey};
use crate::state::pop::journal;
use crate::state::pop::order::OrderError;

/// The handle's new time fields (`ChangeInvisibleTimeResponseHeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Changed {
    pub(crate) pop_time: i64,
    pub(crate) invisible_time: i64,
    pub(crate) revive_qid: i32,
}

pub(crate) async fn change_invisible_time(
    tables: PopTables<'_>,
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    extra: &ExtraInfo,
    invisible_time: i64,
) -> Result<Changed, PopError> {
    check_offset(tables.storage, topic, queue_id, offset, false)?;
    let now = now_millis();
    if extra.is_order() {
        let key = (topic.to_owned(), group.to_owned(), queue_id);
        let at = now.saturating_add(invisible_time);
        return match tables
            .pop
            .orders()
            .set_next_visible(&key, offset, extra.pop_time, at)
        {
            Ok(()) => Ok(Changed {
                pop_time: extra.pop_time,
                invisible_time: at - extra.pop_time,
                revive_qid: ORDER_REVIVE_QUEUE,
            }),
            Err(OrderError::StalePopTime | OrderError::NotFound) => Err(gone()),
        };
    }
    let old = CkKey {
        topic: topic.into(),
        group: group.into(),
        queue_id,
        start_offset: extra.ck_queue_offset,
        pop_time: extra.pop_time,
    };
    let revive_qid = {
        let table = tables.pop.checkpoints();
        match table.get(&old) {
            Some(ck) if table.is_pending(&old, offset) => ck.revive_qid,
            _ => return Err(gone()),
        }
    };
    let mut ck = Checkpoint {
        key: CkKey {
            start_offset: offset,
            pop_time: now,
            ..old.clone()
        },
        invisible_time,
        diffs: vec![0].into(),
        acked: 0,
        revive_qid,
        revive_offset: -1,
    };
    {
        let _pending = tables.pop.begin_write(revive_qid);
        let record = journal::checkpoint_record(
            &ck,
            &tables.pop.revive_topic,
            &tables.config.broker_name,
            tables.broker_addr,
        );
        let put = tables.storage.store.put_message(record).await;
        let Some(append) = put.append.filter(|_| put.status.is_stored()) else {
            return Err(PopError::new(
                response_code::SYSTEM_ERROR,
                format!("cannot store the checkpoint: {}", put.status.as_str()),
            ));
        };
        ck.revive_offset = append.queue_offset;
        tables.pop.checkpoints().insert(ck);
    }
    ack_offsets(tables, &old, &[offset]).await?;
    Ok(Changed {
        pop_time: now,
        invisible_time,
        revive_qid,
    })
}

fn gone() -> PopError {
    PopError::new(
        response_code::NO_MESSAGE,
        "the message is acked or its invisible time is over",
    )
}
