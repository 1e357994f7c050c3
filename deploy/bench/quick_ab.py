#!/usr/bin/env python3
"""The regression guard: a quick subset of the matrix run against two builds side by
side, interleaved run by run (A, B, then B, A, ...), so that both meet the same load on
a shared machine. Prints each row's median per build and the ratio B / A.

Run through quick-ab.sh, which builds the two revisions (or takes two directories that
hold mqbroker, mqbench and mqadmin). Needs only python3.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import aged
from brokers import Vostok, kill
from matrix import ROWS as MATRIX_ROWS, figures, median, mqbench


def matrix_rows(*names):
    """The matrix's rows of these names, as (name, flush mode, mqbench command, its
    flags): the guard runs them exactly as the matrix does."""
    by_name = {row[0]: row[:4] for row in MATRIX_ROWS}
    return [by_name[name] for name in names]


ROWS = matrix_rows("async window 1,024, 1 task", "batch x32, 1 task",
                   "SYNC_FLUSH sync, 64 tasks", "e2e at 10,000 msg/s")
# Rows run only when --rows names them: producing and consuming at full speed, and the
# e2e tails at the higher rate.
ON_REQUEST = matrix_rows("produce + consume at once (async 1,024)", "e2e at 50,000 msg/s",
                         "e2e at 50,000 msg/s (batch x32)")
# Small commitlog files by default: a run writes at most a few hundred MiB, and they
# roll often enough that file creation is part of every run.
FILE_SIZE = 64 << 20


def run_once(build, row, opts, log, profile=None):
    """One run of `row` on a fresh broker of `build`, with the broker's `profile` (None,
    or "acl" as brokers.py sets it up, mqbench then signing every request)."""
    name, flush, kind, flags = row
    json_path = Path(opts.work) / "run.json"
    if json_path.exists():
        json_path.unlink()
    try:
        ns, pid = build.start(flush, profile,
                              {"mappedFileSizeCommitLog": opts.file_size or FILE_SIZE,
                               **build.broker_settings})
    except RuntimeError as e:
        print(f"   {e}", flush=True)
        build.stop()
        return None
    flags = flags + build.extra + build.client_flags
    try:
        v = mqbench(build.bench, kind, ns, pid, flags,
                    ["-q", "--warmup", str(opts.warmup), "-d", str(opts.duration)], json_path, log)
    finally:
        # The store is thrown away: no graceful shutdown, and its dirty pages are
        # dropped with the files, so there is no writeback to wait for.
        kill(build.proc)
        build.stop()
    return None if v is None else figures(v, kind)


def run_scenario(build, scenario, opts, log, label):
    """One scenario of aged.py on one fresh broker of `build`: {row: figures}. Its broker
    keeps its default 1 GiB commitlog files unless --file-size is given."""
    settings = {"mappedFileSizeCommitLog": opts.file_size} if opts.file_size else None

    def stop():
        kill(build.proc)
        build.stop()

    def note(text):
        opts.notes.append(f"{label}: {text}")
        print(f"   {label}: {text}", flush=True)

    return aged.run(scenario, lambda: build.start("ASYNC_FLUSH", None, settings), stop,
                    build.bench, build.extra, opts, log, opts.work, note,
                    store=lambda: build.dir / "store")


def fmt(v, digits):
    return "–" if v is None else f"{v:,.{digits}f}"


def ratio(b, a):
    return f"{b / a:.2f}" if a and b is not None else "–"


def print_aged(scenarios, results, opts):
    """The rows on a broker that is not fresh again with their p99.9, and round after
    round the last round against the first, per build."""
    la, lb = opts.label_a, opts.label_b
    print("\nRows on a broker that is not fresh, medians, p50 / p99 / p99.9 ms (end to end for "
          "e2e rows)." + aged.limit_note(opts) + "\n")
    print(f"| row | {la} CPU µs/msg | {lb} CPU µs/msg | {la} p50 / p99 / p99.9 | "
          f"{lb} p50 / p99 / p99.9 | p99.9 {lb}/{la} |")
    print("|---|---:|---:|---:|---:|---:|")
    med = {}
    for sc in scenarios:
        for step in sc.steps:
            if step.name:
                for k in (0, 1):
                    runs = results.get((step.name, k), [])
                    med[(step.name, k)] = {key: median([r[key] for r in runs])
                                           for key in ("rate", "p50", "p99", "p999",
                                                       "broker_us", "tool_us")}
        for name in aged.shown_rows(sc):
            a, b = med[(name, 0)], med[(name, 1)]
            print(f"| {name} | {fmt(a['broker_us'], 1)} / {fmt(a['tool_us'], 1)} | "
                  f"{fmt(b['broker_us'], 1)} / {fmt(b['tool_us'], 1)} | "
                  f"{fmt(a['p50'], 3)} / {fmt(a['p99'], 3)} / {fmt(a['p999'], 3)} | "
                  f"{fmt(b['p50'], 3)} / {fmt(b['p99'], 3)} / {fmt(b['p999'], 3)} | "
                  f"{ratio(b['p999'], a['p999'])} |")
    pairs = [c for sc in scenarios for c in aged.comparisons(sc)]
    if pairs:
        print(f"\nRound after round, last / first round (rate below 1 and CPU or p99 above 1 "
              "are worse):\n")
        print(f"| row | {la} msg/s | {la} broker µs/msg | {la} p99 | {lb} msg/s | "
              f"{lb} broker µs/msg | {lb} p99 |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for last, first in pairs:
            cells = [ratio(med[(last, k)][key], med[(first, k)][key])
                     for k in (0, 1) for key in ("rate", "broker_us", "p99")]
            print(f"| {last.split(': ', 1)[1]} | " + " | ".join(cells) + " |")
    if opts.notes:
        print("\nStopped short: " + "; ".join(opts.notes) + ".")


def load_build(directory, work, flags="", broker=""):
    """A build to run: its mqbroker, mqbench and mqadmin in `directory` (exits when one
    is missing), mqbench run with the extra `flags` (one string), the broker with the
    extra settings of `broker` (one string of `key=value` words)."""
    d = Path(directory)
    for b in ("mqbroker", "mqbench", "mqadmin"):
        if not (d / b).exists():
            sys.exit(f"{d / b} not found")
    build = Vostok(d, work)
    build.bench = d / "mqbench"
    build.extra = flags.split()
    build.broker_settings = dict(w.split("=", 1) for w in broker.split())
    return build


def add_pair_args(ap, runs, duration, warmup):
    """The arguments every A/B script takes: the two builds, their labels, the runs and
    their length, the work directory and the JSON output (defaults per script)."""
    ap.add_argument("a", help="directory with build A's mqbroker, mqbench, mqadmin")
    ap.add_argument("b", help="directory with build B's binaries")
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--duration", type=float, default=duration)
    ap.add_argument("--warmup", type=float, default=warmup)
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", help="write every run's figures here")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    add_pair_args(ap, runs=3, duration=2, warmup=0.5)
    ap.add_argument("--rows", nargs="*", help="only rows whose name contains one of these "
                    "(produce + consume at once, the e2e rows at 50,000 msg/s and the rows on a "
                    "broker that is not fresh, "
                    f"{', '.join(aged.LABELS)}, run only when named here)")
    ap.add_argument("--aged", action="store_true",
                    help="add every row on a broker that is not fresh (" +
                    ", ".join(aged.LABELS) + ")")
    ap.add_argument("--file-size", type=int, default=None,
                    help="mappedFileSizeCommitLog (default 64 MiB, 67108864, for the plain rows; "
                         "the broker's default of 1 GiB, 1073741824, for the rows on a broker "
                         "that is not fresh)")
    aged.add_arguments(ap)
    ap.add_argument("--flags-a", default="", help="extra mqbench flags for A, one string")
    ap.add_argument("--flags-b", default="", help="extra mqbench flags for B, one string")
    ap.add_argument("--broker-a", default="",
                    help="extra broker settings for A, one string of key=value words")
    ap.add_argument("--broker-b", default="",
                    help="extra broker settings for B, e.g. \"transientStorePoolEnable=true\"")
    opts = ap.parse_args()
    opts.work = opts.work or tempfile.mkdtemp(prefix="vostok-quick-ab-")
    builds = [load_build(d, opts.work, extra, broker)
              for d, extra, broker in ((opts.a, opts.flags_a, opts.broker_a),
                                       (opts.b, opts.flags_b, opts.broker_b))]
    scenarios = aged.selected(aged.scenarios(opts), opts.rows, opts.aged)
    only_aged = opts.rows and all(any(n in sc.label or sc.label in n for sc in scenarios)
                                  for n in opts.rows)
    rows = [] if only_aged else [r for r in ROWS
                                 if not opts.rows or any(s in r[0] for s in opts.rows)]
    rows += [r for r in ON_REQUEST if opts.rows and any(s in r[0] for s in opts.rows)]
    opts.notes = []
    results = {}  # (row, build index) -> [figures]
    t0 = time.time()
    with open(Path(opts.work) / "mqbench.log", "w") as log:
        for row in rows:
            for i in range(opts.runs):
                order = (0, 1) if i % 2 == 0 else (1, 0)
                for k in order:
                    f = run_once(builds[k], row, opts, log)
                    label = (opts.label_a, opts.label_b)[k]
                    if f is None:
                        print(f"   {row[0]}: {label} run {i + 1}: mqbench failed", flush=True)
                        continue
                    results.setdefault((row[0], k), []).append(f)
                    print(f"   {row[0]}: {label} run {i + 1}: {f['rate']:,.0f} msg/s "
                          f"p50 {fmt(f['p50'], 3)} p99 {fmt(f['p99'], 3)} ms, CPU µs/msg "
                          f"broker {fmt(f['broker_us'], 1)} mqbench {fmt(f['tool_us'], 1)}",
                          flush=True)
        for sc in scenarios:
            print(f"== {sc.label}", flush=True)
            for i in range(opts.runs):
                for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                    label = f"{(opts.label_a, opts.label_b)[k]} run {i + 1}"
                    for name, f in run_scenario(builds[k], sc, opts, log, label).items():
                        results.setdefault((name, k), []).append(f)
                        print(aged.line(f"{name}: {label}", f), flush=True)
        rows += [(name,) for sc in scenarios for name in aged.shown_rows(sc)]
    la, lb = opts.label_a, opts.label_b
    print(f"\n{opts.runs} runs per build, interleaved; {opts.duration} s measured after "
          f"{opts.warmup} s warm-up; {time.time() - t0:.0f} s in all. Medians; the spread "
          "is min–max of the runs.\n")
    print("CPU µs/msg: microseconds of CPU per message sent in the window, broker / mqbench; "
          "quote these for a change: they move far less with load than msg/s.\n")
    print(f"| row | {la} CPU µs/msg | {lb} CPU µs/msg | broker µs {lb}/{la} | "
          f"{la} msg/s | {lb} msg/s | {lb}/{la} | {la} p50 / p99 ms | "
          f"{lb} p50 / p99 ms | p99 {lb}/{la} | {la} spread | {lb} spread |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    keys = ("rate", "p50", "p99", "p999", "broker_us", "tool_us")
    for name, *_ in rows:
        a, b = results.get((name, 0), []), results.get((name, 1), [])
        ma = {k: median([r[k] for r in a]) for k in keys}
        mb = {k: median([r[k] for r in b]) for k in keys}
        spread = [f"{min(r['rate'] for r in x):,.0f}–{max(r['rate'] for r in x):,.0f}"
                  if x else "–" for x in (a, b)]
        us = [f"{fmt(m['broker_us'], 1)} / {fmt(m['tool_us'], 1)}" for m in (ma, mb)]
        print(f"| {name} | {us[0]} | {us[1]} | {ratio(mb['broker_us'], ma['broker_us'])} | "
              f"{fmt(ma['rate'], 0)} | {fmt(mb['rate'], 0)} | "
              f"{ratio(mb['rate'], ma['rate'])} | {fmt(ma['p50'], 3)} / {fmt(ma['p99'], 3)} | "
              f"{fmt(mb['p50'], 3)} / {fmt(mb['p99'], 3)} | {ratio(mb['p99'], ma['p99'])} | "
              f"{spread[0]} | {spread[1]} |")
    if scenarios:
        print_aged(scenarios, results, opts)
    print(f"\nmqbench output: {Path(opts.work) / 'mqbench.log'}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(
            {f"{name}|{(la, lb)[k]}": v for (name, k), v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
