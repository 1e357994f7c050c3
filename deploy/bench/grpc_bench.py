"""gRPC rows of the benchmark: Apache RocketMQ's official 5.x Python client
(`rocketmq-python-client`) against a fresh standalone Vostok broker, beside the
classic rows (mqbench over remoting) run on the same broker.

    target/pyenv/v5/bin/python deploy/bench/grpc_bench.py --bin-dir target/release

Run it with the interpreter of the virtual environment `.ci/run` makes (it imports
the client). Rows, 1 KiB messages, medians of --runs runs:

* send, sync, 1 thread: `Producer.send` in a loop for --duration seconds;
* send, async, window N: `Producer.send_async` with at most N sends outstanding;
* receive + ack over a backlog of --backlog messages: `SimpleConsumer.receive(32)` and
  an ack per message, in --threads threads, until the backlog is read;
* the classic rows: mqbench produce sync 1 task, async window 1,024, and
  consume --pop (POP over remoting) over the same backlog.

The Python client does the gRPC work in Python, so the client process, not the
broker, bounds the gRPC rows; the broker's and the client's CPU are reported.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

KIB = 1024
HERE = Path(__file__).resolve().parent
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Broker:
    """A fresh standalone broker (embedded name server) in its own directory."""

    def __init__(self, bin_dir, work):
        self.bin = Path(bin_dir) / "mqbroker"
        self.dir = Path(tempfile.mkdtemp(dir=work))
        self.proc = None

    def start(self):
        ns, grpc = free_port(), free_port()
        args = [str(self.bin), "-o", "listenPort=0", "-o", f"embeddedNamesrvPort={ns}",
                "-o", f"grpcServerPort={grpc}", "-o", "fastListenEnable=false",
                # 128 MiB commitlog files: a run writes far less than the default 1 GiB.
                "-o", "mappedFileSizeCommitLog=134217728",
                "-o", f"storePathRootDir={self.dir / 'store'}"]
        log = open(self.dir / "broker.log", "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
        for line in self.proc.stdout:
            if "boot success" in line:
                break
        self.namesrv = f"127.0.0.1:{ns}"
        self.endpoint = f"127.0.0.1:{grpc}"
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        return self

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def config(endpoint):
    from rocketmq import ClientConfiguration, Credentials
    return ClientConfiguration(endpoint, Credentials(), request_timeout=10)


def message(topic, body):
    from rocketmq import Message
    m = Message()
    m.topic = topic
    m.body = body
    return m


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def grpc_row(broker, row, args):
    """Runs one gRPC row in a Python process of its own (the 5.x client shares one
    event loop per process, which a client's shutdown stops) and adds the broker's CPU."""
    b0, t0 = cpu_seconds(broker.proc.pid), time.time()
    out = subprocess.run([sys.executable, __file__, "--child", row, broker.endpoint, *map(str, args)],
                         capture_output=True, text=True, timeout=900)
    elapsed = time.time() - t0
    line = [l for l in out.stdout.splitlines() if l.startswith("ROW ")]
    if out.returncode != 0 or not line:
        raise RuntimeError(f"{row} failed:\n{out.stdout}\n{out.stderr}")
    v = json.loads(line[-1][4:])
    v["broker_cpu"] = (cpu_seconds(broker.proc.pid) - b0) / elapsed
    return v


def child(row, endpoint, *args):
    """One gRPC row, measured from the client's side; prints `ROW <json>`."""
    make = {"send_sync": grpc_send_sync, "send_async": grpc_send_async, "receive": grpc_receive}[row]
    client, run = make(endpoint, *args)
    c0, t0 = time.process_time(), time.time()
    count, lat = run()
    elapsed = time.time() - t0
    cpu = (time.process_time() - c0) / elapsed
    client.shutdown()
    print("ROW " + json.dumps({"rate": count / elapsed, "p50": percentile(lat, 0.5),
                               "p99": percentile(lat, 0.99), "client_cpu": cpu}), flush=True)


def grpc_send_sync(endpoint, topic, duration):
    duration = float(duration)
    from rocketmq import Producer
    p = Producer(config(endpoint), (topic,))
    p.startup()
    body = b"x" * KIB

    def run():
        lat, n, end = [], 0, time.time() + duration
        while time.time() < end:
            t = time.perf_counter()
            p.send(message(topic, body))
            lat.append((time.perf_counter() - t) * 1000)
            n += 1
        return n, lat
    return p, run


def grpc_send_async(endpoint, topic, duration, window):
    duration, window = float(duration), int(window)
    from rocketmq import Producer
    p = Producer(config(endpoint), (topic,))
    p.startup()
    body = b"x" * KIB

    def run():
        lat, lock = [], threading.Lock()
        slots = threading.Semaphore(window)
        done = {"n": 0}

        def sent(started, future):
            ms = (time.perf_counter() - started) * 1000
            ok = future.exception() is None
            with lock:
                if ok:
                    lat.append(ms)
                    done["n"] += 1
            slots.release()

        end = time.time() + duration
        while time.time() < end:
            slots.acquire()
            t = time.perf_counter()
            p.send_async(message(topic, body)).add_done_callback(lambda f, t=t: sent(t, f))
        for _ in range(window):
            slots.acquire()
        return done["n"], lat
    return p, run


def grpc_receive(endpoint, topic, group, backlog, threads):
    backlog, threads = int(backlog), int(threads)
    from rocketmq import FilterExpression, SimpleConsumer
    c = SimpleConsumer(config(endpoint), group, {topic: FilterExpression("*")}, await_duration=2)
    c.startup()

    def run():
        count, lock = {"n": 0}, threading.Lock()

        def loop():
            empty = 0
            while empty < 2:
                with lock:
                    if count["n"] >= backlog:
                        return
                msgs = c.receive(32, 30)
                if not msgs:
                    empty += 1
                    continue
                for m in msgs:
                    c.ack(m)
                with lock:
                    count["n"] += len(msgs)
        ts = [threading.Thread(target=loop) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return count["n"], []
    return c, run


def mqbench(bench, broker, kind, flags, work, topic="BenchTopic"):
    out = Path(work) / "mqbench.json"
    if out.exists():
        out.unlink()
    args = [str(bench), kind, "-n", broker.namesrv, "-t", topic, "-s", str(KIB),
            "--broker-pid", str(broker.proc.pid), "--json", str(out), "-q", *flags]
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=True)
    v = json.loads(out.read_text())
    lat = v.get("latency_ms") or {}
    return {"rate": v["msgs_per_sec"], "p50": lat.get("p50") if kind == "produce" else None,
            "p99": lat.get("p99") if kind == "produce" else None,
            "broker_cpu": (v.get("broker") or {}).get("cpu_cores"),
            "client_cpu": (v.get("mqbench") or {}).get("cpu_cores")}


def fill(bench, broker, topic, count, work):
    out = Path(work) / "fill.json"
    subprocess.run([str(bench), "produce", "-n", broker.namesrv, "-t", topic, "-s", str(KIB), "-q",
                    "--mode", "batch", "--batch", "32", "-w", "2", "-c", str(count), "--json", str(out)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600, check=True)


def median_row(runs):
    keys = ("rate", "p50", "p99", "broker_cpu", "client_cpu")
    return {k: (statistics.median([r[k] for r in runs if r[k] is not None])
                if any(r[k] is not None for r in runs) else None) for k in keys}


def fmt(v, digits=0):
    return "–" if v is None else f"{v:,.{digits}f}"


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", default="target/release")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--backlog", type=int, default=20_000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--work", default=None)
    opts = ap.parse_args()
    work = opts.work or tempfile.mkdtemp(prefix="vostok-grpc-bench-")
    Path(work).mkdir(parents=True, exist_ok=True)
    bench = Path(opts.bin_dir) / "mqbench"
    rows = {}

    def add(name, value):
        rows.setdefault(name, []).append(value)
        print(f"   {name}: {value['rate']:,.0f} msg/s", flush=True)

    for i in range(opts.runs):
        print(f"== run {i + 1}", flush=True)
        broker = Broker(opts.bin_dir, work).start()
        try:
            add("classic: mqbench produce, sync, 1 task", mqbench(
                bench, broker, "produce", ["--mode", "sync", "-w", "1", "-d", str(opts.duration)], work))
            add("classic: mqbench produce, async window 1,024", mqbench(
                bench, broker, "produce", ["--mode", "async", "--window", "1024", "-w", "1",
                                           "-d", str(opts.duration)], work))
            add("gRPC: Python send, sync, 1 thread",
                grpc_row(broker, "send_sync", [f"GrpcSync{i}", opts.duration]))
            add(f"gRPC: Python send_async, window {opts.window}",
                grpc_row(broker, "send_async", [f"GrpcAsync{i}", opts.duration, opts.window]))
            fill(bench, broker, "Backlog", opts.backlog, work)
            time.sleep(1)
            add(f"classic: mqbench consume --pop (POP over remoting), {opts.backlog:,} backlog", mqbench(
                bench, broker, "consume", ["--pop", "--pull-batch", "32", "--group", f"pop{i}",
                                           "-c", str(opts.backlog), "-d", "120"], work, "Backlog"))
            add(f"gRPC: Python receive(32) + ack, {opts.threads} threads, {opts.backlog:,} backlog",
                grpc_row(broker, "receive", ["Backlog", f"grpc{i}", opts.backlog, opts.threads]))
        finally:
            broker.stop()
    print()
    print("| row | msg/s | p50 ms | p99 ms | CPU broker / client |")
    print("|---|---:|---:|---:|---:|")
    for name, runs in rows.items():
        m = median_row(runs)
        print(f"| {name} | {fmt(m['rate'])} | {fmt(m['p50'], 3)} | {fmt(m['p99'], 3)} | "
              f"{fmt(m['broker_cpu'], 2)} / {fmt(m['client_cpu'], 2)} |")


if __name__ == "__main__":
    main()
