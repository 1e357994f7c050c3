#!/usr/bin/env python3
"""Scale curves, run on demand (not part of the matrix): how throughput, latency and
broker memory change as one dimension grows, each point against a fresh standalone
Vostok broker on loopback.

  deploy/bench/scale.py                       # every section, default steps
  deploy/bench/scale.py size queues           # some sections
  deploy/bench/scale.py recovery --recovery-gib 10

Sections: disk (sequential write rate with dd), size (message size 128 B → 1 MiB),
queues (queues per topic 8 → 1,024), topics (1 → 10,000: creation and registration
time, route table size, broker RssAnon), connections (1 → 2,000 client connections
beside the load), groups (1 → 500 consumer groups reading one topic's backlog), recovery (a commitlog of N GiB, kill -9, time until it serves).
Prints Markdown tables. Needs the release binaries (matrix.sh builds them) and python3.
"""

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from brokers import Vostok, kill, rss_anon_kib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
UPDATE_AND_CREATE_TOPIC = 17
GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
SMALL_FILES = {"mappedFileSizeCommitLog": 64 << 20}


class Remoting:
    """A bare remoting connection: JSON headers, one request at a time."""

    def __init__(self, addr, timeout=30.0):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.opaque = 0

    def call(self, code, ext=None, body=b""):
        self.opaque += 1
        header = json.dumps({"code": code, "language": "JAVA", "version": 453,
                             "opaque": self.opaque, "flag": 0,
                             "extFields": {k: str(v) for k, v in (ext or {}).items()}}).encode()
        self.sock.sendall(struct.pack(">ii", 4 + len(header) + len(body), len(header))
                          + header + body)
        (length,) = struct.unpack(">i", self._read(4))
        rest = self._read(length)
        hlen = struct.unpack(">i", rest[:4])[0] & 0xFFFFFF
        return json.loads(rest[4:4 + hlen]), rest[4 + hlen:]

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def close(self):
        self.sock.close()


def bench(opts, ns, pid, kind, flags, duration=3, warmup=1):
    out = Path(opts.work) / "scale.json"
    if out.exists():
        out.unlink()
    args = [str(opts.bin / "mqbench"), kind, "-n", ns, "--broker-pid", str(pid), "-q",
            "--warmup", str(warmup), "-d", str(duration), "--json", str(out), *flags]
    r = subprocess.run(args, capture_output=True, text=True, timeout=duration + 300)
    if r.returncode != 0 or not out.exists():
        print(f"   mqbench failed: {r.stderr[-300:]}", flush=True)
        return None
    return json.loads(out.read_text())


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def fmt(v, d=0):
    return "–" if v is None else f"{v:,.{d}f}"


def start(opts, settings=None):
    broker = Vostok(opts.bin, opts.work)
    ns, pid = broker.start("ASYNC_FLUSH", None, {**SMALL_FILES, **(settings or {})})
    broker.port = int(next(a.split("=")[1] for a in broker.proc.args if a.startswith("listenPort=")))
    return broker, ns, pid


def stop(broker):
    kill(broker.proc)
    broker.stop()


def disk_rate(opts):
    """Sequential write rate of the store's file system: 1 GiB with dd, fdatasync'd."""
    path = Path(opts.work) / "dd.bin"
    r = subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", "count=1024",
                        "conv=fdatasync"], capture_output=True, text=True)
    path.unlink(missing_ok=True)
    for line in r.stderr.splitlines():
        if "copied" in line:
            secs = float(line.split(",")[-2].split()[0])
            return 1024 / secs
    return None


def section_disk(opts):
    print("\n## disk\n")
    rate = disk_rate(opts)
    opts.disk_mib_s = rate
    print(f"Sequential write, 1 GiB with dd (conv=fdatasync): {fmt(rate)} MiB/s")


def section_size(opts):
    print("\n## message size (async, 1 task, in flight at most 16 MiB)\n")
    if getattr(opts, "disk_mib_s", None) is None:
        opts.disk_mib_s = disk_rate(opts)
    row("body", "msg/s", "MiB/s", "of the disk's rate", "send p99 ms", "broker RssAnon MiB")
    row("---:", "---:", "---:", "---:", "---:", "---:")
    for size in opts.sizes:
        window = max(4, min(1024, (16 << 20) // size))
        broker, ns, pid = start(opts, {"maxMessageSize": max(4 << 20, 2 * size)})
        try:
            v = bench(opts, ns, pid, "produce", ["-t", "SizeTopic", "-s", str(size),
                                                 "--mode", "async", "--window", str(window)])
        finally:
            stop(broker)
        if v:
            share = v["mb_per_sec"] / opts.disk_mib_s * 100 if opts.disk_mib_s else None
            row(f"{size:,} B", fmt(v["msgs_per_sec"]), fmt(v["mb_per_sec"], 1),
                f"{fmt(share)} %", fmt(v["latency_ms"]["p99"], 2),
                fmt(v["broker"]["peak_rss_anon_mib"], 1))


def section_queues(opts):
    print("\n## queues per topic (async window 1,024, 1 task, 1 KiB)\n")
    row("queues", "msg/s", "send p99 ms", "e2e p99 ms at 10,000 msg/s", "broker RssAnon MiB")
    row("---:", "---:", "---:", "---:", "---:")
    for n in opts.queues:
        broker, ns, pid = start(opts)
        try:
            topic = f"Queues{n}"
            subprocess.run([str(opts.bin / "mqadmin"), "updateTopic", "-n", ns, "-t", topic,
                            "-b", f"127.0.0.1:{broker.port}", "-r", str(n), "-w", str(n)],
                           check=True, capture_output=True)
            p = bench(opts, ns, pid, "produce", ["-t", topic, "--mode", "async"])
            e = bench(opts, ns, pid, "e2e", ["-t", topic, "--mode", "async", "--rate", "10000"])
        finally:
            stop(broker)
        if p and e:
            rss = max(p["broker"]["peak_rss_anon_mib"], e["broker"]["peak_rss_anon_mib"])
            row(n, fmt(p["msgs_per_sec"]), fmt(p["latency_ms"]["p99"], 2),
                fmt(e["e2e_latency_ms"]["p99"], 2), fmt(rss, 1))


def topic_count(ns):
    c = Remoting(ns)
    try:
        _, body = c.call(GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return len(json.loads(body).get("topicList", [])), len(body)
    finally:
        c.close()


def section_topics(opts):
    print("\n## topics (created one by one over one connection, 8 queues each)\n")
    row("topics", "create s", "per topic ms", "until the name server lists all s",
        "topic list bytes", "topics.json bytes", "broker RssAnon MiB", "async msg/s on one")
    row("---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:")
    for n in opts.topics:
        broker, ns, pid = start(opts)
        try:
            before, _ = topic_count(ns)
            c = Remoting(f"127.0.0.1:{broker.port}")
            t0 = time.time()
            done = 0
            for i in range(n):
                h, _ = c.call(UPDATE_AND_CREATE_TOPIC, {
                    "topic": f"ScaleTopic{i}", "defaultTopic": "TBW102", "readQueueNums": 8,
                    "writeQueueNums": 8, "perm": 6, "topicFilterType": "SINGLE_TAG",
                    "topicSysFlag": 0, "order": "false"})
                if h.get("code") != 0:
                    print(f"   create failed: {h}", flush=True)
                    break
                done += 1
                if time.time() - t0 > opts.topic_budget:
                    break
            created = time.time() - t0
            c.close()
            while time.time() - t0 < created + 120:
                count, list_bytes = topic_count(ns)
                if count >= before + done:
                    break
                time.sleep(0.1)
            listed = time.time() - t0
            topics_json = sum(p.stat().st_size for p in broker.dir.rglob("topics.json"))
            rss = (rss_anon_kib(pid) or 0) / 1024
            v = bench(opts, ns, pid, "produce", ["-t", "ScaleTopic0", "--mode", "async"], 2)
        finally:
            stop(broker)
        note = "" if done == n else f" (stopped after {done:,}: over {opts.topic_budget} s)"
        row(f"{n:,}{note}", fmt(created, 2), fmt(created / max(done, 1) * 1000, 2),
            fmt(listed, 2), fmt(list_bytes), fmt(topics_json), fmt(rss, 1),
            fmt(v["msgs_per_sec"]) if v else "–")


def section_connections(opts):
    print("\n## connections (N idle remoting connections beside one async producer)\n")
    row("connections", "msg/s", "send p99 ms", "broker RssAnon MiB")
    row("---:", "---:", "---:", "---:")
    for n in opts.connections:
        broker, ns, pid = start(opts)
        conns = []
        try:
            for _ in range(n - 1):
                c = Remoting(f"127.0.0.1:{broker.port}")
                c.call(GET_ALL_TOPIC_LIST_FROM_NAMESERVER)  # a live remoting connection
                conns.append(c)
            v = bench(opts, ns, pid, "produce", ["-t", "ConnTopic", "--mode", "async"])
        finally:
            for c in conns:
                c.close()
            stop(broker)
        if v:
            row(f"{n:,}", fmt(v["msgs_per_sec"]), fmt(v["latency_ms"]["p99"], 2),
                fmt(v["broker"]["peak_rss_anon_mib"], 1))


def section_groups(opts):
    backlog = opts.group_backlog
    print(f"\n## consumer groups on one topic (each reads a backlog of {backlog:,} 1 KiB messages; "
          "push consumers in one mqbench process)\n")
    row("groups", "deliveries/s (all groups)", "time to read every group's copy s",
        "broker RssAnon MiB", "broker CPU cores", "mqbench RSS MiB")
    row("---:", "---:", "---:", "---:", "---:", "---:")
    for n in opts.groups:
        broker, ns, pid = start(opts)
        try:
            made = bench(opts, ns, pid, "produce",
                         ["-t", "FanOut", "--mode", "batch", "--batch", "32", "-c", str(backlog)],
                         duration=120)
            v = made and bench(opts, ns, pid, "consume",
                               ["-t", "FanOut", "--groups", str(n), "-c", str(n * backlog)],
                               duration=opts.group_budget, warmup=0)
        finally:
            stop(broker)
        if v:
            got = v.get("received_in_window") or 0
            short = "" if got >= n * backlog else f" ({got:,} of {n * backlog:,} in time)"
            row(f"{n:,}", fmt(v["msgs_per_sec"]), fmt(v["elapsed_secs"], 1) + short,
                fmt(v["broker"]["peak_rss_anon_mib"], 1), fmt(v["broker"].get("cpu_cores"), 2),
                fmt(v.get("mqbench", {}).get("peak_rss_mib"), 1))


def wait_serving(opts, ns, deadline):
    """Seconds until a sync send is acknowledged (None past the deadline)."""
    t0 = time.time()
    while time.time() < deadline:
        r = subprocess.run([str(opts.bin / "mqbench"), "produce", "-n", ns, "-t", "RecoverTopic",
                            "-c", "1", "-q", "--send-timeout", "1000"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0 and " 0 send errors" in r.stdout + r.stderr:
            return time.time() - t0
        time.sleep(0.05)
    return None


def section_recovery(opts):
    gib = opts.recovery_gib
    free = shutil.disk_usage(opts.work).free / 2**30
    print(f"\n## recovery: {gib} GiB commitlog, kill -9, restart\n")
    if free < gib * 2.5:
        print(f"Skipped: {free:.0f} GiB free where {gib} GiB are written (needs 2.5×).")
        return
    broker = Vostok(opts.bin, opts.work)
    ns, pid = broker.start("ASYNC_FLUSH", None, {"mappedFileSizeCommitLog": 1 << 30})
    count = gib * 2**30 // 1100
    t0 = time.time()
    subprocess.run([str(opts.bin / "mqbench"), "produce", "-n", ns, "-t", "RecoverTopic",
                    "--mode", "batch", "--batch", "32", "-w", "2", "-c", str(count), "-q"],
                   capture_output=True, timeout=3600)
    fill = time.time() - t0
    store = broker.dir / "store"
    size = sum(p.stat().st_size for p in (store / "commitlog").iterdir()) / 2**30
    kill(broker.proc)
    os.sync()
    args = broker.proc.args
    log = open(broker.dir / "restart.log", "w")
    t0 = time.time()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True,
                            env={**os.environ, "RUST_LOG": "warn"})
    booted = None
    for line in proc.stdout:
        if "boot success" in line:
            booted = time.time() - t0
            break
    subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
    serving = wait_serving(opts, ns, t0 + 300)
    served = None if serving is None else time.time() - t0
    broker.proc = proc
    stop(broker)
    row("commitlog GiB", "fill s", "kill -9 → boot success s", "kill -9 → first send acknowledged s")
    row("---:", "---:", "---:", "---:")
    row(fmt(size, 1), fmt(fill), fmt(booted, 2), fmt(served, 2))


SECTIONS = {"disk": section_disk, "size": section_size, "queues": section_queues,
            "topics": section_topics, "connections": section_connections,
            "groups": section_groups, "recovery": section_recovery}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sections", nargs="*", default=[],
                    help=f"sections to run, of {', '.join(SECTIONS)} (default: all)")
    ap.add_argument("--bin-dir", default=str(ROOT / "target" / "release"))
    ap.add_argument("--sizes", type=int, nargs="*",
                    default=[128, 1024, 4096, 16384, 65536, 262144, 1048576])
    ap.add_argument("--queues", type=int, nargs="*", default=[8, 64, 256, 1024])
    ap.add_argument("--topics", type=int, nargs="*", default=[1, 100, 1000, 10000])
    ap.add_argument("--topic-budget", type=float, default=300,
                    help="stop creating topics after this many seconds")
    ap.add_argument("--connections", type=int, nargs="*", default=[1, 100, 500, 2000])
    ap.add_argument("--groups", type=int, nargs="*", default=[1, 10, 100, 500])
    ap.add_argument("--group-backlog", type=int, default=20000,
                    help="messages each group reads")
    ap.add_argument("--group-budget", type=float, default=180,
                    help="seconds the groups may take to read their copies")
    ap.add_argument("--recovery-gib", type=int, default=10)
    ap.add_argument("--work", default=None)
    opts = ap.parse_args()
    unknown = [s for s in opts.sections if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown sections {unknown}: choose from {', '.join(SECTIONS)}")
    opts.bin = Path(opts.bin_dir)
    opts.work = opts.work or tempfile.mkdtemp(prefix="vostok-scale-")
    print(f"Scale curves, {time.strftime('%Y-%m-%d %H:%M %Z')}, "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    try:
        for s in opts.sections or SECTIONS:
            SECTIONS[s](opts)
    finally:
        shutil.rmtree(opts.work, ignore_errors=True)


if __name__ == "__main__":
    main()
