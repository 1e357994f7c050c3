//! The SYNC_MASTER wait (RocketMQ `GroupTransferService`): puts waiting until a slave
//! acknowledged their end offset. The HA connections report acknowledgements; each
//! one answers every waiter at or below it, so one slave report serves a whole group
//! of puts, as a group commit does for the disk.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::oneshot;
use vostok_remoting::support::sync::MutexExt;

#[derive(Default)]
pub(crate) struct GroupTransfer {
    /// Highest offset any slave acknowledged (`push2SlaveMaxOffset`).
    push2slave: AtomicI64,
    /// (end offset, sequence) → the waiting put.
    waiters: Mutex<BTreeMap<(i64, u64), oneshot::Sender<()>>>,
    seq: AtomicU64,
}

impl GroupTransfer {
    pub(crate) fn push2slave(&self) -> i64 {
        self.push2slave.load(Ordering::Acquire)
    }

    /// A put that needs `offset` on a slave; `None` when a slave already has it.
    pub(crate) fn register(&self, offset: i64) -> Option<oneshot::Receiver<()>> {
        let mut waiters = self.waiters.locked();
        // Checked under the lock: an acknowledgement either sees this waiter or is seen here.
        if self.push2slave() >= offset {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        waiters.insert((offset, seq), tx);
        Some(rx)
    }

    /// A slave acknowledged everything below `ack`.
    pub(crate) fn on_ack(&self, ack: i64) {
        if self.push2slave.fetch_max(ack, Ordering::AcqRel) >= ack {
            return;
        }
        let mut waiters = self.waiters.locked();
        while let Some(entry) = waiters.first_entry() {
            if entry.key().0 > ack {
                break;
            }
            // A dropped receiver timed out already.
            let _ = entry.remove().send(());
        }
    }

    /// Drops the waiters that timed out (their receivers are gone).
    pub(crate) fn prune(&self) {
        self.waiters.locked().retain(|_, tx| !tx.is_closed());
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiters.locked().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_answers_every_waiter_at_or_below_it() {
        let g = GroupTransfer::default();
        let mut a = g.register(100).unwrap();
        let mut b = g.register(200).unwrap();
        let mut c = g.register(300).unwrap();
        g.on_ack(200);
        assert!(a.try_recv().is_ok());
        assert!(b.try_recv().is_ok());
        assert!(c.try_recv().is_err());
        assert_eq!(g.waiting(), 1);
        // An older ack changes nothing; a put below the ack does not wait.
        g.on_ack(150);
        assert_eq!(g.push2slave(), 200);
        assert!(g.register(180).is_none());
        drop(c);
        g.prune();
        assert_eq!(g.waiting(), 0);
    }
}
