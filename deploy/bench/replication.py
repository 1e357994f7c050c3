"""Master/slave rows of the benchmark matrix: a Vostok master (SYNC_MASTER or
ASYNC_MASTER, embedded name server) and its slave, two processes on this machine over
loopback, and a sampler of the slave's lag behind the master.

The lag is read over the remoting protocol (GET_BROKER_RUNTIME_INFO, code 28): bytes =
master's commitLogMaxOffset - slave's; time = master's commitLogMaxStoreTimestamp - the
slave's (the store time of the newest record each holds; the slave's is the master's
time of the newest record it received), 0 when the slave holds everything. The slave
is asked first, so the figure includes the time between the two answers.
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


class LagSampler:
    """Samples the slave's lag every `every` seconds on a thread until stopped."""

    def __init__(self, master_addr, slave_addr, every=0.05):
        self.master, self.slave, self.every = master_addr, slave_addr, every
        self.samples = []
        # The master's own dispatcher backlog, to tell a starved machine from a slow link.
        self.dispatch = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()

    def _run(self):
        while not self._stop.wait(self.every):
            s = runtime_info(self.slave)
            m = runtime_info(self.master)
            if s and m:
                v = lag(m, s)
                if v is not None:
                    self.samples.append(v)
                    try:
                        self.dispatch.append(int(m.get("dispatchBehindBytes", "0")))
                    except ValueError:
                        pass

    def stop(self):
        self._stop.set()
        self._thread.join()
        if not self.samples:
            return None
        ms = sorted(v[1] for v in self.samples)
        by = sorted(v[0] for v in self.samples)
        p99 = lambda xs: xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        return {"n": len(self.samples), "ms_median": statistics.median(ms), "ms_p99": p99(ms),
                "ms_max": ms[-1], "bytes_median": statistics.median(by), "bytes_max": by[-1],
                "dispatch_max": max(self.dispatch, default=0)}


class ReplicatedVostok:
    """A master and its slave, fresh per run. `start(mode)` returns (name server, master
    pid) like the matrix's other targets."""

    name = "vostok"

    def __init__(self, bin_dir, work, free_port):
        self.binary = bin_dir / "mqbroker"
        self.work, self.free_port = work, free_port
        self.procs, self.dir, self.sampler = [], None, None
        self.lags = []

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
            self.lags.append(self.sampler.stop())
            self.sampler = None
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.procs = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def lag_note(self):
        """The lag figures over the runs so far, as a table note."""
        lags = [x for x in self.lags if x]
        if not lags:
            return ""
        med = statistics.median(x["ms_median"] for x in lags)
        p99 = max(x["ms_p99"] for x in lags)
        worst = max(x["ms_max"] for x in lags)
        bytes_med = statistics.median(x["bytes_median"] for x in lags)
        bytes_max = max(x["bytes_max"] for x in lags)
        n = sum(x["n"] for x in lags)
        dispatch = max(x["dispatch_max"] for x in lags)
        return (f" (slave lag: median {med:.0f} ms / {bytes_med / 1024:.0f} KiB, p99 {p99:.0f} ms, "
                f"max {worst:.0f} ms / {bytes_max / 1024:.0f} KiB over {n} samples; the master's "
                f"own dispatch backlog peaked at {dispatch / 1024:.0f} KiB)")
