//! The faults on the group's processes and their heals, with what each process is
//! going through, so that overlapping faults compose: a paused broker killed is not
//! thawed later, a partition healed while another still holds keeps the link down,
//! a broker whose disk is full starts again only once it has room.

use std::time::Duration;

use super::{Group, Proc};
use crate::netns::Host;
use crate::schedule::plan::FaultKind;

/// What a process is going through; counts, because faults overlap.
#[derive(Default)]
pub(super) struct State {
    pub(super) down: bool,
    pub(super) paused: u32,
    pub(super) cut: u32,
    pub(super) full: u32,
    /// Killed while its disk was full: started when the disk is freed.
    pub(super) start_pending: bool,
}

/// What an injection did.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::schedule) enum Injected {
    /// Done; with a remark when it went otherwise than planned.
    Applied(Option<String>),
    /// Not applicable to the process as it was.
    Skipped,
}

fn bump(count: &mut u32) -> u32 {
    *count += 1;
    *count
}

fn drop_one(count: &mut u32) -> u32 {
    *count = count.saturating_sub(1);
    *count
}

impl Group {
    fn host(&self, p: Proc) -> &Host {
        match p {
            Proc::Broker(i) => self.broker(i).host(),
            Proc::Coordinator(i) => self.coordinator(i).host(),
        }
    }

    fn pid(&self, p: Proc) -> u32 {
        match p {
            Proc::Broker(i) => self.broker(i).process.pid(),
            Proc::Coordinator(i) => self.coordinator(i).process.pid(),
        }
    }

    fn state(&mut self, p: Proc) -> &mut State {
        match p {
            Proc::Broker(i) => &mut self.broker_state[i],
            Proc::Coordinator(i) => &mut self.coordinator_state[i],
        }
    }

    /// Processes that exited although no fault stopped them, with how they ended:
    /// each is marked down (to be started again by [`Group::start_exited`]).
    pub(in crate::schedule) fn exited(&mut self) -> Vec<(Proc, String)> {
        let procs: Vec<Proc> = (0..self.brokers.len())
            .map(Proc::Broker)
            .chain((0..self.coordinators.len()).map(Proc::Coordinator))
            .collect();
        let mut exited = Vec::new();
        for p in procs {
            if self.state(p).down {
                continue;
            }
            let process = match p {
                Proc::Broker(i) => self.brokers[i].as_mut().map(|b| &mut b.process),
                Proc::Coordinator(i) => self.coordinators[i].as_mut().map(|n| &mut n.process),
            };
            if let Some(status) = process.and_then(|p| p.exit_status()) {
                let state = self.state(p);
                state.down = true;
                state.paused = 0;
                exited.push((p, how(status)));
            }
        }
        exited
    }

    /// Injects `kind` into `p`. [`Injected::Skipped`] when it does not apply to the
    /// process as it is now (pausing a killed process, killing it twice).
    pub(in crate::schedule) fn inject(
        &mut self,
        kind: FaultKind,
        p: Proc,
    ) -> Result<Injected, String> {
        let down = self.state(p).down;
        match kind {
            FaultKind::Kill | FaultKind::CoordinatorKill if !down => self.kill(p),
            // A process that just exited by itself would never show as stopped; the
            // next look for exited processes reports it.
            FaultKind::Pause if !down && running(self.pid(p)) => {
                if bump(&mut self.state(p).paused) == 1 {
                    crate::freeze::freeze(self.pid(p));
                }
            }
            FaultKind::Partition => {
                if bump(&mut self.state(p).cut) == 1 {
                    self.host(p).link_down();
                }
            }
            FaultKind::DiskFull => {
                let Proc::Broker(i) = p else {
                    return Ok(Injected::Skipped);
                };
                if bump(&mut self.state(p).full) == 1 {
                    self.disks[i].fill()?;
                }
            }
            FaultKind::Restart { clean } if !down => {
                let mut note = None;
                if clean && self.state(p).paused == 0 {
                    note = self.stop_cleanly(p);
                } else {
                    self.kill(p);
                }
                self.boot(p);
                return Ok(Injected::Applied(note));
            }
            _ => return Ok(Injected::Skipped),
        }
        Ok(Injected::Applied(None))
    }

    /// Ends a fault [`Group::inject`] applied.
    pub(in crate::schedule) fn heal(&mut self, kind: FaultKind, p: Proc) -> Result<(), String> {
        match kind {
            FaultKind::Kill | FaultKind::CoordinatorKill => self.boot(p),
            FaultKind::Pause => {
                let state = self.state(p);
                // 0 when a kill or restart meanwhile ended the pause.
                if state.paused > 0 {
                    state.paused -= 1;
                    if state.paused == 0 && !state.down {
                        crate::freeze::thaw(self.pid(p));
                    }
                }
            }
            FaultKind::Partition => {
                if drop_one(&mut self.state(p).cut) == 0 {
                    self.host(p).link_up();
                }
            }
            FaultKind::DiskFull => {
                let Proc::Broker(i) = p else { return Ok(()) };
                if drop_one(&mut self.state(p).full) == 0 {
                    self.disks[i].free()?;
                    if std::mem::take(&mut self.state(p).start_pending) {
                        self.boot(p);
                    }
                }
            }
            FaultKind::Restart { .. } => {}
        }
        Ok(())
    }

    /// Starts again the processes [`Group::exited`] found.
    pub(in crate::schedule) fn start_exited(&mut self, procs: &[(Proc, String)]) {
        for &(p, _) in procs {
            self.boot(p);
        }
    }

    fn kill(&mut self, p: Proc) {
        match p {
            Proc::Broker(i) => {
                if let Some(b) = self.brokers[i].as_mut() {
                    b.kill9();
                }
            }
            Proc::Coordinator(i) => {
                if let Some(n) = self.coordinators[i].as_mut() {
                    n.kill9();
                }
            }
        }
        let state = self.state(p);
        state.down = true;
        state.paused = 0;
    }

    /// SIGTERM, and SIGKILL if the process has not exited 30 s later (said in the
    /// note returned).
    fn stop_cleanly(&mut self, p: Proc) -> Option<String> {
        let timeout = Duration::from_secs(30);
        let stopped = match p {
            Proc::Broker(i) => self.brokers[i]
                .as_mut()
                .map(|b| b.process.terminate(timeout)),
            Proc::Coordinator(i) => self.coordinators[i]
                .as_mut()
                .map(|n| n.process.terminate(timeout)),
        };
        self.state(p).down = true;
        (stopped == Some(false))
            .then(|| format!("{p} did not stop within {timeout:?} of SIGTERM: killed"))
    }

    /// Starts a stopped process on its store (the boot waited for), unless its disk is
    /// full: then when the disk is freed.
    fn boot(&mut self, p: Proc) {
        let state = self.state(p);
        if !state.down {
            return;
        }
        if state.full > 0 {
            state.start_pending = true;
            return;
        }
        match p {
            Proc::Broker(i) => {
                let broker = self.brokers[i].take().expect("a broker in its slot");
                self.brokers[i] = Some(broker.restart(true));
            }
            Proc::Coordinator(i) => {
                let ns = self.coordinators[i]
                    .take()
                    .expect("a name server in its slot");
                self.coordinators[i] = Some(ns.restart(true));
            }
        }
        let state = self.state(p);
        state.down = false;
        state.paused = 0;
    }
}

/// An exit status in words: the code, or the signal by name.
fn how(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => {
            let name = match signal {
                libc::SIGABRT => "SIGABRT",
                libc::SIGBUS => "SIGBUS",
                libc::SIGSEGV => "SIGSEGV",
                libc::SIGKILL => "SIGKILL",
                libc::SIGTERM => "SIGTERM",
                _ => "",
            };
            format!("signal {signal} {name}").trim_end().to_owned()
        }
        _ => status.to_string(),
    }
}

/// Whether process `pid` runs: not a zombie waiting to be reaped.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}
