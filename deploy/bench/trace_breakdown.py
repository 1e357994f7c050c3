#!/usr/bin/env python3
"""Where the end-to-end latency goes, stage by stage: runs one e2e row against a fresh
Vostok broker with the latency trace on (VOSTOK_LATENCY_TRACE, in the broker and in
mqbench), joins the broker's and the client's timestamps per message (by commitlog
offset) and prints, for each stage, p50 / p99 / p99.9 / max, and for the messages in
the end-to-end tail (at or above its p99) how much of their latency each stage took.
First it measures how late a sleeping thread wakes on this machine at the moment: every
hand-off between threads along the path can meet that delay.

  deploy/bench/trace_breakdown.py                        # e2e at 10,000 msg/s, 6 s
  deploy/bench/trace_breakdown.py --rate 50000 --batch 32
  deploy/bench/trace_breakdown.py --dir /tmp/t --no-run  # analyse existing trace files
  deploy/bench/trace_breakdown.py --file-size 1073741824 --burst-secs 4 --warmup 0
                                                         # right after a 4 s burst

Needs the release binaries (matrix.sh builds them) and python3.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from brokers import Vostok, settle

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

STAGES = ["sent", "received", "appended", "dispatched", "pulled", "client pulled", "consumed"]
SPANS = [
    ("send → broker", 0, 1, "client send path, socket, broker read and decode"),
    ("broker → appended", 1, 2, "send checks, append lock, commitlog copy"),
    ("appended → dispatched", 2, 3, "dispatcher wake-up, consume-queue entry"),
    ("dispatched → pulled", 3, 4, "long-poll wake-up, the pull re-run, reading"),
    ("pulled → client", 4, 5, "response write, socket, SDK read and decode"),
    ("client → listener", 5, 6, "process queue, consume scheduling"),
    ("end to end", 0, 6, ""),
]


def meminfo_mib():
    """Dirty and Writeback of /proc/meminfo, MiB."""
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Dirty", "Writeback"):
                out[key] = int(rest.split()[0]) // 1024
    return out.get("Dirty", 0), out.get("Writeback", 0)


class MemSampler(threading.Thread):
    """Samples Dirty/Writeback every 100 ms: (wall-clock µs, dirty MiB, writeback MiB)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.1):
            self.samples.append((int(time.time() * 1e6), *meminfo_mib()))


def run(opts, work):
    """One e2e run with the trace on (after the load step, if any); the trace files land
    in `opts.dir`. Returns the Dirty/Writeback samples taken during the e2e row."""
    os.environ["VOSTOK_LATENCY_TRACE"] = str(opts.dir)
    bin_dir = Path(opts.bin_dir)
    broker = Vostok(bin_dir, work)
    ns, pid = broker.start("ASYNC_FLUSH", None, {"mappedFileSizeCommitLog": opts.file_size})
    bench = str(bin_dir / "mqbench")
    mode = ["--mode", "batch", "--batch", str(opts.batch)] if opts.batch else \
        ["--mode", "async", "--window", "1024"]
    args = [bench, "e2e", "-n", ns, "-t", "TraceTopic", "-s", "1024",
            "-w", "1", "--rate", str(opts.rate), "-d", str(opts.duration),
            "--warmup", str(opts.warmup), "--broker-pid", str(pid), *mode]
    sampler = MemSampler()
    try:
        steps = [("batch", f"{opts.fill_gib}G")] if opts.fill_gib else []
        steps += [("batch", str(opts.burst_secs))] if opts.burst_secs else []
        steps += [tuple(step.split(":", 1)) for step in opts.load or []]
        for kind, amount in steps:
            # Not measured: sends at full speed to a topic of their own, as the matrix's
            # scenarios on a broker that is not fresh.
            how = ["--mode", "batch", "--batch", "32"] if kind == "batch" else \
                ["--mode", "async", "--window", "1024"]
            if amount.endswith("G"):
                how += ["-w", "2", "-c", str(int(float(amount[:-1]) * 2**30 // 1100))]
            else:
                how += ["-w", "1", "-d", amount]
            t0 = time.time()
            r = subprocess.run([bench, "produce", "-n", ns, "-t", "FillTopic", "-s", "1024",
                                "--warmup", "0", "-q", *how],
                               capture_output=True, text=True, timeout=600)
            dirty, wb = meminfo_mib()
            print(f"load step {kind} {amount}: {time.time() - t0:.1f} s, exit {r.returncode}; "
                  f"Dirty {dirty} MiB, Writeback {wb} MiB at its end")
        sampler.start()
        perf = None
        if opts.sched:
            # Every thread's switches with their stacks, for `perf sched timehist -g`:
            # which thread waited, for how long, blocked (D, S) or preempted (R).
            perf = subprocess.Popen(["perf", "sched", "record", "-g", "-o", opts.sched],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        bench_proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True)
        stdout, _ = bench_proc.communicate(timeout=120)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=60)
        print("\n".join(line for line in stdout.splitlines() if "latency" in line or "p99" in line))
        if perf:
            sched_summary(opts.sched, pid, bench_proc.pid)
    finally:
        sampler.stop.set()
        broker.stop()
        settle()
        del os.environ["VOSTOK_LATENCY_TRACE"]
    return sampler.samples


SWITCH = re.compile(r"\s*([\d.]+)\s+\[\d+\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+([\d.]+)\s+([\d.]+)"
                    r"\s+([\d.]+)\s+(\S+)\s*(.*)")


def sched_summary(path, broker_pid, bench_pid):
    """From a `perf sched record -g` of the row: the CPU the broker, mqbench and every
    other process used, and per broker thread how long it waited blocked on the disk
    (D, with the longest wait's kernel stack), preempted (R) and for a core once woken."""
    r = subprocess.run(["perf", "sched", "timehist", "-i", path, "--state"],
                       capture_output=True, text=True, timeout=600)
    run, prev, waits, delay = {}, {}, {}, {}
    for line in r.stdout.splitlines():
        m = SWITCH.match(line)
        if not m:
            continue
        _, comm, tid, pid, wait, sch, ran, state, stack = m.groups()
        pid = int(pid or tid)
        who = "broker" if pid == broker_pid else "mqbench" if pid == bench_pid else "other"
        run[who] = run.get(who, 0.0) + float(ran)
        if who != "broker":
            continue
        if tid in prev and prev[tid][0] in ("D", "R"):
            w = waits.setdefault((f"{comm}[{tid}]", prev[tid][0]), [0.0, 0, 0.0, ""])
            w[0] += float(wait)
            w[1] += 1
            if float(wait) > w[2]:
                w[2], w[3] = float(wait), prev[tid][1]
        delay.setdefault(comm, []).append(float(sch))
        prev[tid] = (state, stack)
    print(f"\nScheduler, ms of CPU over the row: broker {run.get('broker', 0):.0f}, mqbench "
          f"{run.get('mqbench', 0):.0f}, other processes {run.get('other', 0):.0f}")
    for (comm, state), (total, n, longest, stack) in sorted(waits.items(), key=lambda w: -w[1][0]):
        if total >= 1:
            kind = "blocked (D)" if state == "D" else "preempted (R)"
            print(f"  broker {comm}: {kind} {total:.0f} ms in {n} waits, longest {longest:.1f} ms"
                  + (f" in {stack[:120]}" if state == "D" else ""))
    for comm, d in sorted(delay.items()):
        if len(d) >= 50:
            d.sort()
            print(f"  broker {comm}: waited for a core once woken p99 {pct(d, 0.99):.2f} ms, "
                  f"max {d[-1]:.1f} ms ({len(d):,} wake-ups)")


def wakeup_delay(n=5000):
    """How late a thread sleeping 200 µs wakes on this machine now: the scheduling
    delay every hand-off between threads along the path can meet."""
    late = []
    for _ in range(n):
        t = time.perf_counter_ns()
        time.sleep(0.0002)
        late.append((time.perf_counter_ns() - t) / 1000 - 200)
    late.sort()
    print(f"Wake-up delay of a 200 µs sleep (this machine, now): p50 {late[n // 2] / 1000:.3f} "
          f"p99 {late[int(n * 0.99)] / 1000:.3f} p99.9 {late[int(n * 0.999)] / 1000:.3f} "
          f"max {late[-1] / 1000:.3f} ms; load average {os.getloadavg()[0]:.1f}\n")


def load(dir):
    """offset → [micros per stage] (first stamp of each stage)."""
    msgs = {}
    for path in Path(dir).glob("*.trace"):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 3:
                    continue
                stage, offset, micros = int(parts[0]), int(parts[1]), int(parts[2])
                row = msgs.setdefault(offset, [None] * len(STAGES))
                if row[stage] is None:
                    row[stage] = micros
    return msgs


def pct(sorted_values, q):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[i]


def ms(us):
    return "–" if us is None else f"{us / 1000:.3f}"


def report(msgs, skip_secs):
    rows = [r for r in msgs.values() if all(v is not None for v in r)]
    if not rows:
        sys.exit("no message has every stamp (is the trace on in both processes?)")
    start = min(r[0] for r in rows) + skip_secs * 1_000_000
    rows = [r for r in rows if r[0] >= start]
    print(f"{len(rows):,} messages with every stage stamped "
          f"({len(msgs):,} seen; the first {skip_secs} s skipped)\n")
    print("| stage | what it holds | p50 ms | p99 ms | p99.9 ms | max ms | share of the tail |")
    print("|---|---|---:|---:|---:|---:|---:|")
    total = sorted(r[6] - r[0] for r in rows)
    p99 = pct(total, 0.99)
    tail = [r for r in rows if r[6] - r[0] >= p99]
    tail_sum = sum(r[6] - r[0] for r in tail) or 1
    for name, a, b, what in SPANS:
        d = sorted(max(0, r[b] - r[a]) for r in rows)
        share = sum(max(0, r[b] - r[a]) for r in tail) / tail_sum
        print(f"| {name} | {what} | {ms(pct(d, 0.5))} | {ms(pct(d, 0.99))} | "
              f"{ms(pct(d, 0.999))} | {ms(d[-1])} | {share * 100:.0f} % |")
    print(f"\nThe tail: {len(tail):,} messages at or above the end-to-end p99 "
          f"({ms(p99)} ms); 'share of the tail' is each stage's part of their summed latency.")
    return rows


def by_second(rows, mem):
    """Per second of the row (by send time): messages, end-to-end p99 and max, the span
    holding most of that second's tail, and Dirty/Writeback at that second."""
    if not rows:
        return
    start = min(r[0] for r in rows)
    secs = {}
    for r in rows:
        secs.setdefault(int((r[0] - start) // 1_000_000), []).append(r)
    print("\n| second | messages | e2e p99 ms | e2e max ms | span of the tail | Dirty MiB | Writeback MiB |")
    print("|---:|---:|---:|---:|---|---:|---:|")
    for k in sorted(secs):
        rs = secs[k]
        total = sorted(r[6] - r[0] for r in rs)
        p99 = pct(total, 0.99)
        tail = [r for r in rs if r[6] - r[0] >= p99]
        shares = [(sum(max(0, r[b] - r[a]) for r in tail), name) for name, a, b, _ in SPANS[:-1]]
        share, name = max(shares)
        whole = sum(r[6] - r[0] for r in tail) or 1
        t = start + k * 1_000_000
        near = [m for m in mem if t <= m[0] < t + 1_000_000]
        dirty = max((m[1] for m in near), default=None)
        wb = max((m[2] for m in near), default=None)
        print(f"| {k} | {len(rs):,} | {ms(p99)} | {ms(total[-1])} | {name} {share * 100 // whole:.0f} % | "
              f"{'–' if dirty is None else dirty} | {'–' if wb is None else wb} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=str(ROOT / "target" / "release"))
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=0, help="send batches of N (default: async)")
    ap.add_argument("--duration", type=float, default=6)
    ap.add_argument("--file-size", type=int, default=64 << 20, help="commitlog file size")
    ap.add_argument("--warmup", type=float, default=1.0, help="mqbench's warm-up, seconds")
    ap.add_argument("--skip", type=float, help="seconds to leave out (default: the warm-up)")
    ap.add_argument("--burst-secs", type=float, default=0,
                    help="first send batches of 32 at full speed for this long (not measured)")
    ap.add_argument("--fill-gib", type=float, default=0,
                    help="first fill the store with this many GiB of batch sends (not measured)")
    ap.add_argument("--load", nargs="*", metavar="KIND:AMOUNT",
                    help="load steps before the row, in order: batch:4 (batch x32 for 4 s), "
                    "async:4 (async window 1,024), batch:3.25G (a fill of 3.25 GiB)")
    ap.add_argument("--sched", help="record the scheduler (perf sched record -g) during the "
                    "e2e row into this file")
    ap.add_argument("--dir", help="trace directory (default: a new temporary one)")
    ap.add_argument("--no-run", action="store_true", help="only analyse --dir")
    opts = ap.parse_args()
    work = tempfile.mkdtemp(prefix="vostok-trace-")
    opts.dir = Path(opts.dir or Path(work) / "trace")
    opts.dir.mkdir(parents=True, exist_ok=True)
    if opts.skip is None:
        opts.skip = opts.warmup
    mem = []
    try:
        if not opts.no_run:
            wakeup_delay()
            mem = run(opts, work)
        by_second(report(load(opts.dir), opts.skip), mem)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
