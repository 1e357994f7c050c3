//! A randomized fault schedule in the Jepsen style, against a replicated group on
//! network-namespace hosts ([`crate::netns`]): a seed picks, episode after episode,
//! among kill -9, SIGSTOP/SIGCONT, link cut and heal, name server (controller)
//! kills, restarts and a full disk, while SDK producers log every SEND_OK; after the
//! last heal a checker reads every queue on every replica and reports what was
//! acknowledged but is missing, duplicated keys, queue offsets where replicas hold
//! different messages, and how long writes were unavailable.
//!
//! | module | role |
//! |---|---|
//! | `plan` | the schedule a seed names (pure, reproducible) |
//! | `group` (+ `faults`) | the classic or controller-mode group and its roles; the faults and their heals |
//! | `disk` | each broker's store on its own tmpfs, filled to make its disk full |
//! | `producer` | paced SDK producers and the SEND_OK log |
//! | `checker` | reading the replicas and comparing them with the log and each other |
//! | `report` | unavailability figures and the run's report |
//! | `run` | playing the episodes |
//!
//! The workspace tests run the seeds of `tests/chaos/regressions.txt`
//! (`tests/tests/chaos_schedule.rs`); the chaos suite (`tests/chaos`) runs long
//! schedules on the release binaries. Needs root, as every [`crate::netns`] test.

mod checker;
mod disk;
mod group;
mod plan;
mod producer;
mod report;
mod run;

use std::ops::Range;

pub use checker::{Check, Replica};
pub use plan::{episode, Episode, Fault, FaultKind, GroupKind, Target};
pub use producer::Ack;
pub use report::{Availability, EpisodeRecord, Report};
pub use run::{run, Settings};

/// One entry of the regression list: a group kind, a seed and the episodes to play.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regression {
    pub kind: GroupKind,
    pub seed: u64,
    pub episodes: Range<u32>,
}

/// Parses the regression list: one `<classic|controller> <seed> <first>..<end>` a
/// line; `#` starts a comment.
pub fn regressions(text: &str) -> Result<Vec<Regression>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let bad = || {
            format!(
                "line {}: `{line}` is not `<group> <seed> <first>..<end>`",
                n + 1
            )
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [kind, seed, episodes] = fields[..] else {
            return Err(bad());
        };
        let kind = GroupKind::parse(kind).ok_or_else(bad)?;
        let seed = seed.parse().map_err(|_| bad())?;
        let (first, end) = episodes.split_once("..").ok_or_else(bad)?;
        let episodes = first.parse().map_err(|_| bad())?..end.parse().map_err(|_| bad())?;
        if episodes.is_empty() {
            return Err(bad());
        }
        out.push(Regression {
            kind,
            seed,
            episodes,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regression_list_parses() {
        let list = regressions(
            "# a comment\n\nclassic 7 0..3\ncontroller 12 40..42 # found in a long run\n",
        )
        .unwrap();
        assert_eq!(
            list,
            vec![
                Regression {
                    kind: GroupKind::Classic,
                    seed: 7,
                    episodes: 0..3
                },
                Regression {
                    kind: GroupKind::Controller,
                    seed: 12,
                    episodes: 40..42
                },
            ]
        );
        assert!(regressions("classic 7").is_err());
        assert!(regressions("cluster 7 0..1").is_err());
        assert!(regressions("classic 7 3..3").is_err());
    }

    #[test]
    fn the_committed_list_parses() {
        let list = regressions(include_str!("../../chaos/regressions.txt")).unwrap();
        assert!(!list.is_empty());
    }
}
