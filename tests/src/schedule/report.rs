//! What a run found: the checker's verdict, how long writes were unavailable, and
//! the episodes that left something to look at.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::checker::Check;
use super::plan::{Episode, GroupKind};

/// Gaps between SEND_OKs at least this long count as time without writes.
const OUTAGE: Duration = Duration::from_secs(1);

/// One episode as it ran; times from the start of the run.
#[derive(Clone, Debug)]
pub struct EpisodeRecord {
    pub plan: Episode,
    /// When it started.
    pub began: Duration,
    /// When its first fault went in.
    pub faults_from: Duration,
    /// When its last fault was healed.
    pub healed: Duration,
    /// When the group was healthy again (`None`: not within the settle limit).
    pub settled: Option<Duration>,
    /// Faults skipped, processes that exited by themselves, remarks.
    pub notes: Vec<String>,
}

/// How long writes were unavailable.
#[derive(Clone, Debug, Default)]
pub struct Availability {
    /// Per episode, the longest gap between SEND_OKs that overlaps its faults.
    pub gaps: Vec<Duration>,
    /// Per episode, from its last heal to the next SEND_OK (`None`: none came).
    pub recoveries: Vec<Option<Duration>>,
    /// Gaps of a second or more, summed, over the whole run.
    pub without_send_ok: Duration,
    pub run: Duration,
}

impl Availability {
    /// From the SEND_OK times (sorted) and the episodes; `end` is when sending stopped.
    pub fn of(acks: &[Duration], episodes: &[EpisodeRecord], end: Duration) -> Availability {
        // Gaps as (from, to): between SEND_OKs, and from the last one to the end.
        let gaps: Vec<(Duration, Duration)> = acks
            .windows(2)
            .map(|w| (w[0], w[1]))
            .chain(acks.last().map(|&last| (last, end.max(last))))
            .collect();
        let mut availability = Availability {
            without_send_ok: gaps
                .iter()
                .map(|(from, to)| *to - *from)
                .filter(|gap| *gap >= OUTAGE)
                .sum(),
            run: end,
            ..Default::default()
        };
        for e in episodes {
            let longest = gaps
                .iter()
                .filter(|(from, to)| *from < e.healed && *to > e.faults_from)
                .map(|(from, to)| *to - *from)
                .max()
                .unwrap_or_default();
            availability.gaps.push(longest);
            let next = acks.iter().find(|&&at| at >= e.healed);
            availability.recoveries.push(next.map(|&at| at - e.healed));
        }
        availability
    }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// The whole of a run.
#[derive(Debug)]
pub struct Report {
    pub kind: GroupKind,
    pub seed: u64,
    pub episodes: Vec<EpisodeRecord>,
    pub attempts: u64,
    pub failures: BTreeMap<String, u64>,
    pub check: Check,
    /// Whether the replicas' commitlogs ended at the same offset before the read.
    pub converged: bool,
    pub ends: Vec<String>,
    pub availability: Availability,
    /// Each line of the run as it happened.
    pub timeline: Vec<String>,
}

impl Report {
    /// Nothing acknowledged lost, doubled or diverging, and no process exited by itself.
    pub fn passed(&self) -> bool {
        self.check.passed() && self.converged && self.crashes().is_empty()
    }

    /// Notes of processes that exited without a fault.
    pub fn crashes(&self) -> Vec<String> {
        self.episodes
            .iter()
            .flat_map(|e| &e.notes)
            .filter(|n| n.contains("exited by itself"))
            .cloned()
            .collect()
    }

    /// Episodes after which the group was not healthy within the settle limit.
    pub fn unsettled(&self) -> Vec<u32> {
        self.episodes
            .iter()
            .filter(|e| e.settled.is_none())
            .map(|e| e.plan.index)
            .collect()
    }

    /// The episodes played: `first..end`.
    pub fn range(&self) -> String {
        match (self.episodes.first(), self.episodes.last()) {
            (Some(a), Some(b)) => format!("{}..{}", a.plan.index, b.plan.index + 1),
            _ => "none".into(),
        }
    }

    /// The episodes to replay for a regression: from the first episode during which
    /// a flagged message was acknowledged (the loss may come with the next one's
    /// faults) or a process exited by itself, to the last; all of them when nothing
    /// points anywhere.
    pub fn suspects(&self) -> String {
        let episode_at = |at: Duration| {
            self.episodes
                .iter()
                .rev()
                .find(|e| e.began <= at)
                .or(self.episodes.first())
                .map(|e| e.plan.index)
        };
        let mut spans: Vec<(u32, u32)> = self
            .check
            .flagged
            .iter()
            .filter_map(|&at| episode_at(at))
            .map(|i| (i, i + 1))
            .collect();
        spans.extend(
            self.episodes
                .iter()
                .filter(|e| e.notes.iter().any(|n| n.contains("exited by itself")))
                .map(|e| (e.plan.index, e.plan.index)),
        );
        let last = self.episodes.last().map_or(0, |e| e.plan.index);
        let first = spans.iter().map(|s| s.0).min();
        let end = spans.iter().map(|s| s.1).max();
        match (first, end) {
            (Some(first), Some(end)) => format!("{first}..{}", end.min(last) + 1),
            _ => self.range(),
        }
    }

    /// Headline figures, as label and value.
    pub fn figures(&self) -> Vec<(String, String)> {
        let c = &self.check;
        let a = &self.availability;
        let recoveries: Vec<Duration> = a.recoveries.iter().flatten().copied().collect();
        let missing: Vec<String> = c.missing.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let stored: Vec<String> = c.stored.iter().map(|(r, n)| format!("{r} {n}")).collect();
        vec![
            (
                "schedule".into(),
                format!(
                    "seed {}, episodes {} ({} played) in {}",
                    self.seed,
                    self.range(),
                    self.episodes.len(),
                    secs(a.run)
                ),
            ),
            (
                "sends".into(),
                format!(
                    "{} attempted, {} acknowledged; not acknowledged: {:?}",
                    self.attempts, c.acked, self.failures
                ),
            ),
            (
                "replicas".into(),
                format!(
                    "{} messages; commitlog ends {} ({})",
                    stored.join(", "),
                    self.ends.join(", "),
                    if self.converged { "equal" } else { "NOT EQUAL" }
                ),
            ),
            (
                "acknowledged but missing".into(),
                format!(
                    "{} from every replica; per replica {}; at another offset {}",
                    c.lost,
                    missing.join(", "),
                    c.misplaced
                ),
            ),
            ("duplicated".into(), c.duplicates.to_string()),
            (
                "divergent offsets".into(),
                format!(
                    "{} (offsets on some replicas only: {})",
                    c.divergent, c.uneven
                ),
            ),
            (
                "unavailability".into(),
                format!(
                    "longest gap without SEND_OK during faults {} (median of episodes {}); \
                     first SEND_OK after the heal within {} (median {}); \
                     {} without SEND_OK in gaps of 1 s or more",
                    secs(a.gaps.iter().max().copied().unwrap_or_default()),
                    secs(median(a.gaps.clone())),
                    secs(recoveries.iter().max().copied().unwrap_or_default()),
                    secs(median(recoveries)),
                    secs(a.without_send_ok),
                ),
            ),
            (
                "not healthy within the settle limit".into(),
                format!("episodes {:?}", self.unsettled()),
            ),
            (
                "processes that exited by themselves".into(),
                format!("{:?}", self.crashes()),
            ),
        ]
    }

    /// The figures and the findings' examples; for a failed run, the line that makes
    /// it a regression.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "{} group: {}\n",
            self.kind.name(),
            if self.passed() { "PASSED" } else { "FAILED" }
        );
        for (label, value) in self.figures() {
            let _ = writeln!(out, "  {label}: {value}");
        }
        for example in &self.check.examples {
            let _ = writeln!(out, "  e.g. {example}");
        }
        if !self.passed() {
            let _ = writeln!(
                out,
                "  as a regression (tests/chaos/regressions.txt): {} {} {}",
                self.kind.name(),
                self.seed,
                self.suspects()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn record(faults_from: u64, healed: u64) -> EpisodeRecord {
        EpisodeRecord {
            plan: Episode {
                index: 0,
                faults: Vec::new(),
                quiet: Duration::ZERO,
            },
            began: ms(faults_from),
            faults_from: ms(faults_from),
            healed: ms(healed),
            settled: Some(ms(healed)),
            notes: Vec::new(),
        }
    }

    #[test]
    fn gaps_are_measured_over_each_episodes_faults() {
        // SEND_OKs every 10 ms, none from 1,000 to 4,000, then none after 9,000.
        let acks: Vec<Duration> = (0..100).chain(400..900).map(|i| ms(i * 10)).collect();
        let episodes = [record(1_500, 3_000), record(5_000, 6_000)];
        let a = Availability::of(&acks, &episodes, ms(10_000));
        assert_eq!(a.gaps, vec![ms(3_010), ms(10)]);
        assert_eq!(a.recoveries, vec![Some(ms(1_000)), Some(ms(0))]);
        assert_eq!(a.without_send_ok, ms(3_010) + ms(1_010));
    }

    #[test]
    fn a_regression_covers_the_episodes_that_point_at_the_finding() {
        let mut episodes: Vec<EpisodeRecord> = (0..10)
            .map(|i| {
                let mut e = record(i * 1_000 + 100, i * 1_000 + 500);
                e.began = ms(i * 1_000);
                e.plan.index = i as u32;
                e
            })
            .collect();
        let report = |episodes: &[EpisodeRecord], flagged: Vec<Duration>| Report {
            kind: GroupKind::Controller,
            seed: 1,
            episodes: episodes.to_vec(),
            attempts: 0,
            failures: BTreeMap::new(),
            check: Check {
                flagged,
                ..Default::default()
            },
            converged: true,
            ends: Vec::new(),
            availability: Availability::default(),
            timeline: Vec::new(),
        };
        assert_eq!(report(&episodes, Vec::new()).suspects(), "0..10");
        // Acknowledged during episode 3 and 4: replay 3 to 5.
        assert_eq!(
            report(&episodes, vec![ms(3_200), ms(4_900)]).suspects(),
            "3..6"
        );
        // Acknowledged during the last one: nothing after it to replay.
        assert_eq!(report(&episodes, vec![ms(9_999)]).suspects(), "9..10");
        episodes[7]
            .notes
            .push("broker1 exited by itself at 7.3 s".into());
        assert_eq!(report(&episodes, Vec::new()).suspects(), "7..8");
        assert_eq!(report(&episodes, vec![ms(2_000)]).suspects(), "2..8");
    }

    #[test]
    fn no_send_ok_after_a_heal_is_no_recovery() {
        let acks = [ms(0), ms(10)];
        let a = Availability::of(&acks, &[record(100, 200)], ms(5_000));
        assert_eq!(a.gaps, vec![ms(4_990)]);
        assert_eq!(a.recoveries, vec![None]);
    }
}
