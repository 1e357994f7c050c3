//! The keys that bound what a server holds, read by `mqbroker` and `mqnamesrv` alike
//! (docs/limits.md), and how their defaults are sized from the machine.
//!
//! | key | default | bounds |
//! |---|---|---|
//! | `maxMemoryBytes` | a share of the machine's memory (below) | the process's load-driven memory |
//! | `serverMaxConnections` | a quarter of the budget at 16 KiB a connection, 256–65,536 | connections; the oldest idle one is closed for a new one |
//! | `writeBufferHighWaterMark` | 4 MiB | bytes queued for one connection's socket before it stops being read |
//! | `writeBufferLowWaterMark` | 1 MiB | reading resumes below it |
//! | `writeStallTimeoutMillis` | 30,000 | how long a connection may stay stopped without its peer reading anything |
//! | `frameReadTimeoutMillis` | 30,000 | how long a peer has to finish a frame it started |
//!
//! `maxMemoryBytes` is the ceiling of the process's anonymous memory. Three quarters of
//! it is the [`MemoryBudget`] limit that buffers and tables may reserve (the rest is
//! for the program itself, its fixed tables and the allocator's slack); producers get
//! SYSTEM_BUSY past three fifths of it. Its default is a share of the machine's
//! memory: the smaller of the physical memory (`MemTotal` in `/proc/meminfo`) and the
//! cgroup's limit (`/sys/fs/cgroup/memory.max`, or `memory.limit_in_bytes` under
//! cgroup v1), a quarter for a broker (the page cache needs the rest for the
//! commitlog), an eighth for a name server.

use std::sync::Arc;
use std::time::Duration;

use crate::budget::MemoryBudget;
use crate::channel::ConnectionConfig;
use crate::config_key;
use crate::support::keys::{Millis, Num, Section, Table};

/// What one connection costs before it carries anything: its tasks, its tables'
/// entries and a small read buffer.
pub const CONNECTION_BYTES: usize = 16 * 1024;

/// When nothing can be read about the machine.
const FALLBACK_MACHINE_BYTES: u64 = 4 << 30;

/// The keys of the table above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// `maxMemoryBytes`; 0 sizes it from the machine.
    pub max_memory_bytes: u64,
    /// `serverMaxConnections`; 0 sizes it from the budget.
    pub max_connections: usize,
    /// `writeBufferHighWaterMark`.
    pub write_high_water: usize,
    /// `writeBufferLowWaterMark`.
    pub write_low_water: usize,
    /// `writeStallTimeoutMillis`.
    pub write_stall_timeout: Duration,
    /// `frameReadTimeoutMillis`.
    pub frame_read_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_memory_bytes: 0,
            max_connections: 0,
            write_high_water: 4 << 20,
            write_low_water: 1 << 20,
            write_stall_timeout: Duration::from_secs(30),
            frame_read_timeout: Duration::from_secs(30),
        }
    }
}

/// The machine's memory as this process may use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineMemory {
    /// `MemTotal`.
    pub physical: Option<u64>,
    /// The cgroup's limit, when there is one.
    pub cgroup: Option<u64>,
}

impl MachineMemory {
    pub fn read() -> MachineMemory {
        let physical = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| parse_meminfo(&text));
        let cgroup = [
            "/sys/fs/cgroup/memory.max",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        ]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| parse_cgroup_limit(&text));
        MachineMemory { physical, cgroup }
    }

    /// The smaller of the two readings.
    pub fn usable(&self) -> u64 {
        match (self.physical, self.cgroup) {
            (Some(p), Some(c)) => p.min(c),
            (Some(p), None) => p,
            (None, Some(c)) => c,
            (None, None) => FALLBACK_MACHINE_BYTES,
        }
    }
}

/// `MemTotal:  24683412 kB` in bytes.
fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// `max` (no limit) or a byte count; cgroup v1 writes a huge number for no limit.
fn parse_cgroup_limit(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes < 1 << 60).then_some(bytes)
}

/// The keys of the table above.
pub static KEYS: Table<ServerLimits> = Table {
    keys: &[
        config_key!("maxMemoryBytes", max_memory_bytes: Num, "ceiling of the process's memory; 0 sizes it from the machine (docs/limits.md)"),
        config_key!("serverMaxConnections", max_connections: Num, "connections at once; 0 sizes it from the memory budget"),
        config_key!("writeBufferHighWaterMark", write_high_water: Num, "bytes queued for one connection before it stops being read"),
        config_key!("writeBufferLowWaterMark", write_low_water: Num, "reading resumes below it"),
        config_key!("writeStallTimeoutMillis", write_stall_timeout: Millis, "how long a connection may stay stopped without its peer reading"),
        config_key!("frameReadTimeoutMillis", frame_read_timeout: Millis, "how long a peer has to finish a frame it started"),
    ],
    nested: &[],
};

impl Section for ServerLimits {
    fn table() -> &'static Table<Self> {
        &KEYS
    }
}

impl ServerLimits {
    /// The first key whose value cannot work, with the reason.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.write_high_water == 0 {
            return Err(("writeBufferHighWaterMark", "must be at least 1".into()));
        }
        if self.write_low_water > self.write_high_water {
            return Err((
                "writeBufferLowWaterMark",
                format!("above writeBufferHighWaterMark ({})", self.write_high_water),
            ));
        }
        if self.write_stall_timeout.is_zero() {
            return Err(("writeStallTimeoutMillis", "must be at least 1 ms".into()));
        }
        if self.frame_read_timeout.is_zero() {
            return Err(("frameReadTimeoutMillis", "must be at least 1 ms".into()));
        }
        if self.max_memory_bytes != 0 && self.max_memory_bytes < 16 << 20 {
            return Err(("maxMemoryBytes", "must be at least 16 MiB (or 0)".into()));
        }
        Ok(())
    }

    /// `maxMemoryBytes`, or `1/share` of the machine's memory when it is 0.
    pub fn memory_ceiling(&self, share: u64, machine: &MachineMemory) -> u64 {
        if self.max_memory_bytes != 0 {
            return self.max_memory_bytes;
        }
        (machine.usable() / share.max(1)).max(64 << 20)
    }

    /// The budget under a ceiling: a limit of 3/4 of it, a soft limit of 3/5.
    pub fn budget(ceiling: u64) -> Arc<MemoryBudget> {
        let ceiling = usize::try_from(ceiling).unwrap_or(usize::MAX);
        MemoryBudget::new(ceiling / 4 * 3, ceiling / 5 * 3)
    }

    /// `serverMaxConnections`, or what a quarter of `budget` holds.
    pub fn connections_for(&self, budget: &MemoryBudget) -> usize {
        if self.max_connections != 0 {
            return self.max_connections;
        }
        (budget.limit() / 4 / CONNECTION_BYTES).clamp(256, 65_536)
    }

    /// `base` with this config's per-connection bounds and `budget`.
    pub fn connection(
        &self,
        base: ConnectionConfig,
        budget: Arc<MemoryBudget>,
    ) -> ConnectionConfig {
        ConnectionConfig {
            budget,
            write_high_water: self.write_high_water,
            write_low_water: self.write_low_water,
            write_stall_timeout: self.write_stall_timeout,
            frame_read_timeout: self.frame_read_timeout,
            ..base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_apply_and_round_trip() {
        let mut limits = ServerLimits::default();
        assert!(limits.set_key("maxMemoryBytes", "536870912").unwrap());
        assert!(limits.set_key("serverMaxConnections", " 100 ").unwrap());
        assert!(limits.set_key("frameReadTimeoutMillis", "1500").unwrap());
        assert!(!limits.set_key("listenPort", "1").unwrap());
        assert!(limits.set_key("writeBufferHighWaterMark", "lots").is_err());
        assert_eq!(limits.frame_read_timeout, Duration::from_millis(1500));
        let mut back = ServerLimits::default();
        for (k, v) in limits.key_values() {
            assert!(back.set_key(&k, &v).unwrap(), "{k}");
        }
        assert_eq!(back, limits);
        limits.validate().unwrap();
        limits.write_low_water = limits.write_high_water + 1;
        assert_eq!(limits.validate().unwrap_err().0, "writeBufferLowWaterMark");
    }

    #[test]
    fn the_ceiling_is_a_share_of_the_smaller_reading() {
        let machine = MachineMemory {
            physical: Some(32 << 30),
            cgroup: Some(8 << 30),
        };
        let limits = ServerLimits::default();
        assert_eq!(limits.memory_ceiling(4, &machine), 2 << 30);
        assert_eq!(limits.memory_ceiling(8, &machine), 1 << 30);
        let set = ServerLimits {
            max_memory_bytes: 300 << 20,
            ..ServerLimits::default()
        };
        assert_eq!(set.memory_ceiling(4, &machine), 300 << 20);
        let budget = ServerLimits::budget(400 << 20);
        assert_eq!(budget.limit(), 300 << 20);
        assert_eq!(budget.soft_limit(), 240 << 20);
        assert_eq!(limits.connections_for(&budget), 4800);
        assert_eq!(
            limits.connections_for(&ServerLimits::budget(1 << 40)),
            65_536
        );
    }

    #[test]
    fn machine_readings_parse() {
        assert_eq!(
            parse_meminfo("MemTotal:       24683412 kB\nMemFree: 1 kB\n"),
            Some(24683412 * 1024)
        );
        assert_eq!(parse_cgroup_limit("max\n"), None);
        assert_eq!(parse_cgroup_limit("9223372036854771712\n"), None);
        assert_eq!(parse_cgroup_limit("1073741824\n"), Some(1 << 30));
        let m = MachineMemory::read();
        assert!(m.usable() > 0);
    }
}
