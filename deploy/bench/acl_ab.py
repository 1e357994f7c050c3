#!/usr/bin/env python3
"""ACL's cost, build against build: one row of quick_ab.py (the async row by default) on
two builds, each plain and with ACL on (brokers.py's `acl` profile: `aclEnable=true`, a
non-admin account, mqbench signing every request), the four interleaved run by run
(each round starts one variant further on), so that all four meet the same load on a
shared machine. Prints every run, the medians, and per build the broker's and
mqbench's extra CPU µs per message with ACL on (ACL minus plain of the same round).

    deploy/bench/acl_ab.py DIR_A DIR_B --runs 5          # DIR: mqbroker, mqbench, mqadmin

Needs only python3; build the binaries first (quick-ab.sh shows how for a revision).
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from matrix import median
from quick_ab import ROWS, add_pair_args, fmt, load_build, run_once


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_pair_args(ap, runs=5, duration=4, warmup=1)
    ap.add_argument("--row", default="async window 1,024, 1 task",
                    help="a row of quick_ab.py, by name")
    ap.add_argument("--file-size", type=int, default=None)
    opts = ap.parse_args()
    opts.work = opts.work or tempfile.mkdtemp(prefix="vostok-acl-ab-")
    row = next((r for r in ROWS if r[0] == opts.row), None)
    if row is None:
        sys.exit(f"no row {opts.row!r}; rows: {', '.join(r[0] for r in ROWS)}")
    builds = [load_build(d, opts.work) for d in (opts.a, opts.b)]
    labels = (opts.label_a, opts.label_b)
    variants = [(k, profile) for k in (0, 1) for profile in (None, "acl")]
    runs = {v: [] for v in variants}  # variant -> [(round, figures)]
    t0 = time.time()
    with open(Path(opts.work) / "mqbench.log", "w") as log:
        for i in range(opts.runs):
            for j in range(len(variants)):
                k, profile = variants[(i + j) % len(variants)]
                name = f"{labels[k]} {'ACL' if profile else 'plain'}"
                f = run_once(builds[k], row, opts, log, profile)
                if f is None:
                    print(f"   {name} run {i + 1}: mqbench failed", flush=True)
                    continue
                runs[(k, profile)].append((i, f))
                print(f"   {name} run {i + 1}: {f['rate']:,.0f} msg/s, CPU µs/msg broker "
                      f"{fmt(f['broker_us'], 2)} mqbench {fmt(f['tool_us'], 2)}", flush=True)
    print(f"\n{opts.row}: {opts.runs} rounds of the four, interleaved; {opts.duration} s "
          f"measured after {opts.warmup} s warm-up; {time.time() - t0:.0f} s in all.\n")
    print("| build | plain CPU µs/msg broker / mqbench | ACL on | ACL extra, broker "
          "(per round) | ACL extra, mqbench | plain / ACL msg/s |")
    print("|---|---:|---:|---|---:|---:|")
    for k in (0, 1):
        plain, acl = dict(runs[(k, None)]), dict(runs[(k, "acl")])
        extra = {key: [acl[i][key] - plain[i][key] for i in sorted(plain) if i in acl
                       and acl[i][key] is not None and plain[i][key] is not None]
                 for key in ("broker_us", "tool_us")}
        med = {(p, key): median([f[key] for f in d.values()])
               for p, d in (("plain", plain), ("acl", acl))
               for key in ("broker_us", "tool_us", "rate")}
        per_round = " ".join(f"{x:.2f}" for x in extra["broker_us"])
        print(f"| {labels[k]} | {fmt(med[('plain', 'broker_us')], 2)} / "
              f"{fmt(med[('plain', 'tool_us')], 2)} | {fmt(med[('acl', 'broker_us')], 2)} / "
              f"{fmt(med[('acl', 'tool_us')], 2)} | **{fmt(median(extra['broker_us']), 2)}** "
              f"({per_round}) | {fmt(median(extra['tool_us']), 2)} | "
              f"{fmt(med[('plain', 'rate')], 0)} / {fmt(med[('acl', 'rate')], 0)} |")
    print(f"\nmqbench output: {Path(opts.work) / 'mqbench.log'}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(
            {f"{labels[k]}|{profile or 'plain'}": [f for _, f in v]
             for (k, profile), v in runs.items()}, indent=1))


if __name__ == "__main__":
    main()
