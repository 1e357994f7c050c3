//! Playing a schedule: the group started, the producers sending, each episode's
//! faults injected and healed on time, the group waited for, and at the end the
//! replicas read and compared.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::checker::{compare, read_replica};
use super::group::{Group, Injected, Proc, QUEUES, TOPIC};
use super::plan::{self, Episode, GroupKind};
use super::producer::{Producers, SendLog};
use super::report::{Availability, EpisodeRecord, Report};
use crate::netns::Network;

/// How long the replicas may take to reach the same commitlog end after the last
/// episode.
const CONVERGE_LIMIT: Duration = Duration::from_secs(120);
/// How long the first SEND_OK may take once the group is ready.
const FIRST_SEND_LIMIT: Duration = Duration::from_secs(60);

/// What to run.
#[derive(Clone, Debug)]
pub struct Settings {
    pub kind: GroupKind,
    pub seed: u64,
    /// The episodes to play, in order.
    pub episodes: Range<u32>,
    /// No episode starts after this much time (`None`: play every one).
    pub until: Option<Duration>,
    /// Sends a second, over all producer tasks.
    pub rate: u32,
    pub producer_tasks: usize,
    /// The size of each broker's tmpfs.
    pub disk_mib: u64,
    /// How long the group may take to be healthy after an episode's last heal.
    pub settle_limit: Duration,
    /// Print the timeline as it happens.
    pub live: bool,
    /// Where the SEND_OK log, the timeline and (when the run fails) the brokers'
    /// logs are written.
    pub work: Option<PathBuf>,
}

impl Settings {
    /// A short run of `episodes` of `seed`, as the test suite runs it.
    pub fn short(kind: GroupKind, seed: u64, episodes: Range<u32>) -> Settings {
        Settings {
            kind,
            seed,
            episodes,
            until: None,
            rate: 100,
            producer_tasks: 4,
            disk_mib: 160,
            settle_limit: Duration::from_secs(60),
            live: false,
            work: None,
        }
    }
}

/// The run's lines, each with its time from the start.
struct Timeline {
    started: Instant,
    lines: Vec<String>,
    live: bool,
}

impl Timeline {
    fn line(&mut self, text: impl AsRef<str>) {
        let line = format!(
            "{:>9.3} s  {}",
            self.started.elapsed().as_secs_f64(),
            text.as_ref()
        );
        if self.live {
            println!("{line}");
        }
        self.lines.push(line);
    }
}

/// Runs `settings` on `net`. `Err` when the group could not be set up or a process
/// could not be driven; what the schedule finds is in the report.
pub async fn run(net: &Network, settings: &Settings) -> Result<Report, String> {
    let started = Instant::now();
    let kind = settings.kind;
    let mut timeline = Timeline {
        started,
        lines: Vec::new(),
        live: settings.live,
    };
    timeline.line(format!(
        "{} group, seed {}, episodes {:?}",
        kind.name(),
        settings.seed,
        settings.episodes
    ));
    let label = match kind {
        GroupKind::Classic => "sc",
        GroupKind::Controller => "sk",
    };
    let mut group = Group::start(net, kind, label, settings.disk_mib).await?;
    let file = match &settings.work {
        Some(dir) => Some(
            std::fs::File::create(dir.join("acks.tsv"))
                .map_err(|e| format!("{}: {e}", dir.display()))?,
        ),
        None => None,
    };
    let log = Arc::new(SendLog::new(started, file));
    let producers = Producers::start(
        &group.namesrv,
        TOPIC,
        settings.producer_tasks,
        settings.rate,
        log.clone(),
    )
    .await?;
    let deadline = Instant::now() + FIRST_SEND_LIMIT;
    while log.acked() == 0 {
        if Instant::now() > deadline {
            return Err(format!(
                "no SEND_OK within {FIRST_SEND_LIMIT:?} of the start: {:?}",
                log.failures()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    timeline.line("group ready, producers sending");

    let mut records = Vec::new();
    for index in settings.episodes.clone() {
        if settings.until.is_some_and(|u| started.elapsed() >= u) {
            break;
        }
        let plan = plan::episode(kind, settings.seed, index);
        let record = play(&mut group, plan, &log, &mut timeline, settings).await?;
        records.push(record);
    }
    let end = started.elapsed();
    producers.stop().await;
    log.flush();
    timeline.line(format!(
        "producers stopped: {} acknowledged of {}",
        log.acked(),
        log.attempts()
    ));

    let (converged, ends) = converge(&group).await;
    timeline.line(format!("commitlog ends {ends:?}, equal: {converged}"));
    let mut replicas = Vec::new();
    for (i, addr) in group.broker_addrs().iter().enumerate() {
        let name = format!("broker{i}");
        replicas.push(read_replica(group.rpc(), &name, addr, TOPIC, QUEUES).await?);
    }
    let acks = log.acks();
    let check = compare(&acks, &replicas);
    let times: Vec<Duration> = acks.iter().map(|a| a.at).collect();
    let availability = Availability::of(&times, &records, end);
    timeline.line("replicas read");
    let report = Report {
        kind,
        seed: settings.seed,
        episodes: records,
        attempts: log.attempts(),
        failures: log.failures(),
        check,
        converged,
        ends,
        availability,
        timeline: timeline.lines,
    };
    if let Some(dir) = &settings.work {
        keep(dir, &group, &report);
    }
    Ok(report)
}

/// Writes the timeline, and for a failed run copies the brokers' logs, to `dir`.
fn keep(dir: &std::path::Path, group: &Group, report: &Report) {
    let _ = std::fs::write(dir.join("timeline.txt"), report.timeline.join("\n"));
    if report.passed() {
        return;
    }
    for (name, logs) in group.logs() {
        for (n, log) in logs.iter().enumerate() {
            let _ = std::fs::copy(log, dir.join(format!("{name}-start{n}.log")));
        }
    }
}

/// One episode: its faults at their times, then the wait for a healthy group.
async fn play(
    group: &mut Group,
    plan: Episode,
    log: &SendLog,
    timeline: &mut Timeline,
    settings: &Settings,
) -> Result<EpisodeRecord, String> {
    let started = timeline.started;
    let began_at = started.elapsed();
    timeline.line(plan.to_string());
    let failures_before = log.failures();
    let acked_before = log.acked();
    let began = tokio::time::Instant::now();
    // (when, is an injection, which fault); at one time heals go first.
    let mut steps: Vec<(Duration, bool, usize)> = Vec::new();
    for (i, f) in plan.faults.iter().enumerate() {
        steps.push((f.start, true, i));
        if !f.duration.is_zero() {
            steps.push((f.end(), false, i));
        }
    }
    steps.sort();
    // The process each fault went to, resolved when it is injected.
    let mut applied: Vec<Option<Proc>> = vec![None; plan.faults.len()];
    let mut notes = Vec::new();
    let mut faults_from = None;
    for (at, inject, i) in steps {
        tokio::time::sleep_until(began + at).await;
        let fault = plan.faults[i];
        if inject {
            let p = group.resolve(fault.target).await;
            faults_from.get_or_insert(started.elapsed());
            match tokio::task::block_in_place(|| group.inject(fault.kind, p))? {
                Injected::Applied(remark) => {
                    applied[i] = Some(p);
                    timeline.line(format!("{} {p} ({})", fault.kind, fault.target));
                    if let Some(remark) = remark {
                        timeline.line(&remark);
                        notes.push(remark);
                    }
                }
                Injected::Skipped => {
                    let note = format!("skipped {} {p}: not applicable now", fault.kind);
                    timeline.line(&note);
                    notes.push(note);
                }
            }
        } else if let Some(p) = applied[i] {
            tokio::task::block_in_place(|| group.heal(fault.kind, p))?;
            timeline.line(format!("healed {} {p}", fault.kind));
        }
        restart_exited(group, timeline, &mut notes);
    }
    let healed = started.elapsed();
    let deadline = Instant::now() + settings.settle_limit;
    let settled = loop {
        restart_exited(group, timeline, &mut notes);
        if log.last_ack().is_some_and(|at| at > healed) && group.healthy().await {
            break Some(started.elapsed());
        }
        if Instant::now() > deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    match settled {
        Some(at) => timeline.line(format!(
            "healthy {:.1} s after the heal",
            (at - healed).as_secs_f64()
        )),
        None => timeline.line(format!(
            "NOT healthy {:?} after the heal",
            settings.settle_limit
        )),
    }
    tokio::time::sleep(plan.quiet).await;
    let mut failures = log.failures();
    for (outcome, n) in &failures_before {
        if let Some(now) = failures.get_mut(outcome) {
            *now -= n;
        }
    }
    failures.retain(|_, n| *n > 0);
    timeline.line(format!(
        "episode {}: {} acknowledged, not acknowledged {failures:?}",
        plan.index,
        log.acked() - acked_before
    ));
    Ok(EpisodeRecord {
        began: began_at,
        faults_from: faults_from.unwrap_or(healed),
        plan,
        healed,
        settled,
        notes,
    })
}

/// Processes that exited although no fault stopped them are findings; they are
/// started again so that the schedule goes on.
fn restart_exited(group: &mut Group, timeline: &mut Timeline, notes: &mut Vec<String>) {
    let exited = group.exited();
    for (p, how) in &exited {
        let note = format!(
            "{p} exited by itself at {:.1} s ({how})",
            timeline.started.elapsed().as_secs_f64()
        );
        timeline.line(&note);
        notes.push(note);
    }
    if !exited.is_empty() {
        tokio::task::block_in_place(|| group.start_exited(&exited));
    }
}

/// Waits until every replica's commitlog ends at one offset, all dispatched.
async fn converge(group: &Group) -> (bool, Vec<String>) {
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        let ends = group.ends().await;
        let text = ends
            .iter()
            .map(|e| e.map_or("no answer".to_owned(), |(end, _)| end.to_string()))
            .collect();
        let first = ends.first().copied().flatten();
        let equal = first.is_some_and(|(end, _)| {
            ends.iter()
                .all(|e| e.is_some_and(|(x, dispatched)| x == end && dispatched))
        });
        if equal || Instant::now() > deadline {
            return (equal, text);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
