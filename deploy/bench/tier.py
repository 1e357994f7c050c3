#!/usr/bin/env python3
"""Tier reads beside the hot tail: a broker with tiered storage holds a backlog only in
the tier (its local commitlog files uploaded, then deleted); a cold consumer reads that
backlog from its first offset while an e2e producer and consumer run on another topic
at a fixed rate. Prints the cold reader's MiB/s and the hot tail's e2e p99 with and
without the cold reader, runs interleaved (alone, with; then with, alone; ...).

    deploy/bench/tier.py --bin-dir target/release                   # file system, 1 GiB
    deploy/bench/tier.py --backends fs s3 --moto target/pyenv/moto/bin/python
    deploy/bench/tier.py --gib 2 --runs 5 --bandwidth 0 67108864

Uses mqbroker and mqbench from --bin-dir (cargo build --release -p vostok-broker -p
vostok-tools), and for `s3` a Python with moto[server] (.ci/run installs one).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import Vostok, free_port, wait_port, terminate  # noqa: E402

KIB = 1024
# Bytes a stored 1 KiB message takes in the commitlog (body, properties, header).
STORED_BYTES = 1100
COLD_TOPIC = "ColdTopic"
HOT_TOPIC = "HotTopic"
EVERY_HOUR = ";".join(f"{h:02}" for h in range(24))


def start_moto(python, work):
    port = free_port()
    log = open(Path(work) / "moto.log", "w")
    proc = subprocess.Popen([python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    if not wait_port(port, 30):
        terminate(proc)
        raise RuntimeError("moto did not start")
    # moto accepts unsigned requests: a plain PUT creates the bucket.
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("PUT", "/vostok-bench")
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"bucket not created: {r.status} {r.read()!r}")
    return proc, port


def mqbench(bin_dir, kind, namesrv, pid, flags, json_path, log, topic):
    args = [str(bin_dir / "mqbench"), kind, "-n", namesrv, "-t", topic, "-s", str(KIB), "-q",
            "--broker-pid", str(pid), "--json", str(json_path), *flags]
    log.write("$ " + " ".join(args) + "\n")
    log.flush()
    return subprocess.Popen(args, stdout=log, stderr=log)


def finish(proc, json_path, timeout=900):
    proc.wait(timeout=timeout)
    if proc.returncode != 0 or not json_path.exists():
        return None
    v = json.loads(json_path.read_text())
    json_path.unlink()
    return v


def local_files(store):
    d = store / "commitlog"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def fill_and_expire(opts, bin_dir, ns, pid, store, work, log):
    """Fills the cold topic, then waits until its files are in the tier and gone."""
    count = int(opts.gib * 2**30 // STORED_BYTES)
    j = Path(work) / "fill.json"
    started = time.time()
    p = mqbench(bin_dir, "produce", ns, pid,
                ["--mode", "batch", "--batch", "32", "-w", "2", "-c", str(count)], j, log,
                COLD_TOPIC)
    v = finish(p, j)
    if v is None:
        raise RuntimeError(f"fill failed; see {log.name}")
    filled = time.time() - started
    deadline = time.time() + 1800
    while True:
        files = local_files(store)
        if len(files) <= 2 and files and files[0] != "0" * 20:
            break
        if time.time() > deadline:
            raise RuntimeError(f"the tier did not take the backlog: {len(files)} local files")
        time.sleep(0.5)
    return count, filled, time.time() - started - filled


def run_pair(opts, bin_dir, ns, pid, work, log, with_cold, k):
    """One hot-tail e2e run, with the cold reader beside it or not."""
    hot_json = Path(work) / "hot.json"
    cold_json = Path(work) / "cold.json"
    cold = None
    if with_cold:
        # A new group from the first offset: everything comes from the tier.
        cold = mqbench(bin_dir, "consume", ns, pid,
                       ["--group", f"cold-{k}", "-d", str(opts.duration + opts.warmup + 2)],
                       cold_json, log, COLD_TOPIC)
        time.sleep(1)
    # A topic per run: a new e2e group reads its topic from the first offset.
    hot = mqbench(bin_dir, "e2e", ns, pid,
                  ["--mode", "async", "--window", "1024", "-w", "1", "--rate", str(opts.rate),
                   "--warmup", str(opts.warmup), "-d", str(opts.duration)],
                  hot_json, log, f"{HOT_TOPIC}{k}{'Beside' if with_cold else 'Alone'}")
    h = finish(hot, hot_json)
    c = finish(cold, cold_json) if cold else None
    lat = (h or {}).get("e2e_latency_ms") or {}
    out = {"p50": lat.get("p50"), "p99": lat.get("p99"), "p999": lat.get("p999"),
           "hot_rate": (h or {}).get("recv_msgs_per_sec")}
    if c:
        out["cold_mib"] = c.get("mb_per_sec")
        out["cold_msgs"] = c.get("msgs_per_sec")
        out["cold_received"] = c.get("received")
    return out


def med(runs, key):
    xs = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def bench(opts, backend, bandwidth, moto_port, bin_dir, work):
    settings = {
        "messageStorePlugIn": "org.apache.rocketmq.tieredstore.TieredMessageStore",
        "mappedFileSizeCommitLog": opts.file_mib << 20,
        "fileReservedTime": 0,
        "deleteWhen": EVERY_HOUR,
        "cleanResourceInterval": 1000,
        "tieredStoreReadBandwidth": bandwidth,
    }
    tier_dir = Path(work) / "tier"
    if backend == "fs":
        settings["tieredBackendServiceProvider"] = "posix"
        settings["tieredStoreFilePath"] = tier_dir
    else:
        settings.update({
            "tieredBackendServiceProvider": "s3",
            "objectStoreEndpoint": f"http://127.0.0.1:{moto_port}",
            "objectStoreBucket": "vostok-bench",
            "objectStoreRegion": "us-east-1",
            "objectStoreAccessKey": "testing",
            "objectStoreSecretKey": "testing",
            "tieredStorePathPrefix": f"bench-{int(time.time())}",
        })
    broker = Vostok(bin_dir, work)
    ns, pid = broker.start("ASYNC_FLUSH", settings=settings)
    log = open(Path(work) / f"tier-{backend}-{bandwidth}.log", "w")
    try:
        store = broker.dir / "store"
        count, fill_s, upload_s = fill_and_expire(opts, bin_dir, ns, pid, store, work, log)
        print(f"{backend}, bandwidth {bandwidth}: {count:,} messages filled in {fill_s:.1f} s, "
              f"in the tier and gone locally {upload_s:.1f} s later", flush=True)
        alone, beside = [], []
        for k in range(opts.runs):
            order = (False, True) if k % 2 == 0 else (True, False)
            for with_cold in order:
                r = run_pair(opts, bin_dir, ns, pid, work, log, with_cold, k)
                (beside if with_cold else alone).append(r)
                print(f"  run {k + 1} {'with' if with_cold else 'without'} the cold reader: "
                      f"{r}", flush=True)
        return {"backend": backend, "bandwidth": bandwidth, "messages": count,
                "fill_s": fill_s, "upload_s": upload_s, "alone": alone, "beside": beside}
    finally:
        log.close()
        broker.stop()
        shutil.rmtree(tier_dir, ignore_errors=True)


def fmt(v, digits=2):
    return "–" if v is None else f"{v:,.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default="target/release")
    ap.add_argument("--backends", nargs="+", default=["fs"], choices=["fs", "s3"])
    ap.add_argument("--moto", default=os.environ.get("VOSTOK_MOTO"),
                    help="a Python with moto[server], for the s3 backend")
    ap.add_argument("--gib", type=float, default=1.0, help="the backlog in the tier")
    ap.add_argument("--file-mib", type=int, default=64, help="commitlog file size")
    ap.add_argument("--bandwidth", nargs="+", type=int, default=[64 << 20],
                    help="tieredStoreReadBandwidth values to run (0: no bound)")
    ap.add_argument("--rate", type=int, default=5000, help="the hot tail's msg/s")
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=None)
    opts = ap.parse_args()
    bin_dir = Path(opts.bin_dir).resolve()
    work = Path(opts.work or tempfile.mkdtemp(prefix="vostok-tier-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work directory {work}; load average {os.getloadavg()}", flush=True)
    results = []
    moto = None
    try:
        for backend in opts.backends:
            port = None
            if backend == "s3":
                if not opts.moto:
                    sys.exit("the s3 backend needs --moto (or VOSTOK_MOTO)")
                moto, port = start_moto(opts.moto, work)
            for bw in opts.bandwidth:
                results.append(bench(opts, backend, bw, port, bin_dir, work))
            if moto:
                terminate(moto)
                moto = None
    finally:
        if moto:
            terminate(moto)
    print(f"load average after {os.getloadavg()}")
    print()
    print("| backend | tieredStoreReadBandwidth | cold reader MiB/s | hot p99 ms alone | "
          "hot p99 ms beside the cold reader | hot p50 alone / beside |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        bw = "no bound" if r["bandwidth"] == 0 else f"{r['bandwidth'] >> 20} MiB/s"
        print(f"| {'file system' if r['backend'] == 'fs' else 'S3 (moto)'} | {bw} | "
              f"{fmt(med(r['beside'], 'cold_mib'), 1)} | {fmt(med(r['alone'], 'p99'), 3)} | "
              f"{fmt(med(r['beside'], 'p99'), 3)} | {fmt(med(r['alone'], 'p50'), 3)} / "
              f"{fmt(med(r['beside'], 'p50'), 3)} |")
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
