//! Which transactions are finished, kept so that no transaction commits twice, and
//! the op records (`RMQ_SYS_TRANS_OP_HALF_TOPIC`) that say so durably.
//!
//! A transaction is identified by its *root*: the queue offset of the original half
//! message, which every re-appended copy carries in `TRAN_PREPARED_QUEUE_OFFSET`. Op
//! records name roots, so an END_TRANSACTION for the original or for any copy finishes
//! the whole chain, and a second END_TRANSACTION for a finished root, or one racing
//! the first, is ignored.
//!
//! Finished roots (queue offsets of original half messages) are held as disjoint
//! ranges: transactions end roughly in the order they began, so the set stays a handful
//! of ranges whatever the rate. It is saved in `config/transactionState.json` with the
//! op-queue offset up to which op records are folded in; at start the op records after
//! that offset are read before the broker serves, so an END_TRANSACTION arriving first
//! is still judged against every outcome recorded before the restart. Ranges below the
//! half queue's min offset are dropped: their records are gone, nothing can name them.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tracing::warn;
use vostok_remoting::protocol::filter::tags_code;
use vostok_remoting::protocol::message::property::{self, push_pair, Properties};
use vostok_remoting::protocol::message::MessageExt;
use vostok_remoting::protocol::topic;
use vostok_remoting::support::config_file::ConfigFile;
use vostok_remoting::support::sync::MutexExt;
use vostok_remoting::support::time::now_millis;
use vostok_store::{GetMessageStatus, MessageInner, MessageStore};

use crate::config::BrokerConfig;

/// Tag of op records.
const OP_TAG: &str = "d";

/// The root of a half record: its original offset if it is a check copy, else its own.
pub(crate) fn root_of(properties: &Properties, queue_offset: i64) -> i64 {
    properties
        .get(property::TRANSACTION_PREPARED_QUEUE_OFFSET)
        .and_then(|v| v.parse().ok())
        .unwrap_or(queue_offset)
}

/// Disjoint half-open ranges `[start, end)` of `i64`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RangeSet(BTreeMap<i64, i64>);

impl RangeSet {
    pub(crate) fn contains(&self, x: i64) -> bool {
        self.0
            .range(..=x)
            .next_back()
            .is_some_and(|(_, end)| x < *end)
    }

    pub(crate) fn insert(&mut self, x: i64) {
        if self.contains(x) {
            return;
        }
        let mut start = x;
        let mut end = x.saturating_add(1);
        // Join a range ending at x, and one starting at x + 1.
        if let Some((&s, &e)) = self.0.range(..x).next_back() {
            if e == x {
                start = s;
                self.0.remove(&s);
            }
        }
        if let Some(e) = self.0.remove(&end) {
            end = e;
        }
        self.0.insert(start, end);
    }

    /// Forgets everything below `min`.
    pub(crate) fn prune_below(&mut self, min: i64) {
        let mut keep = self.0.split_off(&min);
        // The last range starting below `min` may reach past it.
        if let Some((_, &end)) = self.0.iter().next_back() {
            if end > min {
                keep.insert(min, end);
            }
        }
        self.0 = keep;
    }

    pub(crate) fn ranges(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.0.iter().map(|(s, e)| (*s, *e))
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Persisted {
    /// Op records before this queue offset are folded into `finished`.
    op_offset: i64,
    finished: Vec<(i64, i64)>,
}

#[derive(Default)]
struct State {
    finished: RangeSet,
    /// Roots whose END_TRANSACTION is being applied right now.
    in_progress: HashSet<i64>,
    op_offset: i64,
    dirty: bool,
}

pub(crate) struct TransactionState {
    file: ConfigFile,
    state: Mutex<State>,
}

/// The right to end one transaction; released unless [`Claim::finish`] is called.
pub(crate) struct Claim<'a> {
    owner: &'a TransactionState,
    root: i64,
    finished: bool,
}

impl Claim<'_> {
    /// The outcome is stored: the root is finished for good.
    pub(crate) fn finish(mut self) {
        self.owner.mark_finished([self.root]);
        self.finished = true;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut state = self.owner.lock();
        state.in_progress.remove(&self.root);
    }
}

impl TransactionState {
    pub(crate) fn load(config: &BrokerConfig) -> Self {
        let file = ConfigFile::new(config.config_dir().join("transactionState.json"));
        let persisted: Persisted = file
            .load(|bytes| serde_json::from_slice(bytes).ok())
            .unwrap_or_default();
        let mut finished = RangeSet::default();
        for (start, end) in persisted.finished {
            if start < end {
                finished.0.insert(start, end);
            }
        }
        TransactionState {
            file,
            state: Mutex::new(State {
                finished,
                op_offset: persisted.op_offset.max(0),
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.locked()
    }

    /// Ranges of finished roots held (for the memory account).
    pub(crate) fn finished_ranges(&self) -> usize {
        self.lock().finished.len()
    }

    pub(crate) fn is_finished(&self, root: i64) -> bool {
        self.lock().finished.contains(root)
    }

    /// Claims `root` for an END_TRANSACTION; `None` when it is finished or being ended.
    pub(crate) fn claim(&self, root: i64) -> Option<Claim<'_>> {
        let mut state = self.lock();
        if state.finished.contains(root) || !state.in_progress.insert(root) {
            return None;
        }
        Some(Claim {
            owner: self,
            root,
            finished: false,
        })
    }

    pub(crate) fn mark_finished(&self, roots: impl IntoIterator<Item = i64>) {
        let mut state = self.lock();
        for root in roots {
            state.finished.insert(root);
        }
        state.dirty = true;
    }

    /// Where to read op records from next.
    pub(crate) fn op_offset(&self) -> i64 {
        self.lock().op_offset
    }

    /// Op records up to `offset` (exclusive) are folded in.
    pub(crate) fn advance_op_offset(&self, offset: i64) {
        let mut state = self.lock();
        if offset > state.op_offset {
            state.op_offset = offset;
            state.dirty = true;
        }
    }

    /// Forgets roots below the half queue's min offset.
    pub(crate) fn prune_below(&self, min: i64) {
        let mut state = self.lock();
        let before = state.finished.len();
        state.finished.prune_below(min);
        if state.finished.len() != before {
            state.dirty = true;
        }
    }

    /// Records that the transaction with root `root` is finished, in memory and as an
    /// op record; false when the op record could not be stored.
    pub(crate) async fn write_op(
        &self,
        store: &MessageStore,
        store_host: SocketAddr,
        root: i64,
    ) -> bool {
        self.mark_finished([root]);
        let mut properties = String::new();
        push_pair(&mut properties, property::TAGS, OP_TAG);
        let body = bytes::Bytes::from(root.to_string());
        let msg = MessageInner {
            tags_code: tags_code(Some(OP_TAG)),
            born_timestamp: now_millis(),
            ..MessageInner::new(topic::TRANS_OP_HALF_TOPIC, 0, body, properties, store_host)
        };
        let status = store.put_message(msg).await.status;
        if !status.is_stored() {
            warn!(root, ?status, "cannot write transaction op record");
        }
        status.is_stored()
    }

    /// Folds the op records written since the last call into the finished set. The
    /// broker calls it once before serving, so outcomes recorded before a restart are
    /// known to the first END_TRANSACTION.
    pub(crate) fn catch_up(&self, store: &MessageStore) {
        let mut op_offset = self.op_offset();
        loop {
            let result = store.get_message(
                topic::TRANS_OP_HALF_TOPIC,
                0,
                op_offset,
                256,
                i32::MAX,
                None,
            );
            match result.status {
                GetMessageStatus::Found => {}
                GetMessageStatus::OffsetTooSmall | GetMessageStatus::OffsetOverflowBadly => {
                    op_offset = result.next_begin_offset;
                    continue;
                }
                _ => break,
            }
            for record in &result.messages {
                let Ok(op) = MessageExt::decode(record, false) else {
                    continue;
                };
                let roots = std::str::from_utf8(&op.body)
                    .unwrap_or("")
                    .split(',')
                    .filter_map(|s| s.trim().parse::<i64>().ok());
                self.mark_finished(roots);
                op_offset = op.queue_offset + 1;
            }
            if result.messages.is_empty() {
                break;
            }
        }
        self.advance_op_offset(op_offset);
    }

    pub(crate) fn persist(&self) {
        if !self.lock().dirty {
            return;
        }
        let written = self.file.persist_with(|| {
            let mut state = self.lock();
            state.dirty = false;
            serde_json::to_vec(&Persisted {
                op_offset: state.op_offset,
                finished: state.finished.ranges().collect(),
            })
            .unwrap_or_default()
        });
        if let Err(e) = written {
            self.lock().dirty = true;
            warn!(file = %self.file.path().display(), error = %e, "cannot persist transaction state");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_prune() {
        let mut set = RangeSet::default();
        for x in [5, 3, 4, 10, 6, 11, 1] {
            set.insert(x);
        }
        assert_eq!(set.ranges().collect::<Vec<_>>(), [(1, 2), (3, 7), (10, 12)]);
        assert!(set.contains(6) && !set.contains(7) && !set.contains(2) && set.contains(11));
        set.insert(2);
        assert_eq!(set.ranges().collect::<Vec<_>>(), [(1, 7), (10, 12)]);
        set.prune_below(4);
        assert_eq!(set.ranges().collect::<Vec<_>>(), [(4, 7), (10, 12)]);
        set.prune_below(8);
        assert_eq!(set.ranges().collect::<Vec<_>>(), [(10, 12)]);
    }

    #[test]
    fn a_claim_excludes_others_until_released_or_finished() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = BrokerConfig::default();
        c.store.store_path_root_dir = dir.path().to_path_buf();
        let state = TransactionState::load(&c);
        let claim = state.claim(7).expect("first claim");
        assert!(state.claim(7).is_none(), "in progress");
        drop(claim);
        let claim = state.claim(7).expect("released after a failed end");
        claim.finish();
        assert!(state.claim(7).is_none(), "finished");
        state.advance_op_offset(3);
        state.persist();
        let reloaded = TransactionState::load(&c);
        assert!(reloaded.is_finished(7));
        assert_eq!(reloaded.op_offset(), 3);
    }
}
