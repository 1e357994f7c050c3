//! What the HA service shares with the put path and the admin side: the slaves
//! connected to this master with their acknowledged offsets, the SYNC_MASTER waiters,
//! and the signal that new commitlog data is there to send; on a slave, the state of
//! its connection to the master.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Notify;
use tracing::info;
use vostok_remoting::support::sync::{MutexExt, RwLockExt};
use vostok_remoting::support::time::now_millis;

use super::delay::DelayHistogram;
use super::group_transfer::GroupTransfer;
use super::in_sync::InSync;

/// One slave connected to this master.
#[derive(Debug)]
pub(crate) struct SlaveLink {
    pub(crate) addr: SocketAddr,
    /// The slave's last report; -1 until its first.
    pub(crate) ack: AtomicI64,
    /// End of what this master sent on this connection (-1 before the transfer
    /// starts): a report counts as an acknowledgement only up to it, so a slave
    /// holding other bytes never acknowledges puts it did not receive.
    pub(crate) sent: AtomicI64,
    pub(crate) connected_ms: i64,
    pub(crate) last_report_ms: AtomicI64,
    /// Controller mode: the broker id from the slave's handshake (-1 before it).
    pub(crate) slave_id: AtomicI64,
    /// Controller mode: when the slave last acknowledged everything this master
    /// had at its previous report (0 = never): under load a slave is never level
    /// with the master's end, but one report behind it is caught up.
    pub(crate) caught_up_ms: AtomicI64,
    /// The master's end when the previous report arrived.
    pub(crate) max_at_last_report: AtomicI64,
    /// Where the transfer to this slave started (-1 before it starts).
    pub(crate) transfer_from: AtomicI64,
    /// Bytes sent to this slave per second.
    pub(crate) rate: ByteRate,
}

/// Bytes moved in the last whole second (Apache's `FlowMonitor`): a counter for the
/// current second and the total of the one before.
#[derive(Debug, Default)]
pub(crate) struct ByteRate {
    /// (the current second since the epoch, bytes in it, bytes in the second before)
    seconds: Mutex<(i64, i64, i64)>,
}

impl ByteRate {
    pub(crate) fn add(&self, bytes: i64, now_ms: i64) {
        let second = now_ms / 1000;
        let mut s = self.seconds.locked();
        if s.0 != second {
            let previous = if s.0 + 1 == second { s.1 } else { 0 };
            *s = (second, 0, previous);
        }
        s.1 += bytes;
    }

    /// Bytes in the last whole second before `now_ms`.
    pub(crate) fn per_second(&self, now_ms: i64) -> i64 {
        let second = now_ms / 1000;
        let s = self.seconds.locked();
        if s.0 == second {
            s.2
        } else if s.0 + 1 == second {
            s.1
        } else {
            0
        }
    }
}

impl SlaveLink {
    pub(crate) fn new(addr: SocketAddr) -> SlaveLink {
        SlaveLink {
            addr,
            ack: AtomicI64::new(-1),
            sent: AtomicI64::new(-1),
            connected_ms: now_millis(),
            last_report_ms: AtomicI64::new(0),
            slave_id: AtomicI64::new(-1),
            caught_up_ms: AtomicI64::new(0),
            max_at_last_report: AtomicI64::new(i64::MAX),
            transfer_from: AtomicI64::new(-1),
            rate: ByteRate::default(),
        }
    }

    /// What the slave acknowledged of what this connection sent it.
    pub(crate) fn acked(&self) -> i64 {
        let sent = self.sent.load(Ordering::Acquire);
        if sent < 0 {
            return -1;
        }
        self.ack.load(Ordering::Acquire).min(sent)
    }
}

/// A slave as the master sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaveInfo {
    pub addr: SocketAddr,
    /// Offset the slave acknowledged (-1 before its first report).
    pub ack_offset: i64,
    /// Bytes the slave is behind this master's end.
    pub behind_bytes: i64,
    /// Within `haMaxGapNotInSync`.
    pub in_sync: bool,
    pub connected_ms: i64,
    pub last_report_ms: i64,
    /// Controller mode: the slave's broker id (-1 = unknown).
    pub slave_id: i64,
    /// Controller mode: when it last had everything this master had (0 = never).
    pub caught_up_ms: i64,
    /// Where the transfer to it started (-1 before it starts).
    pub transfer_from: i64,
    /// Bytes sent to it in the last whole second.
    pub bytes_per_sec: i64,
}

/// This slave's connection to its master.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterLinkInfo {
    /// The master's HA address in use (`ip:port`).
    pub master_addr: Option<String>,
    pub connected: bool,
    /// When the last frame arrived (ms since the epoch; 0 = never).
    pub last_read_ms: i64,
    /// The last error that closed the connection.
    pub last_error: Option<String>,
    /// When the last offset report went to the master (ms since the epoch; 0 = never).
    pub last_write_ms: i64,
    /// Bytes received from the master in the last whole second.
    pub bytes_per_sec: i64,
}

#[derive(Default)]
pub(crate) struct HaState {
    pub(crate) group: GroupTransfer,
    links: Mutex<Vec<Arc<SlaveLink>>>,
    link_count: AtomicUsize,
    /// New commitlog data: wakes the connections' writers.
    pub(crate) new_data: Notify,
    /// Slave side.
    pub(crate) client_connected: AtomicBool,
    pub(crate) client_last_read_ms: AtomicI64,
    pub(crate) client_last_write_ms: AtomicI64,
    pub(crate) client_rate: ByteRate,
    pub(crate) client_master: RwLock<Option<String>>,
    pub(crate) client_error: RwLock<Option<String>>,
    /// The role, changeable at run time in controller mode (set from the config at open).
    pub(crate) replica: AtomicBool,
    pub(crate) sync_master: AtomicBool,
    /// Controller mode: this broker's id (sent in the slave handshake) and, on a
    /// master, the other members of its SyncStateSet, each of which must hold a put.
    pub(crate) self_id: AtomicI64,
    pub(crate) in_sync: InSync,
    /// Signalled on every acknowledgement (controller-mode waiters).
    pub(crate) acked: Notify,
    /// Slave side: the age of the newest record of each applied batch when it was
    /// applied (its master's store time to now), and the time from reading a batch
    /// to having applied it.
    pub(crate) apply_delay: DelayHistogram,
    pub(crate) apply_wait: DelayHistogram,
    /// Master side: how long each write to a slave's socket took (a slave that reads
    /// slowly fills the socket buffer and holds the writer back).
    pub(crate) send_block: DelayHistogram,
    /// Master side: the age of the newest record of each write that reached the
    /// commitlog's end, when the write completed.
    pub(crate) send_delay: DelayHistogram,
}

impl HaState {
    pub(crate) fn add_link(&self, addr: SocketAddr) -> Arc<SlaveLink> {
        let link = Arc::new(SlaveLink::new(addr));
        let mut links = self.links.locked();
        links.push(link.clone());
        self.link_count.store(links.len(), Ordering::Release);
        link
    }

    pub(crate) fn remove_link(&self, link: &Arc<SlaveLink>) {
        let mut links = self.links.locked();
        links.retain(|l| !Arc::ptr_eq(l, link));
        self.link_count.store(links.len(), Ordering::Release);
    }

    pub(crate) fn link_count(&self) -> usize {
        self.link_count.load(Ordering::Acquire)
    }

    /// After an append: wakes the writers if any slave is connected.
    pub(crate) fn on_append(&self) {
        if self.link_count() > 0 {
            self.new_data.notify_waiters();
        }
    }

    /// RocketMQ `isSlaveOK`: a slave is connected and the acknowledged offset is
    /// within `max_gap` of `master_end`.
    pub(crate) fn is_slave_ok(&self, master_end: i64, max_gap: i64) -> bool {
        self.link_count() > 0 && master_end - self.group.push2slave() < max_gap
    }

    pub(crate) fn slaves(&self, master_end: i64, max_gap: i64) -> Vec<SlaveInfo> {
        self.links
            .locked()
            .iter()
            .map(|l| {
                let ack = l.ack.load(Ordering::Acquire);
                let behind = if ack < 0 {
                    master_end
                } else {
                    master_end - ack
                };
                SlaveInfo {
                    addr: l.addr,
                    ack_offset: ack,
                    behind_bytes: behind.max(0),
                    in_sync: ack >= 0 && behind < max_gap,
                    connected_ms: l.connected_ms,
                    last_report_ms: l.last_report_ms.load(Ordering::Relaxed),
                    slave_id: l.slave_id.load(Ordering::Acquire),
                    caught_up_ms: l.caught_up_ms.load(Ordering::Acquire),
                    transfer_from: l.transfer_from.load(Ordering::Acquire),
                    bytes_per_sec: l.rate.per_second(now_millis()),
                }
            })
            .collect()
    }

    /// Controller mode: true when every other SyncStateSet member, joining ones
    /// included, acknowledged `end`.
    pub(crate) fn all_in_sync_have(&self, end: i64) -> bool {
        self.in_sync.all_have(&self.links.locked(), end)
    }

    /// Controller mode, on a master, after a report on `link`: the replica joins the
    /// SyncStateSet if it holds every acknowledged put (everything written when puts
    /// do not wait, `master_end`). Puts wait for it from now on; the broker asks the
    /// controller.
    pub(crate) fn maybe_admit(&self, link: &SlaveLink, master_end: i64) {
        let id = link.slave_id.load(Ordering::Acquire);
        if self.replica.load(Ordering::Acquire)
            || id <= 0
            || id == self.self_id.load(Ordering::Acquire)
        {
            return;
        }
        let floor = if self.sync_master.load(Ordering::Acquire) {
            i64::MIN
        } else {
            master_end
        };
        let acked = link.acked();
        if let Some(confirm) = self.in_sync.try_admit(id, acked, floor) {
            link.caught_up_ms.store(now_millis(), Ordering::Release);
            info!(
                slave = %link.addr,
                broker_id = id,
                acked,
                confirm_offset = confirm,
                "replica holds every acknowledged message: it joins the SyncStateSet, \
                 sends wait for it from now on"
            );
        }
    }

    pub(crate) fn master_link(&self) -> MasterLinkInfo {
        MasterLinkInfo {
            master_addr: self.client_master.read_locked().clone(),
            connected: self.client_connected.load(Ordering::Acquire),
            last_read_ms: self.client_last_read_ms.load(Ordering::Relaxed),
            last_error: self.client_error.read_locked().clone(),
            last_write_ms: self.client_last_write_ms.load(Ordering::Relaxed),
            bytes_per_sec: self.client_rate.per_second(now_millis()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_rate_is_the_last_whole_second() {
        let r = ByteRate::default();
        r.add(100, 5_000);
        r.add(50, 5_900);
        assert_eq!(r.per_second(5_950), 0, "the current second is not over");
        assert_eq!(r.per_second(6_100), 150);
        r.add(10, 6_200);
        assert_eq!(r.per_second(6_300), 150);
        assert_eq!(r.per_second(7_000), 10);
        assert_eq!(r.per_second(9_000), 0, "nothing moved lately");
    }
}
