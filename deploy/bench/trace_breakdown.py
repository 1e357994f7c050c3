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

Needs the release binaries (matrix.sh builds them) and python3.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
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


def run(opts, work):
    """One e2e run with the trace on; the trace files land in `opts.dir`."""
    os.environ["VOSTOK_LATENCY_TRACE"] = str(opts.dir)
    bin_dir = Path(opts.bin_dir)
    broker = Vostok(bin_dir, work)
    ns, pid = broker.start("ASYNC_FLUSH", None, {"mappedFileSizeCommitLog": opts.file_size})
    mode = ["--mode", "batch", "--batch", str(opts.batch)] if opts.batch else \
        ["--mode", "async", "--window", "1024"]
    args = [str(bin_dir / "mqbench"), "e2e", "-n", ns, "-t", "TraceTopic", "-s", "1024",
            "-w", "1", "--rate", str(opts.rate), "-d", str(opts.duration), "--warmup", "1",
            "--broker-pid", str(pid), *mode]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        print("\n".join(line for line in r.stdout.splitlines() if "latency" in line or "p99" in line))
    finally:
        broker.stop()
        settle()
        del os.environ["VOSTOK_LATENCY_TRACE"]


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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default=str(ROOT / "target" / "release"))
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=0, help="send batches of N (default: async)")
    ap.add_argument("--duration", type=float, default=6)
    ap.add_argument("--file-size", type=int, default=64 << 20, help="commitlog file size")
    ap.add_argument("--skip", type=float, default=1.0, help="seconds of warm-up to leave out")
    ap.add_argument("--dir", help="trace directory (default: a new temporary one)")
    ap.add_argument("--no-run", action="store_true", help="only analyse --dir")
    opts = ap.parse_args()
    work = tempfile.mkdtemp(prefix="vostok-trace-")
    opts.dir = Path(opts.dir or Path(work) / "trace")
    opts.dir.mkdir(parents=True, exist_ok=True)
    try:
        if not opts.no_run:
            wakeup_delay()
            run(opts, work)
        report(load(opts.dir), opts.skip)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
