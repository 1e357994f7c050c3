#!/usr/bin/env python3
"""The benchmark matrix: fixed rows of mqbench against a freshly started standalone
Vostok broker (and, when installed, the rocketmq-rust 1.0 broker, alternating run by
run), medians of --runs runs, written as a Markdown table; then the rows on a broker
that is not fresh (aged.py: its first 10 s, after a burst, a grown store, round after
round).

Run through matrix.sh, which builds the release binaries first. Needs only python3.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import namedtuple
from pathlib import Path

import aged
from brokers import Peer, Vostok, free_port, kill, settle
from replication import REPLICATION_MODES, ReplicatedVostok

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

KIB = 1024
BACKLOG = 2_000_000

# A row's targets: a msg/s floor, p50 and p99 ceilings in ms, and ceilings on the broker's
# and mqbench's CPU µs per message (the figure a change is quoted in). None: no target.
Target = namedtuple("Target", "rate p50 p99 broker_us tool_us", defaults=(None,) * 5)

# Every row's broker keeps its peak RssAnon at or under this.
RSS_CEILING_MIB = 64

# name, flush mode, mqbench command, its flags, Target or None
ROWS = [
    ("sync, 1 task", "ASYNC_FLUSH", "produce", ["--mode", "sync", "-w", "1"], Target(rate=10_000, p50=0.1)),
    ("sync, 8 tasks", "ASYNC_FLUSH", "produce", ["--mode", "sync", "-w", "8"], None),
    ("async window 1,024, 1 task", "ASYNC_FLUSH", "produce",
     ["--mode", "async", "--window", "1024", "-w", "1"], Target(250_000, broker_us=3, tool_us=3)),
    # The same with exactly-once publish on: the cost of the duplication window.
    ("async window 1,024, 1 task, duplication window 60 s", "ASYNC_FLUSH", "produce",
     ["--mode", "async", "--window", "1024", "-w", "1"], None),
    ("async window 1,024, 8 tasks", "ASYNC_FLUSH", "produce",
     ["--mode", "async", "--window", "1024", "-w", "8"], None),
    ("batch x32, 1 task", "ASYNC_FLUSH", "produce", ["--mode", "batch", "--batch", "32", "-w", "1"],
     Target(200_000, broker_us=1)),
    ("batch x32, 8 tasks", "ASYNC_FLUSH", "produce", ["--mode", "batch", "--batch", "32", "-w", "8"],
     None),
    ("SYNC_FLUSH sync, 64 tasks", "SYNC_FLUSH", "produce", ["--mode", "sync", "-w", "64"],
     Target(40_000, broker_us=6)),
    ("SYNC_FLUSH async window 1,024", "SYNC_FLUSH", "produce",
     ["--mode", "async", "--window", "1024", "-w", "1"], None),
    ("SYNC_FLUSH batch x32, 8 tasks", "SYNC_FLUSH", "produce",
     ["--mode", "batch", "--batch", "32", "-w", "8"], None),
    ("consume 2M backlog (push)", "ASYNC_FLUSH", "consume", [], Target(300_000)),
    ("consume 2M backlog (lite pull, pull batch 32)", "ASYNC_FLUSH", "consume",
     ["--lite-pull", "--pull-batch", "32"], None),
    # POP over remoting: receive 32 with 8 receive loops, one batch ack per receive; the
    # bar is half the push row.
    ("consume 2M backlog (POP receive + ack, batch 32)", "ASYNC_FLUSH", "consume",
     ["--pop", "--pull-batch", "32"], None),
    # One message in four selected, by tag (consume-queue tag codes) and by SQL92 over a
    # property (every record's properties evaluated on the broker).
    ("consume 2M backlog, tag TagA (1 in 4)", "ASYNC_FLUSH", "consume", ["--tag", "TagA"], None),
    ("consume 2M backlog, SQL92 k < 1 (1 in 4)", "ASYNC_FLUSH", "consume", ["--sql", "k < 1"],
     None),
    ("produce + consume at once (async 1,024)", "ASYNC_FLUSH", "e2e",
     ["--mode", "async", "--window", "1024", "-w", "1"], Target(150_000)),
    ("e2e at 50,000 msg/s", "ASYNC_FLUSH", "e2e",
     ["--mode", "async", "--window", "1024", "-w", "1", "--rate", "50000"], Target(p99=2.0)),
    # The same two rows with the producer sending batches of 32, the cheap way to send.
    ("produce (batch x32) + consume at once", "ASYNC_FLUSH", "e2e",
     ["--mode", "batch", "--batch", "32", "-w", "1"], Target(100_000)),
    ("e2e at 50,000 msg/s (batch x32)", "ASYNC_FLUSH", "e2e",
     ["--mode", "batch", "--batch", "32", "-w", "1", "--rate", "50000"], Target(p99=2.0)),
    # Latency below saturation, to tell queueing from per-message cost.
    # 10 µs per message at 10,000 msg/s: the broker busy at most 0.1 core.
    ("e2e at 10,000 msg/s", "ASYNC_FLUSH", "e2e",
     ["--mode", "async", "--window", "1024", "-w", "1", "--rate", "10000"],
     Target(p99=1.0, broker_us=10)),
    # Master/slave groups: a master and its slave on this machine (replication.py).
    # SYNC_MASTER acknowledges once the slave holds the message; the bar for the async row
    # is half the ASYNC_FLUSH standalone row.
    ("SYNC_MASTER + slave, sync, 64 tasks", "SYNC_MASTER", "produce",
     ["--mode", "sync", "-w", "64"], None),
    ("SYNC_MASTER + slave, async window 1,024", "SYNC_MASTER", "produce",
     ["--mode", "async", "--window", "1024", "-w", "1"], None),
    ("SYNC_MASTER + slave, batch x32, 8 tasks", "SYNC_MASTER", "produce",
     ["--mode", "batch", "--batch", "32", "-w", "8"], None),
    # The slave's lag under full ASYNC_MASTER load.
    ("ASYNC_MASTER + slave, batch x32, 8 tasks", "ASYNC_MASTER+SLAVE", "produce",
     ["--mode", "batch", "--batch", "32", "-w", "8"], None),
    # The slave's lag at a rate the master can sustain: half of the standalone async row
    # (about 90,000 msg/s on a quiet 2-core machine), for a minute (ROW_DURATION); the bar
    # is a p99 lag within 100 ms. `--replication-rate` sets the rate.
    ("ASYNC_MASTER + slave, async at half the standalone rate, 60 s", "ASYNC_MASTER+SLAVE",
     "produce", ["--mode", "async", "--window", "1024", "-w", "1", "--rate", "HALF_RATE"], None),
]

# Rows measured for longer than `--duration`, in seconds.
ROW_DURATION = {"ASYNC_MASTER + slave, async at half the standalone rate, 60 s": 60}

# The sync and async rows again with ACL (plain_acl.yml, a non-admin account with PUB|SUB,
# every request signed and checked) and with TLS (enforcing, ECDSA P-256 certificates made
# with openssl), Vostok only: the cost of signing and of encryption beside the plain rows.
SECURE_BASE = ["sync, 1 task", "sync, 8 tasks", "async window 1,024, 1 task",
               "async window 1,024, 8 tasks"]
PROFILE = {}
for _profile, _label in (("acl", "ACL on"), ("tls", "TLS on")):
    for _row in [r for r in ROWS if r[0] in SECURE_BASE]:
        _name = f"{_row[0]}, {_label}"
        PROFILE[_name] = _profile
        ROWS.append((_name, _row[1], _row[2], _row[3], None))

# The async and batch rows again with the Prometheus exporter on (metricsExporterType=PROM):
# what recording RocketMQ 5's metrics on the send path costs (the bar: 3 %).
# The plain rows run with the console and the exporter off, so nothing is recorded.
METRICS_BASE = ["async window 1,024, 1 task", "async window 1,024, 8 tasks",
                "batch x32, 1 task", "batch x32, 8 tasks"]
for _row in [r for r in ROWS if r[0] in METRICS_BASE]:
    _name = f"{_row[0]}, metrics on"
    PROFILE[_name] = "metrics"
    ROWS.append((_name, _row[1], _row[2], _row[3], None))

# Broker settings of rows that need more than the flush mode (Vostok only).
BROKER_SETTINGS = {
    "async window 1,024, 1 task, duplication window 60 s": {"duplicationWindowSeconds": 60},
}


def vostok_only(name, flags):
    """Rows the peer does not run: Vostok's profiles (ACL, TLS, metrics), its broker
    settings, SQL92 filters."""
    return name in PROFILE or name in BROKER_SETTINGS or "--sql" in flags


# The backlog is filled with four tags in turn (TagA..TagD, property k = 0..3), so that
# filtered rows select one message in this many.
BACKLOG_TAGS = "TagA,TagB,TagC,TagD"
BACKLOG_SHARE = {
    "consume 2M backlog, tag TagA (1 in 4)": 4,
    "consume 2M backlog, SQL92 k < 1 (1 in 4)": 4,
}
# Backlog settings: SQL92 subscriptions need property filters.
BACKLOG_SETTINGS = {"enablePropertyFilter": "true"}


# The peer's figures with its own client on this machine, measured before.
PEER_OWN_CLIENT = {
    "sync, 1 task": 2_385,
    "async window 1,024, 1 task": 4_789,
    "batch x32, 1 task": 36_337,
    "consume 2M backlog (push)": 7_375,
    "produce + consume at once (async 1,024)": 1_509,
}


def mqbench(bench, kind, namesrv, pid, flags, common, json_path, log, topic="BenchTopic"):
    args = [str(bench), kind, "-n", namesrv, "-t", topic, "-s", str(KIB),
            "--broker-pid", str(pid), "--json", str(json_path), *common, *flags]
    log.write("$ " + " ".join(args) + "\n")
    log.flush()
    r = subprocess.run(args, stdout=log, stderr=log, timeout=600)
    if r.returncode != 0 or not json_path.exists():
        return None
    return json.loads(json_path.read_text())


def per_message_us(cpu_secs, count):
    """Microseconds of CPU per message: the figure that load on a shared machine moves
    least (msg/s moves with it by tens of percent)."""
    return cpu_secs * 1e6 / count if cpu_secs is not None and count else None


def figures(v, kind):
    """The row's figures from one mqbench JSON summary."""
    lat = v.get("e2e_latency_ms") if kind == "e2e" else v.get("latency_ms")
    broker = v.get("broker") or {}
    tool = v.get("mqbench") or {}
    # CPU seconds and messages over the same window: sends, or receipts for a backlog row.
    count = v.get("received_in_window") if kind == "consume" else v.get("sent")
    rate = v["msgs_per_sec"]
    if kind == "e2e" and v.get("recv_msgs_per_sec") is not None:
        # Producing and consuming at once: the slower side is the figure.
        rate = min(rate, v["recv_msgs_per_sec"])
    return {
        "rate": rate,
        "mb": v["mb_per_sec"] if kind != "e2e" else rate * KIB / 2**20,
        "p50": lat["p50"] if lat else None,
        "p99": lat["p99"] if lat else None,
        "p999": lat.get("p999") if lat else None,
        "rss": broker.get("peak_rss_anon_mib"),
        "broker_cpu": broker.get("cpu_cores"),
        "tool_cpu": tool.get("cpu_cores"),
        "broker_us": per_message_us(broker.get("cpu_secs"), count),
        "tool_us": per_message_us(tool.get("cpu_secs"), count),
        "errors": v.get("send_errors") or 0,
        "lost": v.get("lost"),
        "dups": v.get("duplicates"),
    }


def median(values):
    values = [x for x in values if x is not None]
    return statistics.median(values) if values else None


def summarise(runs):
    if not runs:
        return None
    out = {k: median([r[k] for r in runs]) for k in ("rate", "mb", "p50", "p99", "p999",
                                                    "broker_cpu", "tool_cpu", "broker_us",
                                                    "tool_us")}
    waited = [r["waited"] for r in runs if r.get("waited") is not None]
    out["waited"] = median(waited) if waited else None
    out["rss"] = max((r["rss"] for r in runs if r["rss"] is not None), default=None)
    out["errors"] = sum(r["errors"] for r in runs)
    out["lost"] = sum(r["lost"] or 0 for r in runs) if any(r["lost"] is not None for r in runs) else None
    out["dups"] = sum(r["dups"] or 0 for r in runs) if any(r["dups"] is not None for r in runs) else None
    out["n"] = len(runs)
    return out


def run_matrix(opts, targets, bench, log):
    common = ["-q", "--warmup", str(opts.warmup)]
    results = {}  # (row, target) -> [figures]
    rows = [r for r in ROWS if not opts.rows or any(s in r[0] for s in opts.rows)]
    if opts.only:
        rows = [r for r in rows if r[0] in opts.only]
    json_path = Path(opts.work) / "run.json"
    backlog_rows = [(name, flags) for name, _, kind, flags, _ in rows if kind == "consume"]
    # A plain row and its ACL/TLS variants run interleaved, run by run, so that they
    # meet the same load on the shared machine.
    variants = {}
    for r in rows:
        if r[0] in PROFILE:
            variants.setdefault(r[0].rsplit(", ", 1)[0], []).append(r)
    groups = []
    for r in rows:
        if r[0] in PROFILE and any(b[0] == r[0].rsplit(", ", 1)[0] for b in rows):
            continue  # runs with its plain row
        groups.append([r] + variants.get(r[0], []))
    if opts.interleave:
        # Every selected row in one group: run i of each row meets the same load.
        groups = [[r for g in groups for r in g if r[2] != "consume"]] + \
                 [g for g in groups if g[0][2] == "consume"]
    for group in groups:
        name, flush, kind, flags, _ = group[0]
        if kind == "consume":
            if backlog_rows:
                run_backlog_rows(opts, targets, bench, log, backlog_rows, results)
                backlog_rows = []
            continue
        print("== " + " / ".join(r[0] for r in group), flush=True)
        for i in range(opts.runs):
            # Each round starts with the next row of the group: no row always runs first.
            shift = i % len(group)
            for name, flush, kind, flags, _ in group[shift:] + group[:shift]:
                profile = PROFILE.get(name)
                settings = BROKER_SETTINGS.get(name)
                if flush in REPLICATION_MODES:
                    # Master/slave rows run a Vostok group only (no peer group to compare with).
                    row_targets = [opts.replicated]
                else:
                    row_targets = [t for t in targets
                                   if not vostok_only(name, flags) or t.name == "vostok"]
                duration = ["-d", str(ROW_DURATION.get(name, opts.duration))]
                flags = [str(opts.replication_rate) if f == "HALF_RATE" else f for f in flags]
                for t in row_targets:
                    if flush in REPLICATION_MODES:
                        t.row = name  # the lag sampled in this run belongs to this row
                    ns, pid = t.start(flush, profile, settings)
                    try:
                        if json_path.exists():
                            json_path.unlink()
                        v = mqbench(bench, kind, ns, pid, flags + t.client_flags,
                                    common + duration, json_path, log)
                    finally:
                        t.stop()
                        settle()
                    if v is None:
                        print(f"   {name}: {t.name} run {i + 1}: mqbench failed (see {log.name})",
                              flush=True)
                        continue
                    f = figures(v, kind)
                    results.setdefault((name, t.name), []).append(f)
                    print(f"   {name}: {t.name} run {i + 1}: {f['rate']:,.0f} msg/s "
                          f"p50 {f['p50']} p99 {f['p99']} ms, CPU µs/msg broker "
                          f"{fmt(f['broker_us'], 1)} mqbench {fmt(f['tool_us'], 1)}", flush=True)
    run_aged(opts, targets, bench, log, results)
    return rows, results


def run_aged(opts, targets, bench, log, results):
    """The rows on a broker that is not fresh (aged.py): per run and target, one broker
    per scenario, its steps in order, killed and its store deleted after."""
    for sc in opts.aged:
        print(f"== {sc.label}", flush=True)
        for i in range(opts.runs):
            for t in targets:
                def stop(t=t):
                    kill(getattr(t, "proc", None))  # the store is thrown away
                    t.stop()
                    settle()

                def note(text, t=t, i=i):
                    opts.aged_notes.append(f"{t.name} run {i + 1}: {text}")
                    print(f"   {t.name} run {i + 1}: {text}", flush=True)

                out = aged.run(sc, lambda t=t: t.start("ASYNC_FLUSH"), stop, bench, [], opts,
                               log, opts.work, note, store=lambda t=t: t.dir / "store")
                for name, f in out.items():
                    results.setdefault((name, t.name), []).append(f)
                    print(aged.line(f"{name}: {t.name} run {i + 1}", f), flush=True)


def run_backlog_rows(opts, targets, bench, log, rows, results):
    """One broker per target with a backlog of --backlog messages, filled once for all
    backlog rows; each run reads it from the start with a new consumer group."""
    json_path = Path(opts.work) / "run.json"
    started = []
    print("== backlog of %s messages" % f"{opts.backlog:,}", flush=True)
    try:
        for t in targets:
            ns, pid = t.start("ASYNC_FLUSH", None, BACKLOG_SETTINGS)
            started.append((t, ns, pid))
            t0 = time.time()
            fill = mqbench(bench, "produce", ns, pid,
                           ["--mode", "batch", "--batch", "32", "-w", "2", "-c", str(opts.backlog),
                            "--tags", BACKLOG_TAGS],
                           ["-q"], json_path, log)
            if fill is None:
                print(f"   {t.name}: filling the backlog failed", flush=True)
            else:
                print(f"   {t.name}: filled in {time.time() - t0:.0f} s", flush=True)
            settle()
        for name, flags in rows:
            print(f"== {name}", flush=True)
            count = opts.backlog // BACKLOG_SHARE.get(name, 1)
            for i in range(opts.runs):
                for t, ns, pid in started:
                    if vostok_only(name, flags) and t.name != "vostok":
                        continue
                    if json_path.exists():
                        json_path.unlink()
                    group = f"bench_backlog_{len(results)}_{i}_{int(time.time())}"
                    v = mqbench(bench, "consume", ns, pid,
                                flags + ["--group", group, "-c", str(count),
                                         "-d", str(opts.consume_duration)],
                                ["-q"], json_path, log)
                    if v is None:
                        print(f"   {t.name} run {i + 1}: mqbench failed", flush=True)
                        continue
                    f = figures(v, "consume")
                    results.setdefault((name, t.name), []).append(f)
                    print(f"   {t.name} run {i + 1}: {f['rate']:,.0f} msg/s", flush=True)
    finally:
        for t, _, _ in started:
            t.stop()
        settle()


def fmt(v, digits=0):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def verdict(target, s):
    """The row's targets, each marked met or missed by the runs' median; every row has
    the RssAnon ceiling."""
    if not s:
        return ""
    target = target or Target()
    parts = []

    def check(label, value, bound, floor=False):
        if bound is None:
            return
        met = value is not None and (value >= bound if floor else value <= bound)
        parts.append(f"{label} {'≥' if floor else '≤'} {bound:,} {'✅' if met else '❌'}")

    check("msg/s", s["rate"], target.rate, floor=True)
    check("p50", s["p50"], target.p50)
    check("p99", s["p99"], target.p99)
    check("broker µs/msg", s["broker_us"], target.broker_us)
    check("mqbench µs/msg", s["tool_us"], target.tool_us)
    check("RssAnon MiB", s["rss"], RSS_CEILING_MIB)
    return ", ".join(parts)


def machine():
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kib / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, Linux {platform.release()}"


def load():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def write_table(opts, rows, results, peer, load_before, elapsed, peer_note):
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip() or "?"
    out = [
        "# Benchmark matrix results",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M %Z')} at commit `{commit}` on {machine()}; broker and "
        f"mqbench on the same cores. Load average before {load_before}, after {load()}. "
        f"Medians of {opts.runs} runs ({opts.duration} s measured after {opts.warmup} s warm-up; "
        f"backlog runs read up to {opts.backlog:,} messages or {opts.consume_duration} s), 1 KiB bodies, "
        f"ASYNC_FLUSH unless named. Whole matrix: {elapsed / 60:.1f} min.",
        "",
        "p50/p99: send latency; for e2e rows end-to-end (stamped send time to listener); none "
        "for backlog rows (their born-to-consume latency is the backlog's age). Peak RssAnon: the broker's anonymous memory, highest "
        "sample over the runs. CPU µs/msg: microseconds of CPU per message over the window "
        "(broker / mqbench; for backlog rows per message received), the figure to quote for a "
        "change: it moves far less with the machine's load than msg/s. CPU cores: cores busy "
        "over the window (broker / mqbench).",
        "",
    ]
    head = ("| row | CPU µs/msg broker / mqbench | msg/s | MiB/s | p50 ms | p99 ms | "
            "broker peak RssAnon MiB | CPU cores broker / mqbench | target |")
    sep = "|---|---:|---:|---:|---:|---:|---:|---:|---|"
    if peer:
        head += (" peer CPU µs/msg broker / mqbench | broker µs/msg Vostok / peer | peer msg/s | "
                 "Vostok / peer | peer p50 ms | peer p99 ms | p99 Vostok / peer |")
        sep += "---:|---:|---:|---:|---:|---:|---:|"
    blank_peer = " – | | | | | | |"
    if rows:
        out += [head, sep]
    for name, flush, kind, flags, target in rows:
        s = summarise(results.get((name, "vostok"), []))
        if s is None:
            out.append(f"| {name} | | failed | | | | | | {verdict(target, None)} |"
                       + (" | | | | | | |" if peer else ""))
            continue
        note = ""
        if flush == "ASYNC_MASTER+SLAVE":
            note += opts.replicated.lag_note(name)
        if s["errors"]:
            note += f" ({s['errors']:,} send errors)"
        if kind == "e2e" and s["lost"] is not None:
            note += f" (lost {s['lost']}, dup {s['dups']})"
        cpu = f"{fmt(s['broker_cpu'], 2)} / {fmt(s['tool_cpu'], 2)}"
        # A backlog's born-to-consume latency is its age, not a figure of the broker.
        p50, p99 = (None, None) if kind == "consume" else (s["p50"], s["p99"])
        us = f"{fmt(s['broker_us'], 1)} / {fmt(s['tool_us'], 1)}"
        line = (f"| {name}{note} | {us} | {fmt(s['rate'])} | {fmt(s['mb'], 1)} | {fmt(p50, 3)} | "
                f"{fmt(p99, 3)} | {fmt(s['rss'], 1)} | {cpu} | {verdict(target, s)} |")
        if peer and vostok_only(name, flags):
            line += blank_peer
        elif peer:
            p = summarise(results.get((name, "peer"), []))
            if p and p["rate"]:
                pp50, pp99 = (None, None) if kind == "consume" else (p["p50"], p["p99"])
                p99_ratio = f"{p99 / pp99:.2f}" if p99 and pp99 else ""
                us_ratio = (f"{s['broker_us'] / p['broker_us']:.2f}"
                            if s["broker_us"] and p["broker_us"] else "")
                line += (f" {fmt(p['broker_us'], 1)} / {fmt(p['tool_us'], 1)} | {us_ratio} | "
                         f"{fmt(p['rate'])} | {s['rate'] / p['rate']:.1f}× | {fmt(pp50, 3)} | "
                         f"{fmt(pp99, 3)} | {p99_ratio} |")
            elif flush in REPLICATION_MODES:
                line += blank_peer
            else:
                line += " | | failed | | | | |"
        out.append(line)
    out.append("")
    out += aged_table(opts, results, peer)
    costs = []
    for name in [r[0] for r in rows if r[0] in PROFILE]:
        plain = name.rsplit(", ", 1)[0]
        secure = results.get((name, "vostok"), [])
        base = results.get((plain, "vostok"), [])
        # Runs were interleaved: run i of the variant met the load of run i of its plain row.
        ratios = [a["rate"] / b["rate"] for a, b in zip(secure, base) if b["rate"]]
        extra = median([a["broker_us"] - b["broker_us"] for a, b in zip(secure, base)
                        if a["broker_us"] is not None and b["broker_us"] is not None])
        if ratios and len(secure) == len(base):
            r = median(ratios)
            costs.append(f"| {name} | {fmt(extra, 2)} | {r:.3f} | {(1 - r) * 100:+.1f} % | "
                         f"{' '.join(f'{x:.3f}' for x in ratios)} |")
    if costs:
        out += ["Variant rows against their plain row: the median over runs of the broker's "
                "extra CPU µs per message, and of the variant's rate divided by the plain row's, "
                "each run against the plain run of the same round (runs interleaved).", "",
                "| row | extra broker CPU µs/msg | rate / plain | cost | per run |",
                "|---|---:|---:|---:|---|", *costs, ""]
    if peer_note:
        out += [peer_note, ""]
    own = ", ".join(f"{k} {v:,}" for k, v in PEER_OWN_CLIENT.items())
    out += [f"Peer reference with its own client on this machine (measured before): {own} msg/s.", ""]
    Path(opts.out).write_text("\n".join(out))
    print("\n".join(out))


def aged_table(opts, results, peer):
    """The rows of aged.py: p50, p99, p99.9 and CPU µs per message, the peer beside them,
    and round after round the last round against the first."""
    if not opts.aged:
        return []
    out = [f"Rows on a broker that is not fresh (medians of {opts.runs} runs, one broker per "
           f"scenario and run): the first 10 s of a fresh broker without warm-up; e2e right "
           f"after {opts.burst_secs:g} s of batch x32 sends at full speed; e2e and throughput "
           f"rows on a store filled with {opts.fill_gib:g} GiB first (default 1 GiB "
           f"commitlog files); the async, batch and e2e rows {opts.rounds} times in a row on "
           "one broker (first and last round shown). p50/p99/p99.9: end to end for e2e rows, "
           "send latency otherwise. Waited for a core: milliseconds per second that the broker's "
           "threads, together, were runnable but waiting for a core during the row "
           "(/proc/<pid>/task/*/schedstat); the tails of these rows follow it on a shared "
           "machine." + aged.limit_note(opts), ""]
    head = ("| row | CPU µs/msg broker / mqbench | msg/s | p50 ms | p99 ms | p99.9 ms | "
            "waited for a core, ms/s |")
    sep = "|---|---:|---:|---:|---:|---:|---:|"
    if peer:
        head += (" peer CPU µs/msg broker / mqbench | peer msg/s | peer p50 ms | peer p99 ms | "
                 "peer p99.9 ms | p99 Vostok / peer |")
        sep += "---:|---:|---:|---:|---:|---:|"
    out += [head, sep]

    def cells(s):
        if s is None:
            return "failed | | | | |"
        note = ""
        if s["lost"]:
            note = f" (lost {s['lost']})"
        return (f"{fmt(s['broker_us'], 1)} / {fmt(s['tool_us'], 1)} | {fmt(s['rate'])}{note} | "
                f"{fmt(s['p50'], 3)} | {fmt(s['p99'], 3)} | {fmt(s['p999'], 3)} |")

    for sc in opts.aged:
        for name in aged.shown_rows(sc):
            s = summarise(results.get((name, "vostok"), []))
            line = f"| {name} | {cells(s)} {fmt(s and s['waited'], 0)} |"
            if peer:
                p = summarise(results.get((name, "peer"), []))
                ratio = (f"{s['p99'] / p['p99']:.2f}" if s and p and s["p99"] and p["p99"]
                         else "")
                line += f" {cells(p)} {ratio} |"
            out.append(line)
    out.append("")
    rounds = [c for sc in opts.aged for c in aged.comparisons(sc)]
    if rounds:
        who = ["vostok", "peer"] if peer else ["vostok"]
        out += ["Round after round: the last round's median against the first's (1.00: no "
                "change; rate below 1 and CPU or p99 above 1 are worse).", "",
                "| row | " + " | ".join(f"{w} msg/s | {w} broker µs/msg | {w} p99" for w in who)
                + " |", "|---|" + "---:|---:|---:|" * len(who)]
        for last, first in rounds:
            parts = []
            for w in who:
                a = summarise(results.get((first, w), []))
                b = summarise(results.get((last, w), []))
                for k in ("rate", "broker_us", "p99"):
                    parts.append(f"{b[k] / a[k]:.2f}" if a and b and a[k] and b[k] is not None
                                 else "–")
            out.append(f"| {last.split(': ', 1)[1]} | " + " | ".join(parts) + " |")
        out.append("")
    if opts.aged_notes:
        out += ["Stopped short: " + "; ".join(opts.aged_notes) + ".", ""]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin-dir", default=str(ROOT / "target" / "release"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=4)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--backlog", type=int, default=BACKLOG)
    ap.add_argument("--consume-duration", type=float, default=8)
    ap.add_argument("--out", default=str(HERE / "results.md"))
    ap.add_argument("--work", default=None, help="temp dir for stores and logs")
    ap.add_argument("--replication-rate", type=int, default=45_000,
                    help="msg/s of the master/slave row at half the standalone rate")
    ap.add_argument("--rows", nargs="*", help="only rows whose name contains one of these")
    ap.add_argument("--only", nargs="*", help="only rows with exactly these names")
    ap.add_argument("--interleave", action="store_true",
                    help="run the selected rows round by round (run 1 of each, then run 2, ...) "
                         "rather than row by row, so that rows compared meet the same load")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--no-aged", action="store_true",
                    help="leave out the rows on a broker that is not fresh (first 10 s, after a "
                         "burst, aged, round after round), which run in the whole matrix and "
                         "when --rows names them")
    aged.add_arguments(ap)
    ap.add_argument("--peer-namesrv", default=shutil.which("rocketmq-namesrv-rust"))
    ap.add_argument("--peer-broker", default=shutil.which("rocketmq-broker-rust"))
    opts = ap.parse_args()
    opts.work = opts.work or tempfile.mkdtemp(prefix="vostok-matrix-")
    every = not opts.rows and not opts.only and not opts.no_aged
    opts.aged = [] if opts.no_aged else aged.selected(aged.scenarios(opts), opts.rows, every)
    opts.aged_notes = []
    bin_dir = Path(opts.bin_dir)
    bench = bin_dir / "mqbench"
    for b in (bench, bin_dir / "mqbroker", bin_dir / "mqadmin"):
        if not b.exists():
            sys.exit(f"{b} not found: build with cargo build --release -p vostok-broker -p vostok-tools")
    targets = [Vostok(bin_dir, opts.work)]
    opts.replicated = ReplicatedVostok(bin_dir, opts.work, free_port)
    peer = not opts.no_peer and opts.peer_namesrv and opts.peer_broker
    if peer:
        targets.append(Peer(opts.peer_namesrv, opts.peer_broker, bin_dir / "mqadmin", opts.work))
        peer_note = "Peer: rocketmq-rust 1.0 (`rocketmq-broker-rust`, commitLogMicroBatchEnabled=false) " \
                    "with the same mqbench, alternating run by run."
    else:
        peer_note = ("Peer column skipped: rocketmq-rust's `rocketmq-namesrv-rust` / `rocketmq-broker-rust` "
                     "are not installed (see README.md)." if not opts.no_peer else "")
        print(peer_note or "peer disabled", flush=True)
    log_path = Path(opts.work) / "mqbench.log"
    load_before = load()
    t0 = time.time()
    with open(log_path, "w") as log:
        rows, results = run_matrix(opts, targets, bench, log)
    write_table(opts, rows, results, peer, load_before, time.time() - t0, peer_note)
    print(f"\nmqbench output: {log_path}")


if __name__ == "__main__":
    main()
