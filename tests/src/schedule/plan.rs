//! What a seed says to do: the faults of each episode, their targets, start times
//! and durations. Pure: no process is touched here.
//!
//! Episode `i` of seed `s` for a group kind is drawn from its own ChaCha8 stream
//! (key: `s` and the kind; stream number: `i`), so it is the same whatever came
//! before it and however long the run is: a window of episodes of a long run replays
//! on its own, and a seed found failing in an hour-long run needs only the episodes
//! around the failure. ChaCha8's output is fixed by its specification and the ranges
//! are mapped here (not by a library's sampling code, which may change between
//! versions), so a seed names the same schedule on every machine; a test pins a few.

use std::fmt;
use std::time::Duration;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The replication setup under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupKind {
    /// A SYNC_MASTER and its SLAVE (classic HA), with one name server.
    Classic,
    /// Three brokers under three controllers (each in a name server), with
    /// `allAckInSyncStateSet=true`.
    Controller,
}

impl GroupKind {
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Classic => "classic",
            GroupKind::Controller => "controller",
        }
    }

    pub fn parse(name: &str) -> Option<GroupKind> {
        match name {
            "classic" => Some(GroupKind::Classic),
            "controller" => Some(GroupKind::Controller),
            _ => None,
        }
    }

    /// Brokers in the group.
    pub fn brokers(self) -> usize {
        match self {
            GroupKind::Classic => 2,
            GroupKind::Controller => 3,
        }
    }

    /// Name servers (in controller mode each runs a controller).
    pub fn coordinators(self) -> usize {
        match self {
            GroupKind::Classic => 1,
            GroupKind::Controller => 3,
        }
    }

    fn key_byte(self) -> u8 {
        match self {
            GroupKind::Classic => 1,
            GroupKind::Controller => 2,
        }
    }
}

/// Whom a fault hits, by role at the moment it is injected: roles move as masters
/// are elected, and a schedule that says "the master" means whoever it is then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Master,
    /// The n-th slave (modulo their number) in broker order.
    Slave(u8),
    /// The n-th name server (modulo their number); in controller mode, its controller.
    Coordinator(u8),
    /// The controller leading the Raft quorum (the name server in a classic group).
    CoordinatorLeader,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Master => write!(f, "master"),
            Target::Slave(n) => write!(f, "slave{n}"),
            Target::Coordinator(n) => write!(f, "namesrv{n}"),
            Target::CoordinatorLeader => write!(f, "controller-leader"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// SIGKILL; started again on the same store when the fault ends.
    Kill,
    /// SIGSTOP; SIGCONT when the fault ends.
    Pause,
    /// The host's link down (`ip link`): every packet to and from it dropped.
    Partition,
    /// SIGKILL of a name server (and its controller); started again at the end.
    CoordinatorKill,
    /// Stopped and started again at once: SIGTERM (clean) or SIGKILL.
    Restart { clean: bool },
    /// The store's file system filled to the last byte; freed at the end.
    DiskFull,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::Kill => "kill-9",
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::CoordinatorKill => "namesrv-kill-9",
            FaultKind::Restart { clean: true } => "restart",
            FaultKind::Restart { clean: false } => "restart-9",
            FaultKind::DiskFull => "disk-full",
        })
    }
}

/// One fault: injected at `start` after the episode begins, healed `duration` later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub target: Target,
    pub start: Duration,
    pub duration: Duration,
}

impl Fault {
    pub fn end(&self) -> Duration {
        self.start + self.duration
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", secs(self.start), self.kind, self.target)?;
        if !self.duration.is_zero() {
            write!(f, " for {}", secs(self.duration))?;
        }
        Ok(())
    }
}

fn secs(d: Duration) -> String {
    format!("{}.{:03}s", d.as_secs(), d.subsec_millis())
}

/// The faults of one episode, and the quiet time after the group is healthy again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Episode {
    pub index: u32,
    pub faults: Vec<Fault>,
    pub quiet: Duration,
}

impl Episode {
    /// When the last fault is healed, from the episode's start.
    pub fn healed(&self) -> Duration {
        self.faults.iter().map(Fault::end).max().unwrap_or_default()
    }
}

impl fmt::Display for Episode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "episode {}:", self.index)?;
        for (i, fault) in self.faults.iter().enumerate() {
            write!(f, "{} {fault}", if i == 0 { "" } else { ";" })?;
        }
        write!(f, "; then quiet {}", secs(self.quiet))
    }
}

/// Draws from one episode's stream.
struct Draw(ChaCha8Rng);

impl Draw {
    fn new(kind: GroupKind, seed: u64, index: u32) -> Draw {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8] = kind.key_byte();
        let mut rng = ChaCha8Rng::from_seed(key);
        rng.set_stream(u64::from(index));
        Draw(rng)
    }

    /// A number below `n` (the modulo bias is below 2^-50 for the small `n` used).
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(low + self.below(high - low + 1))
    }

    fn weighted<T: Copy>(&mut self, table: &[(u64, T)]) -> T {
        let total: u64 = table.iter().map(|(w, _)| w).sum();
        let mut pick = self.below(total);
        for &(weight, value) in table {
            if pick < weight {
                return value;
            }
            pick -= weight;
        }
        unreachable!("pick < total")
    }
}

const KINDS: &[(u64, FaultKind)] = &[
    (18, FaultKind::Kill),
    (20, FaultKind::Pause),
    (24, FaultKind::Partition),
    (10, FaultKind::CoordinatorKill),
    (8, FaultKind::Restart { clean: false }),
    (4, FaultKind::Restart { clean: true }),
    (16, FaultKind::DiskFull),
];

fn broker(d: &mut Draw, kind: GroupKind, master_percent: u64) -> Target {
    if d.chance(master_percent) {
        Target::Master
    } else {
        Target::Slave(d.below(kind.brokers() as u64 - 1) as u8)
    }
}

fn coordinator(d: &mut Draw, kind: GroupKind) -> Target {
    if kind == GroupKind::Controller && d.chance(40) {
        Target::CoordinatorLeader
    } else {
        Target::Coordinator(d.below(kind.coordinators() as u64) as u8)
    }
}

fn target(d: &mut Draw, kind: GroupKind, fault: FaultKind) -> Target {
    match fault {
        FaultKind::Kill | FaultKind::DiskFull => broker(d, kind, 50),
        FaultKind::Restart { .. } => broker(d, kind, 75),
        FaultKind::CoordinatorKill => coordinator(d, kind),
        FaultKind::Pause | FaultKind::Partition => {
            if d.chance(15) {
                coordinator(d, kind)
            } else {
                broker(d, kind, 50)
            }
        }
    }
}

/// Short faults end before a broker is declared dead (3 s heartbeats in the groups
/// under test), medium ones straddle that, long ones outlast an election.
fn duration(d: &mut Draw) -> Duration {
    match d.weighted(&[(35, 0), (45, 1), (20, 2)]) {
        0 => d.millis(300, 2_500),
        1 => d.millis(3_000, 8_000),
        _ => d.millis(8_000, 16_000),
    }
}

/// Episode `index` of `seed` for a group of `kind`.
pub fn episode(kind: GroupKind, seed: u64, index: u32) -> Episode {
    let mut d = Draw::new(kind, seed, index);
    let count = d.weighted(&[(50, 1), (35, 2), (15, 3)]);
    let mut faults: Vec<Fault> = Vec::with_capacity(count);
    for _ in 0..count {
        let fault = d.weighted(KINDS);
        let target = target(&mut d, kind, fault);
        // Often right after another fault heals: a link back up, a process thawed
        // or restarted, when state is being caught up, is where races live.
        let start = if !faults.is_empty() && d.chance(40) {
            let earlier = faults[d.below(faults.len() as u64) as usize];
            earlier.end() + d.millis(0, 300)
        } else {
            d.millis(500, 8_000)
        };
        let duration = match fault {
            FaultKind::Restart { .. } => Duration::ZERO,
            _ => duration(&mut d),
        };
        faults.push(Fault {
            kind: fault,
            target,
            start,
            duration,
        });
    }
    faults.sort_by_key(|f| f.start);
    Episode {
        index,
        faults,
        quiet: d.millis(1_000, 4_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_names_the_same_episodes_every_time() {
        for kind in [GroupKind::Classic, GroupKind::Controller] {
            for seed in [0, 1, 42, u64::MAX] {
                for index in 0..20 {
                    assert_eq!(episode(kind, seed, index), episode(kind, seed, index));
                }
            }
        }
    }

    #[test]
    fn seeds_kinds_and_episodes_draw_apart() {
        let e = |kind, seed, index| episode(kind, seed, index).to_string();
        let first = e(GroupKind::Controller, 1, 0);
        assert_ne!(first, e(GroupKind::Controller, 2, 0));
        assert_ne!(first, e(GroupKind::Controller, 1, 1));
        assert_ne!(
            first.replace("episode 0", ""),
            e(GroupKind::Classic, 1, 0).replace("episode 0", "")
        );
    }

    #[test]
    fn episodes_stay_within_their_bounds() {
        for seed in 0..200 {
            for kind in [GroupKind::Classic, GroupKind::Controller] {
                let ep = episode(kind, seed, seed as u32 % 7);
                assert!((1..=3).contains(&ep.faults.len()), "{ep}");
                assert!(ep.faults.windows(2).all(|w| w[0].start <= w[1].start));
                for f in &ep.faults {
                    assert!(f.duration <= Duration::from_secs(16), "{ep}");
                    assert!(f.start <= Duration::from_secs(50), "{ep}");
                    let restart = matches!(f.kind, FaultKind::Restart { .. });
                    assert_eq!(restart, f.duration.is_zero(), "{ep}");
                    match f.target {
                        Target::Slave(n) => assert!((n as usize) < kind.brokers() - 1),
                        Target::Coordinator(n) => assert!((n as usize) < kind.coordinators()),
                        Target::CoordinatorLeader => assert_eq!(kind, GroupKind::Controller),
                        Target::Master => {}
                    }
                }
            }
        }
    }

    /// The schedules the regression list names must not change under it: a change
    /// to the generator shows here first, and then the list's seeds need a review.
    #[test]
    fn pinned_episodes() {
        let text = |kind, seed, index| episode(kind, seed, index).to_string();
        assert_eq!(
            text(GroupKind::Classic, 3, 0),
            "episode 0: 5.489s partition slave0 for 0.901s; 6.662s restart master; \
             then quiet 3.042s"
        );
        assert_eq!(
            text(GroupKind::Controller, 3, 1),
            "episode 1: 1.906s pause master for 9.386s; 11.490s kill-9 master for 0.365s; \
             then quiet 2.780s"
        );
        assert_eq!(
            text(GroupKind::Classic, 1, 0),
            "episode 0: 2.550s namesrv-kill-9 namesrv0 for 0.832s; then quiet 3.461s"
        );
    }
}
