#!/usr/bin/env python3
"""Tier reads beside the hot tail: a broker with tiered storage holds a backlog only in
the tier (its local commitlog files uploaded, then deleted); a cold consumer reads that
whole backlog, from its first offset to its end, while an e2e producer and consumer run
on another topic at a fixed rate, in back-to-back windows for as long as the cold read
lasts. Windows of the hot tail alone, before and after, are the comparison. Prints the
cold reader's MiB/s over the whole read and the hot tail's e2e p99/p99.9 with and
without it, with the broker's CPU and the load average.

    deploy/bench/tier.py --bin-dir target/release                   # file system, 10 GiB
    deploy/bench/tier.py --backends fs s3 --moto target/pyenv/moto/bin/python
    deploy/bench/tier.py --gib 1 --bandwidth 0 67108864             # a quick look

Uses mqbroker and mqbench from --bin-dir (cargo build --release -p vostok-broker -p
vostok-tools), and for `s3` a Python with moto[server] (.ci/run installs one). The
backends run one after the other, each one's files deleted before the next starts:
about `--gib` of local commitlog at most while filling, plus `--gib` in the tier (a
directory in the work directory, or moto's temporary files, also put there).
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


def free_gib(path):
    s = os.statvfs(path)
    return s.f_bavail * s.f_frsize / 2**30


def start_moto(python, work):
    port = free_port()
    log = open(Path(work) / "moto.log", "w")
    # moto keeps objects over 5 MiB in temporary files: in the work directory, so that
    # they are seen (and gone with moto's process, which has them already unlinked).
    spill = Path(work) / "moto-tmp"
    spill.mkdir(exist_ok=True)
    proc = subprocess.Popen([python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(spill)})
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


def finish(proc, json_path, timeout=3600):
    proc.wait(timeout=timeout)
    if proc.returncode != 0 or not json_path.exists():
        return None
    v = json.loads(json_path.read_text())
    json_path.unlink()
    return v


def local_files(store):
    d = store / "commitlog"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def check_disk(opts, work):
    """Stops the run before the disk (shared with others) fills up."""
    if free_gib(work) < opts.min_free_gib:
        raise RuntimeError(f"less than {opts.min_free_gib} GiB free in {work}: stopped")


def fill_and_expire(opts, bin_dir, ns, pid, store, work, log):
    """Fills the cold topic, `--chunk-gib` at a time, each chunk uploaded and deleted
    locally before the next is sent (so that the local commitlog stays small); then
    waits until only the last files are local."""
    count = int(opts.gib * 2**30 // STORED_BYTES)
    chunk = max(1, int(opts.chunk_gib * 2**30 // STORED_BYTES))
    j = Path(work) / "fill.json"
    started = time.time()
    least_free = free_gib(work)
    sending = 0.0
    sent = 0
    while sent < count:
        n = min(chunk, count - sent)
        t = time.time()
        p = mqbench(bin_dir, "produce", ns, pid,
                    ["--mode", "batch", "--batch", "32", "-w", "2", "-c", str(n)], j, log,
                    COLD_TOPIC)
        if finish(p, j) is None:
            raise RuntimeError(f"fill failed; see {log.name}")
        sending += time.time() - t
        sent += n
        deadline = time.time() + 3600
        while True:
            least_free = min(least_free, free_gib(work))
            check_disk(opts, work)
            files = local_files(store)
            if len(files) <= 2 and files and files[0] != "0" * 20:
                break
            if time.time() > deadline:
                raise RuntimeError(f"the tier did not take the backlog: {len(files)} local files")
            time.sleep(0.5)
    return count, sending, time.time() - started - sending, least_free


def hot_window(opts, bin_dir, ns, pid, work, log, name):
    """One hot-tail e2e run on a topic of its own (a new e2e group reads its topic from
    the first offset)."""
    hot_json = Path(work) / "hot.json"
    started = time.time()
    hot = mqbench(bin_dir, "e2e", ns, pid,
                  ["--mode", "async", "--window", "1024", "-w", "1", "--rate", str(opts.rate),
                   "--warmup", str(opts.warmup), "-d", str(opts.duration)],
                  hot_json, log, f"{HOT_TOPIC}{name}")
    h = finish(hot, hot_json) or {}
    check_disk(opts, work)
    lat = h.get("e2e_latency_ms") or {}
    return {"p50": lat.get("p50"), "p99": lat.get("p99"), "p999": lat.get("p999"),
            "max": lat.get("max"), "hot_rate": h.get("recv_msgs_per_sec"),
            "broker_cores": (h.get("broker") or {}).get("cpu_cores"),
            "load1": os.getloadavg()[0], "started": started, "ended": time.time()}


def alone_windows(opts, bin_dir, ns, pid, work, log, tag, n):
    out = []
    for k in range(n):
        r = hot_window(opts, bin_dir, ns, pid, work, log, f"{tag}Alone{k}")
        print(f"    hot alone {k + 1}/{n}: {short(r)}", flush=True)
        out.append(r)
    return out


def short(r):
    return (f"p50 {fmt(r['p50'], 3)} p99 {fmt(r['p99'], 3)} p99.9 {fmt(r['p999'], 3)} ms, "
            f"{fmt(r['hot_rate'], 0)} msg/s, broker {fmt(r['broker_cores'])} cores, "
            f"load {r['load1']:.1f}")


def read_backlog(opts, bin_dir, ns, pid, work, log, tag, count):
    """The cold reader reads the whole backlog from offset 0 while hot windows run back
    to back; the windows that ended before the cold reader did are the ones beside it."""
    cold_json = Path(work) / "cold.json"
    started = time.time()
    cold = mqbench(bin_dir, "consume", ns, pid,
                   ["--group", f"cold-{tag}", "-c", str(count), "-d", str(opts.cold_limit)],
                   cold_json, log, COLD_TOPIC)
    beside, k = [], 0
    while cold.poll() is None:
        r = hot_window(opts, bin_dir, ns, pid, work, log, f"{tag}Beside{k}")
        r["whole"] = cold.poll() is None  # the cold reader ran for all of it
        print(f"    hot beside {k + 1}{'' if r['whole'] else ' (cold read ended during it)'}: "
              f"{short(r)}", flush=True)
        beside.append(r)
        k += 1
    c = finish(cold, cold_json) or {}
    took = time.time() - started
    cold_out = {"mib_per_sec": c.get("mb_per_sec"), "msgs_per_sec": c.get("msgs_per_sec"),
                "received": c.get("received"), "elapsed": c.get("elapsed_secs"),
                "wall": took, "broker_cores": (c.get("broker") or {}).get("cpu_cores"),
                "reader_cores": (c.get("mqbench") or {}).get("cpu_cores")}
    print(f"    cold reader: {fmt(cold_out['received'], 0)} of {count:,} messages in "
          f"{fmt(cold_out['elapsed'], 1)} s, {fmt(cold_out['mib_per_sec'], 1)} MiB/s, broker "
          f"{fmt(cold_out['broker_cores'])} cores", flush=True)
    return cold_out, beside


def med(runs, key):
    xs = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def worst(runs, key):
    xs = [r[key] for r in runs if r.get(key) is not None]
    return max(xs) if xs else None


def settings_for(opts, backend, bandwidth, moto_port, tier_dir, prefix):
    settings = {
        "messageStorePlugIn": "org.apache.rocketmq.tieredstore.TieredMessageStore",
        "mappedFileSizeCommitLog": opts.file_mib << 20,
        "fileReservedTime": 0,
        "deleteWhen": EVERY_HOUR,
        "cleanResourceInterval": 1000,
        "tieredStoreReadBandwidth": bandwidth,
    }
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
            "tieredStorePathPrefix": prefix,
        })
    return settings


def bench_backend(opts, backend, moto_port, bin_dir, work):
    """Fills the backlog once, then reads it whole under each read budget (a broker
    restart on the same store between them)."""
    tier_dir = Path(work) / "tier"
    prefix = f"bench-{int(time.time())}"
    broker = Vostok(bin_dir, work)
    out = []
    log = open(Path(work) / f"tier-{backend}.log", "w")
    try:
        for n, bw in enumerate(opts.bandwidth):
            settings = settings_for(opts, backend, bw, moto_port, tier_dir, prefix)
            if n == 0:
                ns, pid = broker.start("ASYNC_FLUSH", settings=settings)
                store = broker.dir / "store"
                count, fill_s, upload_s, least_free = fill_and_expire(
                    opts, bin_dir, ns, pid, store, work, log)
                print(f"{backend}: {count:,} messages ({opts.gib} GiB) sent in {fill_s:.1f} s "
                      f"({opts.chunk_gib} GiB at a time), waited {upload_s:.1f} s in all for "
                      f"them to be in the tier and gone locally; least free disk "
                      f"{least_free:.1f} GiB, now {free_gib(work):.1f} GiB", flush=True)
            else:
                broker.halt()
                ns, pid = broker.start("ASYNC_FLUSH", settings=settings, reuse_dir=broker.dir)
            tag = f"{backend}{bw >> 20}"
            print(f"  {backend}, tieredStoreReadBandwidth {bw}: load {os.getloadavg()}",
                  flush=True)
            load_before = os.getloadavg()
            before = alone_windows(opts, bin_dir, ns, pid, work, log, f"{tag}B", opts.alone)
            cold, beside = read_backlog(opts, bin_dir, ns, pid, work, log, tag, count)
            after = alone_windows(opts, bin_dir, ns, pid, work, log, f"{tag}A", opts.alone)
            out.append({"backend": backend, "bandwidth": bw, "messages": count,
                        "fill_s": fill_s, "upload_s": upload_s, "least_free_gib": least_free,
                        "alone": before + after, "beside": beside, "cold": cold,
                        "load_before": load_before, "load_after": os.getloadavg()})
        return out
    finally:
        broker.stop()
        shutil.rmtree(tier_dir, ignore_errors=True)
        try:
            log.close()
        except OSError:
            pass


def fmt(v, digits=2):
    return "–" if v is None else f"{v:,.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", default="target/release")
    ap.add_argument("--backends", nargs="+", default=["fs"], choices=["fs", "s3"])
    ap.add_argument("--moto", default=os.environ.get("VOSTOK_MOTO"),
                    help="a Python with moto[server], for the s3 backend")
    ap.add_argument("--gib", type=float, default=10.0, help="the backlog in the tier")
    ap.add_argument("--file-mib", type=int, default=64, help="commitlog file size")
    ap.add_argument("--bandwidth", nargs="+", type=int, default=[64 << 20],
                    help="tieredStoreReadBandwidth values to run, in order (0: no bound)")
    ap.add_argument("--rate", type=int, default=5000, help="the hot tail's msg/s")
    ap.add_argument("--duration", type=float, default=15.0,
                    help="seconds measured per hot window")
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--alone", type=int, default=3,
                    help="hot windows without the cold reader, before it and after it")
    ap.add_argument("--cold-limit", type=float, default=3600.0,
                    help="seconds after which the cold reader gives up")
    ap.add_argument("--chunk-gib", type=float, default=1.0,
                    help="the backlog is sent this much at a time, each part in the tier "
                         "and deleted locally before the next")
    ap.add_argument("--min-free-gib", type=float, default=3.0,
                    help="stop when the disk has less free than this")
    ap.add_argument("--work", default=None)
    opts = ap.parse_args()
    bin_dir = Path(opts.bin_dir).resolve()
    work = Path(opts.work or tempfile.mkdtemp(prefix="vostok-tier-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    # The tier holds the backlog and the hot tail's messages (5 MiB/s at the default
    # rate); the local commitlog about a chunk.
    need = 1.5 * opts.gib + 2 * opts.chunk_gib + opts.min_free_gib
    if free_gib(work) < need:
        sys.exit(f"{work} has {free_gib(work):.1f} GiB free; this run needs about {need:.0f}")
    print(f"work directory {work}; load average {os.getloadavg()}; "
          f"{free_gib(work):.1f} GiB free", flush=True)
    results = []
    moto = None
    try:
        for backend in opts.backends:
            port = None
            if backend == "s3":
                if not opts.moto:
                    sys.exit("the s3 backend needs --moto (or VOSTOK_MOTO)")
                moto, port = start_moto(opts.moto, work)
            results.extend(bench_backend(opts, backend, port, bin_dir, work))
            if moto:
                terminate(moto)
                moto = None
                shutil.rmtree(work / "moto-tmp", ignore_errors=True)
            (work / "results.json").write_text(json.dumps(results, indent=1))
    finally:
        if moto:
            terminate(moto)
    print(f"load average after {os.getloadavg()}")
    print()
    print("| backend | `tieredStoreReadBandwidth` | cold reader MiB/s (whole read) | read time s | "
          "hot windows alone / beside | hot p99 ms alone: median (worst) | "
          "hot p99 ms beside: median (worst) | hot p99.9 ms alone / beside (medians) | "
          "hot p50 ms alone / beside | broker cores alone / beside | load average |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        bw = "no bound" if r["bandwidth"] == 0 else f"{r['bandwidth'] >> 20} MiB/s"
        a = r["alone"]
        b = [w for w in r["beside"] if w.get("whole")]
        c = r["cold"]
        loads = [w["load1"] for w in a + r["beside"]]
        print(f"| {'file system' if r['backend'] == 'fs' else 'S3 (moto)'} | {bw} | "
              f"{fmt(c['mib_per_sec'], 1)} | {fmt(c['elapsed'], 0)} | {len(a)} / {len(b)} | "
              f"{fmt(med(a, 'p99'), 3)} ({fmt(worst(a, 'p99'), 3)}) | "
              f"{fmt(med(b, 'p99'), 3)} ({fmt(worst(b, 'p99'), 3)}) | "
              f"{fmt(med(a, 'p999'), 3)} / {fmt(med(b, 'p999'), 3)} | "
              f"{fmt(med(a, 'p50'), 3)} / {fmt(med(b, 'p50'), 3)} | "
              f"{fmt(med(a, 'broker_cores'))} / {fmt(med(b, 'broker_cores'))} | "
              f"{min(loads):.1f}–{max(loads):.1f} |")
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
