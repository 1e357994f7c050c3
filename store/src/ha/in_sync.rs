//! Controller mode, on a master: the replicas a put waits for
//! (`allAckInSyncStateSet`; docs/controller.md#syncstateset), and which replica may
//! join them (RocketMQ `AutoSwitchHAService.maybeExpandInSyncStateSet`, confirm
//! offset).
//!
//! A put waits for the **agreed** members (the SyncStateSet the controller holds)
//! and for the **joining** ones: replicas this master decided to add, from the
//! moment it decided, before the controller answers. While a change is in flight the
//! set a put waits for is therefore a superset of both the old and the proposed
//! set, and whichever of the two the controller ends up with, an election from it
//! finds every acknowledged message.
//!
//! A replica joins only when it acknowledged the **confirm offset**: the highest
//! end offset this master acknowledged to a producer (or, where puts do not wait,
//! everything written). The decision and the puts' checks exclude each other (a
//! write lock against their read lock), so no put is acknowledged without a
//! replica that joins at the same moment.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::Notify;
use vostok_remoting::support::sync::RwLockExt;

use super::state::SlaveLink;

#[derive(Default)]
struct Members {
    /// The other members of the SyncStateSet the controller agreed to.
    agreed: Vec<i64>,
    /// Replicas that joined here, not (known to be) agreed by the controller yet.
    joining: Vec<i64>,
}

impl Members {
    fn contains(&self, id: i64) -> bool {
        self.agreed.contains(&id) || self.joining.contains(&id)
    }
}

pub(crate) struct InSync {
    members: RwLock<Members>,
    /// The highest end offset acknowledged under `members` since this broker became
    /// master (starting at its max offset then: the start of its epoch).
    confirm: AtomicI64,
    /// Signalled when a replica joins: the broker asks the controller at once.
    pub(crate) joined: Notify,
}

impl Default for InSync {
    fn default() -> Self {
        InSync {
            members: RwLock::default(),
            confirm: AtomicI64::new(0),
            joined: Notify::new(),
        }
    }
}

impl InSync {
    /// True when every member, agreed or joining, acknowledged `end` over one of
    /// `links`; `end` is then acknowledged, and a replica joins only holding it.
    pub(crate) fn all_have(&self, links: &[Arc<SlaveLink>], end: i64) -> bool {
        let members = self.members.read_locked();
        let held = members.agreed.iter().chain(&members.joining).all(|id| {
            links
                .iter()
                .any(|l| l.slave_id.load(Ordering::Acquire) == *id && l.acked() >= end)
        });
        if held {
            // Under the read lock: a replica joining sees it.
            self.confirm.fetch_max(end, Ordering::AcqRel);
        }
        held
    }

    pub(crate) fn confirm_offset(&self) -> i64 {
        self.confirm.load(Ordering::Acquire)
    }

    /// This broker becomes master with `max_offset` in its log: every byte of it
    /// may have been acknowledged (by this or an earlier master).
    pub(crate) fn restart(&self, max_offset: i64) {
        let mut members = self.members.write_locked();
        members.joining.clear();
        self.confirm.store(max_offset, Ordering::Release);
    }

    /// No longer a master: nobody is joining.
    pub(crate) fn clear_joining(&self) {
        self.members.write_locked().joining.clear();
    }

    /// The controller's SyncStateSet, `others` without this broker: they are agreed,
    /// and no longer joining.
    pub(crate) fn set_agreed(&self, others: Vec<i64>) {
        let mut members = self.members.write_locked();
        members.joining.retain(|id| !others.contains(id));
        members.agreed = others;
    }

    pub(crate) fn joining(&self) -> Vec<i64> {
        self.members.read_locked().joining.clone()
    }

    /// Puts stop waiting for `ids`: the controller is known not to hold them.
    pub(crate) fn forget_joining(&self, ids: &[i64]) {
        self.members
            .write_locked()
            .joining
            .retain(|id| !ids.contains(id));
    }

    /// Replica `id`, which acknowledged `acked`, joins if it is not a member yet and
    /// holds both the confirm offset and `floor` (what must be held whatever was
    /// acknowledged: everything written, when puts do not wait); the confirm offset
    /// it was admitted at.
    pub(crate) fn try_admit(&self, id: i64, acked: i64, floor: i64) -> Option<i64> {
        // Most reports come from members, or from replicas still behind.
        {
            let members = self.members.read_locked();
            if members.contains(id) || acked < self.confirm_offset().max(floor) {
                return None;
            }
        }
        let mut members = self.members.write_locked();
        // No put passes its check while this lock is held: the confirm offset read
        // now covers every put acknowledged without this replica.
        let confirm = self.confirm_offset().max(floor);
        if members.contains(id) || acked < confirm {
            return None;
        }
        members.joining.push(id);
        drop(members);
        self.joined.notify_one();
        Some(confirm)
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    fn link(id: i64, acked: i64) -> Arc<SlaveLink> {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let link = SlaveLink::new(addr);
        link.slave_id.store(id, Ordering::Release);
        link.ack.store(acked, Ordering::Release);
        link.sent.store(acked, Ordering::Release);
        Arc::new(link)
    }

    #[test]
    fn a_replica_joins_only_holding_every_acknowledged_put() {
        let s = InSync::default();
        s.restart(1_000);
        // Alone: puts pass at once and raise the confirm offset.
        assert!(s.all_have(&[], 1_500));
        assert_eq!(s.confirm_offset(), 1_500);
        // Caught up a while ago is not enough: 1_400 < 1_500.
        assert_eq!(s.try_admit(2, 1_400, i64::MIN), None);
        assert!(s.joining().is_empty());
        assert_eq!(s.try_admit(2, 1_500, i64::MIN), Some(1_500));
        assert_eq!(s.joining(), vec![2]);
        // From now on puts wait for the joining replica, before any controller answer.
        assert!(!s.all_have(&[link(2, 1_500)], 1_600));
        assert_eq!(s.confirm_offset(), 1_500);
        assert!(s.all_have(&[link(2, 1_600)], 1_600));
        // A member does not join twice.
        assert_eq!(s.try_admit(2, 2_000, i64::MIN), None);
    }

    #[test]
    fn the_epoch_start_and_the_floor_bound_the_confirm_offset() {
        let s = InSync::default();
        s.restart(1_000);
        // Below the start of this master's epoch: it may miss acknowledged messages.
        assert_eq!(s.try_admit(2, 999, i64::MIN), None);
        // Puts that do not wait: everything written counts.
        assert_eq!(s.try_admit(2, 1_000, 1_200), None);
        assert_eq!(s.try_admit(2, 1_200, 1_200), Some(1_200));
    }

    #[test]
    fn agreement_and_forgetting_end_a_join() {
        let s = InSync::default();
        s.restart(0);
        s.try_admit(2, 0, i64::MIN).unwrap();
        s.try_admit(3, 0, i64::MIN).unwrap();
        s.set_agreed(vec![2]);
        assert_eq!(s.joining(), vec![3]);
        // Agreed members are waited for as joining ones were.
        assert!(!s.all_have(&[link(2, 10)], 10));
        s.forget_joining(&[3]);
        assert!(s.joining().is_empty());
        assert!(s.all_have(&[link(2, 10)], 10));
        // A new role starts with nobody joining.
        s.try_admit(3, 10, i64::MIN).unwrap();
        s.clear_joining();
        assert!(s.joining().is_empty());
    }
}
