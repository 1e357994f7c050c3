"""Rows measured on a broker that is not fresh, where users meet latency tails: the first
seconds of a broker without warm-up, right after a burst, on a store grown past several
commitlog files, and the same rows round after round on one broker. Each scenario starts
one broker, runs its steps on it in order (unmeasured steps fill or load it), then stops
it and deletes its store. Used by matrix.py and quick_ab.py.
"""

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

E2E_10K = ["--mode", "async", "--window", "1024", "-w", "1", "--rate", "10000"]
ASYNC = ["--mode", "async", "--window", "1024", "-w", "1"]
BATCH = ["--mode", "batch", "--batch", "32", "-w", "1"]
# The fill: batch sends from two tasks, the fastest way to grow a store.
FILL = ["--mode", "batch", "--batch", "32", "-w", "2"]
# Bytes a stored 1 KiB message takes in the commitlog (body, properties, header).
STORED_BYTES = 1100
# What a step can write per second at most, for the disk check before it: batch sends
# reach ~500k msg/s of 1 KiB on 2 cores, single sends ~150k.
BATCH_BYTES_PER_SEC = 600 << 20
SINGLE_BYTES_PER_SEC = 200 << 20
# Producers write to these topics; every e2e step has a topic of its own, since a new
# e2e consumer group reads its topic from the first offset.
FILL_TOPIC = "FillTopic"
BENCH_TOPIC = "BenchTopic"

LABELS = ("first 10 s", "after a burst", "aged", "round after round")


class MemoryLimit:
    """A memory cgroup that holds one broker process within `limit` bytes, its page cache
    included, as on a machine whose memory the store has outgrown: the kernel then takes
    the broker's new pages from its own old ones instead of from free memory (what that
    changes on a VM: deploy/bench/README.md, "Round after round, and the VM's memory").
    Needs root and the memory controller, cgroup v2 or v1. Raises RuntimeError saying
    why it cannot."""

    def __init__(self, limit, name):
        root = Path("/sys/fs/cgroup")
        try:
            if (root / "cgroup.controllers").exists():  # v2
                if "memory" not in (root / "cgroup.controllers").read_text().split():
                    raise RuntimeError("cgroup v2 without the memory controller")
                control = root / "cgroup.subtree_control"
                if "memory" not in control.read_text().split():
                    control.write_text("+memory")
                self.dir, limit_file = root / name, "memory.max"
            elif (root / "memory").is_dir():  # v1
                self.dir, limit_file = root / "memory" / name, "memory.limit_in_bytes"
            else:
                raise RuntimeError("no memory cgroup controller mounted under /sys/fs/cgroup")
            self.dir.mkdir(exist_ok=True)
            (self.dir / limit_file).write_text(str(limit))
        except OSError as e:
            raise RuntimeError(f"cannot make a memory cgroup (root needed): {e}") from e

    def add(self, pid):
        """Moves process `pid`, all its threads, into the cgroup."""
        try:
            (self.dir / "cgroup.procs").write_text(str(pid))
        except OSError as e:
            raise RuntimeError(f"cannot move process {pid} into {self.dir}: {e}") from e

    def remove(self):
        """Removes the cgroup once its process has ended. Best effort: an empty cgroup
        left behind costs nothing."""
        try:
            self.dir.rmdir()
        except OSError as e:
            print(f"   left the cgroup {self.dir}: {e}", flush=True)


@dataclass
class Step:
    name: str  # the row; None for a step that only loads the broker
    kind: str
    flags: list
    topic: str = BENCH_TOPIC
    warmup: float = None  # None: the caller's warm-up and duration
    duration: float = None
    count: int = None


@dataclass
class Scenario:
    label: str
    steps: list = field(default_factory=list)
    rounds: int = 0  # "round after round": the number of rounds


def round_row(k, row):
    return f"round {k}: {row}"


def scenarios(opts):
    """The four scenarios with the caller's settings: opts.burst_secs, opts.fill_gib,
    opts.rounds."""
    fill_count = int(opts.fill_gib * 2**30 // STORED_BYTES)
    out = [
        Scenario("first 10 s", [
            Step("first 10 s: e2e at 10,000 msg/s, no warm-up", "e2e", E2E_10K, "E2eFirst",
                 warmup=0, duration=10),
        ]),
        Scenario("after a burst", [
            Step(None, "produce", BATCH, FILL_TOPIC, warmup=0, duration=opts.burst_secs),
            Step("after a burst: e2e at 10,000 msg/s", "e2e", E2E_10K, "E2eAfterBurst",
                 warmup=0),
        ]),
        Scenario("aged", [
            Step(None, "produce", FILL, FILL_TOPIC, warmup=0, count=fill_count),
            Step("aged: e2e at 10,000 msg/s", "e2e", E2E_10K, "E2eAged"),
            Step("aged: async window 1,024, 1 task", "produce", ASYNC),
            Step("aged: batch x32, 1 task", "produce", BATCH),
        ]),
    ]
    rounds = Scenario("round after round", rounds=opts.rounds)
    for k in range(1, opts.rounds + 1):
        rounds.steps += [
            Step(round_row(k, "async window 1,024, 1 task"), "produce", ASYNC),
            Step(round_row(k, "batch x32, 1 task"), "produce", BATCH),
            Step(round_row(k, "e2e at 10,000 msg/s"), "e2e", E2E_10K, f"E2eRound{k}"),
        ]
    out.append(rounds)
    return out


def selected(all_scenarios, names, everything):
    """Scenarios whose label one of `names` contains or is contained in (`--rows aged`,
    `--rows "round"`); all of them when `everything`."""
    if everything:
        return all_scenarios
    names = names or []
    return [s for s in all_scenarios
            if any(n and (n in s.label or s.label in n) for n in names)]


def shown_rows(scenario):
    """The rows a table shows: every measured row, but of "round after round" only the
    first and the last round."""
    rows = [s.name for s in scenario.steps if s.name]
    if scenario.rounds > 1:
        rows = [r for r in rows if r.startswith(("round 1:", f"round {scenario.rounds}:"))]
    return rows


def comparisons(scenario):
    """(last round's row, first round's row) pairs of "round after round"."""
    if scenario.rounds < 2:
        return []
    last = f"round {scenario.rounds}: "
    return [(s.name, "round 1: " + s.name[len(last):]) for s in scenario.steps
            if s.name and s.name.startswith(last)]


def step_bytes(step, warmup, duration):
    """At most what the step writes to the store, for the disk check."""
    if step.count is not None:
        return step.count * STORED_BYTES
    secs = (step.warmup if step.warmup is not None else warmup) + \
        (step.duration if step.duration is not None else duration)
    if "--rate" in step.flags:
        rate = float(step.flags[step.flags.index("--rate") + 1])
        return int(secs * rate * STORED_BYTES * 1.5)
    per_sec = BATCH_BYTES_PER_SEC if "batch" in step.flags else SINGLE_BYTES_PER_SEC
    return int(secs * per_sec)


def runqueue_wait_secs(pid):
    """Seconds the threads of `pid` have spent runnable but waiting for a core
    (/proc/<pid>/task/*/schedstat), or None where the kernel does not tell."""
    total, seen = 0, False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
                seen = True
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total / 1e9 if seen else None


def core_wait(pid, before, elapsed):
    """Milliseconds per second that the broker's threads, together, waited for a core
    during a step: on a shared machine the tails of these rows follow it, not the
    broker's age (deploy/bench/README.md, "What the tail waits on after a burst")."""
    after = runqueue_wait_secs(pid)
    if before is None or after is None or elapsed <= 0:
        return None
    return max(0.0, after - before) * 1000 / elapsed


def store_gib(store):
    """Bytes of the commitlog files under a Vostok store, in GiB (None if not there)."""
    commitlog = Path(store) / "commitlog"
    if not commitlog.is_dir():
        return None
    return sum(p.stat().st_size for p in commitlog.iterdir() if p.is_file()) / 2**30


def run(scenario, start, stop, bench, client_flags, opts, log, work, note, store=None):
    """Runs one scenario on one broker: `start()` returns (namesrv, pid) of a fresh
    broker, `stop()` stops it and deletes its store; `store()` (optional) the broker's
    store directory, for the size of its commitlog. Returns {row: figures}; `note(text)`
    hears why a scenario stopped short (disk, a failed step). With
    `opts.memory_limit_gib`, the broker runs in a memory cgroup of that size."""
    from matrix import figures, mqbench  # matrix.py imports this module
    json_path = Path(work) / "run.json"
    out = {}
    limit = None
    try:
        ns, pid = start()
        if opts.memory_limit_gib:
            limit = MemoryLimit(int(opts.memory_limit_gib * 2**30),
                                f"vostok-bench-{os.getpid()}-{pid}")
            limit.add(pid)
    except RuntimeError as e:  # the broker did not boot, or the cgroup failed
        note(f"{scenario.label}: {e}")
        stop()
        if limit:
            limit.remove()
        return out
    try:
        for step in scenario.steps:
            need = step_bytes(step, opts.warmup, opts.duration)
            free = shutil.disk_usage(work).free
            if free - need < opts.min_free_gib * 2**30:
                note(f"{scenario.label}: stopped before "
                     f"{step.name or 'the fill'}: {free / 2**30:.1f} GiB free, the step may "
                     f"write {need / 2**30:.1f} GiB and {opts.min_free_gib} GiB must stay free "
                     "(--min-free-gib)")
                break
            common = ["-q", "--warmup", str(step.warmup if step.warmup is not None
                                            else opts.warmup)]
            if step.count is not None:
                common += ["-c", str(step.count)]
            else:
                common += ["-d", str(step.duration if step.duration is not None
                                     else opts.duration)]
            if json_path.exists():
                json_path.unlink()
            t0, waited0 = time.time(), runqueue_wait_secs(pid)
            v = mqbench(bench, step.kind, ns, pid, step.flags + client_flags, common, json_path,
                        log, topic=step.topic)
            if v is None:
                note(f"{scenario.label}: mqbench failed at {step.name or 'the fill'} "
                     f"(see {log.name})")
                break
            if step.name is None:
                size = store_gib(store()) if store else None
                print(f"   {scenario.label}: loaded with {v.get('sent') or 0:,} messages in "
                      f"{time.time() - t0:.0f} s ({v['msgs_per_sec']:,.0f} msg/s)"
                      + ("" if size is None else f", commitlog {size:.2f} GiB"), flush=True)
                continue
            out[step.name] = figures(v, step.kind)
            out[step.name]["waited"] = core_wait(pid, waited0, time.time() - t0)
    finally:
        stop()
        if limit:
            limit.remove()
    return out


def add_arguments(ap):
    """The options of these scenarios, for the scripts that run them (matrix.py,
    quick_ab.py)."""
    ap.add_argument("--burst-secs", type=float, default=4,
                    help="'after a burst': seconds of batch x32 sends before the e2e row")
    ap.add_argument("--fill-gib", type=float, default=3.25,
                    help="'aged': GiB of messages written before the rows")
    ap.add_argument("--rounds", type=int, default=3, help="'round after round': rounds")
    ap.add_argument("--min-free-gib", type=float, default=8,
                    help="the rows on a broker that is not fresh stop before a step that could "
                         "leave less than this free on the disk of --work")
    ap.add_argument("--memory-limit-gib", type=float, default=None,
                    help="run each broker of the rows on a broker that is not fresh in a memory "
                         "cgroup of this many GiB, its page cache included, as on a machine "
                         "whose memory the store has outgrown (needs root)")


def limit_note(opts):
    """What a table says of --memory-limit-gib, or ''."""
    gib = opts.memory_limit_gib
    if not gib:
        return ""
    return (f" Each broker ran in a memory cgroup of {gib:g} GiB, its page cache included "
            "(--memory-limit-gib), as on a machine whose memory its store has outgrown.")


def line(name, f):
    """One run's figures, as the scripts print them while they run."""
    def fmt(v, digits):
        return "–" if v is None else f"{v:,.{digits}f}"
    return (f"   {name}: {f['rate']:,.0f} msg/s p50 {fmt(f['p50'], 3)} p99 {fmt(f['p99'], 3)} "
            f"p99.9 {fmt(f['p999'], 3)} ms, CPU µs/msg broker {fmt(f['broker_us'], 1)} "
            f"mqbench {fmt(f['tool_us'], 1)}, broker waited for a core {fmt(f.get('waited'), 0)} ms/s")

