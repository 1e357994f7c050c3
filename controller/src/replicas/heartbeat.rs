//! Which brokers are alive (RocketMQ `BrokerHeartbeatManager`): every broker sends
//! BROKER_HEARTBEAT to every controller each second, so the table is local to each
//! controller, never replicated, and a new Raft leader already knows who is alive.
//! Pure apart from its lock: callers pass `now` (ms).

use std::collections::HashMap;
use std::sync::Mutex;

use vostok_remoting::support::sync::MutexExt;

/// The last heartbeat of one broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveInfo {
    pub addr: String,
    pub last_ms: i64,
    pub timeout_ms: i64,
    /// The broker's last epoch, max commitlog offset and confirm offset.
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    /// `brokerElectionPriority`: lower wins among equals.
    pub priority: i32,
}

/// Heartbeats by (brokerName, brokerId).
pub struct BrokerHeartbeats {
    table: Mutex<HashMap<(String, i64), LiveInfo>>,
    /// `controllerHeartBeatTimeoutMills`, when a broker names none.
    default_timeout_ms: i64,
    /// A broker not heard of since start counts as alive for one timeout: a
    /// restarted controller must not depose every master at once.
    started_ms: i64,
}

impl BrokerHeartbeats {
    pub fn new(default_timeout_ms: i64, now: i64) -> Self {
        BrokerHeartbeats {
            table: Mutex::new(HashMap::new()),
            default_timeout_ms,
            started_ms: now,
        }
    }

    pub fn on_heartbeat(&self, broker_name: &str, broker_id: i64, mut info: LiveInfo) {
        if info.timeout_ms <= 0 {
            info.timeout_ms = self.default_timeout_ms;
        }
        self.table
            .locked()
            .insert((broker_name.to_owned(), broker_id), info);
    }

    pub fn get(&self, broker_name: &str, broker_id: i64) -> Option<LiveInfo> {
        self.table
            .locked()
            .get(&(broker_name.to_owned(), broker_id))
            .cloned()
    }

    pub fn is_alive(&self, broker_name: &str, broker_id: i64, now: i64) -> bool {
        match self.get(broker_name, broker_id) {
            Some(info) => now - info.last_ms < info.timeout_ms,
            None => now - self.started_ms < self.default_timeout_ms,
        }
    }

    /// Forgets a group's brokers (CLEAN_BROKER_DATA).
    pub fn remove(&self, broker_name: &str, ids: Option<&[i64]>) {
        self.table.locked().retain(|(name, id), _| {
            name != broker_name || ids.is_some_and(|ids| !ids.contains(id))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alive_until_the_timeout_and_unknown_only_during_the_grace() {
        let hb = BrokerHeartbeats::new(3000, 1000);
        assert!(hb.is_alive("b", 1, 3999));
        assert!(!hb.is_alive("b", 1, 4000));
        hb.on_heartbeat(
            "b",
            1,
            LiveInfo {
                last_ms: 5000,
                ..LiveInfo::default()
            },
        );
        assert!(hb.is_alive("b", 1, 7999));
        assert!(!hb.is_alive("b", 1, 8000));
        hb.remove("b", Some(&[1]));
        assert!(hb.get("b", 1).is_none());
    }
}
