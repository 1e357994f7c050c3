//! Start-up: the live checkpoints rebuilt from the revive queues (docs/pop.md#restart);
//! again on a controller-mode promotion ([`PopState::reload`]).
//!
//! Each revive queue is read from its watermark (the offset of group
//! `CID_RMQ_SYS_REVIVE_GROUP` on it): every checkpoint record goes into the table, every
//! ack record sets its bits, and a checkpoint with every bit set is dropped. What is
//! left is exactly what was popped and not acked nor revived before the stop. A
//! group's consumer offset on a popped queue is raised past every replayed checkpoint,
//! in case the offsets file was older than the pops.

use std::collections::HashMap;

use tracing::{info, warn};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::pop::REVIVE_GROUP;
use vostok_store::{GetMessageStatus, MessageStore};

use super::checkpoint::CheckpointTable;
use super::journal::{self, JournalRecord};
use super::PopState;
use crate::state::offset::ConsumerOffsetManager;

impl PopState {
    /// A promoted slave's checkpoints (docs/controller.md#role-changes): its table holds
    /// what it replayed at start, while the old master's pops and acks since came by
    /// replication into the revive queues; so the table is dropped and replayed.
    /// Blocking, like [`PopState::replay`]; run it before POP requests are served.
    pub(crate) fn reload(&self, store: &MessageStore, offsets: &ConsumerOffsetManager) {
        *self.checkpoints() = CheckpointTable::default();
        self.replay(store, offsets);
    }

    /// Blocking (reads the store): run it before serving, off the async runtime.
    pub(crate) fn replay(&self, store: &MessageStore, offsets: &ConsumerOffsetManager) {
        let mut records = 0usize;
        let mut skipped = 0usize;
        let mut raised: HashMap<(String, String, i32), i64> = HashMap::new();
        for qid in 0..self.revive_queue_num {
            let mut offset = offsets.query(REVIVE_GROUP, &self.revive_topic, qid).max(0);
            loop {
                let result =
                    store.get_message(&self.revive_topic, qid, offset, 256, i32::MAX, None);
                match result.status {
                    GetMessageStatus::Found => {}
                    GetMessageStatus::OffsetTooSmall | GetMessageStatus::OffsetOverflowBadly
                        if result.next_begin_offset != offset =>
                    {
                        offset = result.next_begin_offset;
                        continue;
                    }
                    _ => break,
                }
                for raw in &result.messages {
                    let Ok(msg) = MessageExt::decode(raw, false) else {
                        skipped += 1;
                        continue;
                    };
                    offset = msg.queue_offset + 1;
                    records += 1;
                    match journal::read(&msg) {
                        Some(JournalRecord::Checkpoint(ck)) => {
                            let k = (
                                ck.key.group.to_string(),
                                ck.key.topic.to_string(),
                                ck.key.queue_id,
                            );
                            let end = ck.end_offset();
                            raised
                                .entry(k)
                                .and_modify(|o| *o = (*o).max(end))
                                .or_insert(end);
                            if !ck.all_acked() {
                                self.checkpoints().insert(ck);
                            }
                        }
                        Some(JournalRecord::Ack { key, offsets }) => {
                            let mut table = self.checkpoints();
                            for o in offsets {
                                table.ack(&key, o);
                            }
                        }
                        None => skipped += 1,
                    }
                }
                if result.messages.is_empty() {
                    break;
                }
            }
        }
        for ((group, topic, queue_id), end) in raised {
            if offsets.query(&group, &topic, queue_id) < end {
                offsets.commit(&group, &topic, queue_id, end);
            }
        }
        if skipped > 0 {
            warn!(skipped, "unreadable revive records skipped");
        }
        let live = self.checkpoints().len();
        if records > 0 {
            info!(records, live, "POP checkpoints replayed");
        }
    }
}
