"""Master/slave rows of the benchmark matrix: a Vostok master (SYNC_MASTER or
ASYNC_MASTER, embedded name server) and its slave, two processes on this machine over
loopback, and a sampler of the slave's lag behind the master.

The lag is read over the remoting protocol (GET_BROKER_RUNTIME_INFO, code 28), two ways:

* Counted by the slave (the figure that answers "within 100 ms"): for every batch it
  applies, the age of the newest record in it (now - the master's store time of that
  record; one clock, as both run here), kept as a cumulative histogram
  (`haApplyDelayHistogram`), with the parts: the master's `haSendDelayHistogram` (the
  same age when the master's write of it to the socket completed), the slave's
  `haApplyWaitHistogram` (read from the socket to applied) and the master's
  `haSendBlockHistogram` (how long each socket write took).
  Snapshots before and after the load are subtracted: every batch counts, none is
  sampled, and no query delay enters the figure.
* Sampled every 50 ms (the earlier method, kept for comparison): bytes = master's
  commitLogMaxOffset - slave's; time = master's commitLogMaxStoreTimestamp - the
  slave's, 0 when the slave holds everything. The slave is asked first and the master
  second, so the figure includes the time between the two answers, which a loaded
  master or a descheduled sampler stretches; that time is recorded beside it.
"""

import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

GET_BROKER_RUNTIME_INFO = 28
REPLICATION_MODES = ("SYNC_MASTER", "ASYNC_MASTER+SLAVE")


def runtime_info(addr, timeout=2.0):
    """The broker's runtime key/value table, or None."""
    host, port = addr.rsplit(":", 1)
    header = json.dumps({"code": GET_BROKER_RUNTIME_INFO, "language": "JAVA", "version": 453,
                         "opaque": 1, "flag": 0, "extFields": {}}).encode()
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as s:
            s.sendall(frame)
            head = _read(s, 4)
            (length,) = struct.unpack(">i", head)
            rest = _read(s, length)
            (hlen,) = struct.unpack(">i", rest[:4])
            hlen &= 0xFFFFFF
            body = rest[4 + hlen:]
            return json.loads(body).get("table", {})
    except (OSError, ValueError):
        return None


def _read(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise OSError("closed")
        out += chunk
    return out


def lag(master, slave):
    """(bytes, ms) the slave is behind, from the two tables; None if one is missing."""
    try:
        behind = int(master["commitLogMaxOffset"]) - int(slave["commitLogMaxOffset"])
        if behind <= 0:
            return 0, 0
        slave_ts = int(slave["commitLogMaxStoreTimestamp"])
        if slave_ts <= 0:
            return None  # nothing replicated yet: no time to compare
        ms = int(master["commitLogMaxStoreTimestamp"]) - slave_ts
        return behind, max(ms, 0)
    except (KeyError, TypeError, ValueError):
        return None


HISTOGRAMS = ("haApplyDelayHistogram", "haApplyWaitHistogram", "haSendBlockHistogram",
              "haSendDelayHistogram")
MASTER_HISTOGRAMS = ("haSendBlockHistogram", "haSendDelayHistogram")


def histogram(table, key):
    """({bound: count}, max) from a runtime-info histogram `1:3,2:0,...,inf:0,max:7`."""
    try:
        counts, top = {}, 0
        for part in table[key].split(","):
            bound, value = part.split(":")
            if bound == "max":
                top = int(value)
            else:
                counts[float("inf") if bound == "inf" else int(bound)] = int(value)
        return counts, top
    except (KeyError, TypeError, ValueError):
        return None


def histogram_delta(before, after):
    """The events between two snapshots: ({bound: count}, max since start)."""
    if not before or not after:
        return None
    return {b: after[0][b] - before[0].get(b, 0) for b in after[0]}, after[1]


def quantile(counts, q):
    """The bucket bound holding quantile q (None without events)."""
    total = sum(counts.values())
    if not total:
        return None
    seen = 0
    for bound in sorted(counts):
        seen += counts[bound]
        if seen >= q * total:
            return bound
    return float("inf")


class LagSampler:
    """Samples the slave's lag every `every` seconds on a thread until stopped."""

    def __init__(self, master_addr, slave_addr, every=0.05):
        self.master, self.slave, self.every = master_addr, slave_addr, every
        self.samples = []
        # The master's own dispatcher backlog, to tell a starved machine from a slow link.
        self.dispatch = []
        # Time between the slave's and the master's answers of each sample.
        self.gaps = []
        self.before = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _histograms(self):
        s, m = runtime_info(self.slave) or {}, runtime_info(self.master) or {}
        return {k: histogram(m if k in MASTER_HISTOGRAMS else s, k) for k in HISTOGRAMS}

    def start(self):
        self.before = self._histograms()
        self._thread.start()

    def _run(self):
        while not self._stop.wait(self.every):
            s = runtime_info(self.slave)
            t_slave = time.monotonic()
            m = runtime_info(self.master)
            t_master = time.monotonic()
            if s and m:
                v = lag(m, s)
                if v is not None:
                    self.samples.append(v)
                    self.gaps.append((t_master - t_slave) * 1000)
                    try:
                        self.dispatch.append(int(m.get("dispatchBehindBytes", "0")))
                    except ValueError:
                        pass

    def stop(self):
        self._stop.set()
        self._thread.join()
        after = self._histograms()
        hist = {k: histogram_delta(self.before.get(k), after.get(k)) for k in HISTOGRAMS}
        if not self.samples:
            return None
        ms = sorted(v[1] for v in self.samples)
        by = sorted(v[0] for v in self.samples)
        gaps = sorted(self.gaps)
        p99 = lambda xs: xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        return {"n": len(self.samples), "ms_median": statistics.median(ms), "ms_p99": p99(ms),
                "ms_max": ms[-1], "bytes_median": statistics.median(by), "bytes_max": by[-1],
                "dispatch_max": max(self.dispatch, default=0),
                "gap_median": statistics.median(gaps), "gap_max": gaps[-1], "hist": hist}


class ReplicatedVostok:
    """A master and its slave, fresh per run. `start(mode)` returns (name server, master
    pid) like the matrix's other targets."""

    name = "vostok"

    def __init__(self, bin_dir, work, free_port):
        self.binary = bin_dir / "mqbroker"
        self.work, self.free_port = work, free_port
        self.procs, self.dir, self.sampler = [], None, None
        self.lags = {}  # row name -> the lag summaries of its runs
        self.row = None

    def _broker(self, name, settings):
        args = [str(self.binary)]
        for k, v in settings:
            args += ["-o", f"{k}={v}"]
        log = open(self.dir / f"{name}.log", "w")
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True,
                                env={**os.environ, "RUST_LOG": "warn"})
        self.procs.append(proc)
        deadline = time.time() + 30
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if "boot success" in line:
                subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
                return proc
        raise RuntimeError(f"{name} did not boot; see {self.dir / (name + '.log')}")

    # The master/slave rows sign nothing and speak plain TCP.
    client_flags = []

    def start(self, mode, profile=None, settings=None):
        self.dir = Path(tempfile.mkdtemp(prefix="vostok-ha-bench-", dir=self.work))
        role = "SYNC_MASTER" if mode == "SYNC_MASTER" else "ASYNC_MASTER"
        port, ha_port, ns_port, slave_port = (self.free_port() for _ in range(4))
        common = [("brokerName", "bench-a"), ("brokerIP1", "127.0.0.1"), ("brokerIP2", "127.0.0.1"),
                  ("fastListenEnable", "false"), ("grpcServerPort", 0),
                  ("flushDiskType", "ASYNC_FLUSH")]
        master = self._broker("master", common + [
            ("listenPort", port), ("haListenPort", ha_port), ("brokerRole", role),
            ("embeddedNamesrvPort", ns_port), ("storePathRootDir", self.dir / "master")])
        namesrv = f"127.0.0.1:{ns_port}"
        self._broker("slave", common + [
            ("listenPort", slave_port), ("brokerId", 1), ("brokerRole", "SLAVE"),
            ("namesrvAddr", namesrv), ("bindAddress", "127.0.0.1"),
            ("storePathRootDir", self.dir / "slave")])
        self.master_addr, self.slave_addr = f"127.0.0.1:{port}", f"127.0.0.1:{slave_port}"
        deadline = time.time() + 30
        while time.time() < deadline:
            info = runtime_info(self.master_addr) or {}
            if info.get("haConnectionCount") == "1":
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"the slave did not connect; see {self.dir}")
        if mode == "ASYNC_MASTER+SLAVE":
            self.sampler = LagSampler(self.master_addr, self.slave_addr)
            self.sampler.start()
        return namesrv, master.pid

    def stop(self):
        if self.sampler:
            self.lags.setdefault(self.row, []).append(self.sampler.stop())
            self.sampler = None
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.procs = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def lag_note(self, row):
        """The lag figures over the row's runs so far, as a table note."""
        lags = [x for x in self.lags.get(row, []) if x]
        if not lags:
            return ""
        med = statistics.median(x["ms_median"] for x in lags)
        p99 = max(x["ms_p99"] for x in lags)
        worst = max(x["ms_max"] for x in lags)
        bytes_med = statistics.median(x["bytes_median"] for x in lags)
        bytes_max = max(x["bytes_max"] for x in lags)
        n = sum(x["n"] for x in lags)
        dispatch = max(x["dispatch_max"] for x in lags)
        gap_med = statistics.median(x["gap_median"] for x in lags)
        gap_max = max(x["gap_max"] for x in lags)
        sampled = (f"sampled every 50 ms: median {med:.0f} ms / {bytes_med / 1024:.0f} KiB, "
                   f"p99 {p99:.0f} ms, max {worst:.0f} ms / {bytes_max / 1024:.0f} KiB over {n} "
                   f"samples, the two answers {gap_med:.0f} ms apart (max {gap_max:.0f}); the "
                   f"master's own dispatch backlog peaked at {dispatch / 1024:.0f} KiB")
        counted = []
        for key, label in (("haApplyDelayHistogram", "age of each applied batch"),
                           ("haSendDelayHistogram", "age when the master's write ends"),
                           ("haApplyWaitHistogram", "slave's read to applied"),
                           ("haSendBlockHistogram", "master's socket writes")):
            runs = [x["hist"][key] for x in lags if x["hist"].get(key)]
            if not runs:
                continue
            total = {}
            for counts, _ in runs:
                for b, c in counts.items():
                    total[b] = total.get(b, 0) + c
            bound = lambda q: "-" if quantile(total, q) is None else f"≤{quantile(total, q):g}"
            counted.append(f"{label}: p50 {bound(0.5)} ms, p99 {bound(0.99)} ms, max "
                           f"{max(top for _, top in runs)} ms over {sum(total.values()):,}")
        if not counted:
            return f" (slave lag {sampled})"
        return f" (slave lag, counted by the slave: {'; '.join(counted)}. Lag {sampled})"
