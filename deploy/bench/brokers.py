"""The brokers the benchmark scripts start and stop: a fresh standalone Vostok broker
(with the ACL, TLS or metrics profile of a row) and the rocketmq-rust peer, plus the
process and port helpers they share. Used by matrix.py, quick_ab.py, scale.py and
trace_breakdown.py.
"""

import os
import signal
import socket
import subprocess
import tempfile
import shutil
import time
from pathlib import Path

BENCH_ACL = """accounts:
  - accessKey: bench-user
    secretKey: bench-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - BenchTopic=PUB|SUB
"""


def make_certs(dir):
    """A CA and a certificate for 127.0.0.1 signed by it (what README.md shows)."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=dir, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (Path(dir) / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def rss_anon_kib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class Target:
    """A broker kind: how to start one fresh, standalone, on loopback and a temp dir."""

    name = ""
    # mqbench flags the last start needs (credentials, TLS).
    client_flags = []

    def start(self, flush, profile=None, settings=None):
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError


def terminate(proc, timeout=15):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def kill(proc):
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def wait_registered(admin, namesrv, broker_name, timeout):
    """Waits until the name server lists `broker_name` (its first registration)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = subprocess.run([str(admin), "clusterList", "-n", namesrv, "--timeout-ms", "1000"],
                           capture_output=True, text=True)
        if r.returncode == 0 and broker_name in r.stdout:
            return True
        time.sleep(0.05)
    return False


class Vostok(Target):
    name = "vostok"

    def __init__(self, bin_dir, work):
        self.binary = bin_dir / "mqbroker"
        self.work = work
        self.proc = None
        self.dir = None

    def start(self, flush, profile=None, settings=None, reuse_dir=None):
        """`reuse_dir`: a directory a stopped broker left (see `halt`), to start on its
        store again."""
        self.dir = Path(reuse_dir or tempfile.mkdtemp(prefix="vostok-bench-", dir=self.work))
        port, ns_port = free_port(), free_port()
        args = [str(self.binary)]
        settings = [
            ("brokerName", "bench-a"), ("brokerIP1", "127.0.0.1"), ("brokerIP2", "127.0.0.1"),
            ("listenPort", port), ("fastListenEnable", "false"), ("grpcServerPort", 0),
            ("embeddedNamesrvPort", ns_port), ("storePathRootDir", self.dir / "store"),
            ("flushDiskType", flush), ("consoleEnable", "false"), *(settings or {}).items(),
        ]
        self.client_flags = []
        if profile == "acl":
            (self.dir / "conf").mkdir()
            (self.dir / "conf" / "plain_acl.yml").write_text(BENCH_ACL)
            settings += [("aclEnable", "true"), ("rocketmqHome", self.dir)]
            self.client_flags = ["--access-key", "bench-user", "--secret-key", "bench-secret"]
        elif profile == "metrics":
            settings += [("metricsExporterType", "PROM"), ("metricsPromExporterPort", free_port())]
        elif profile == "tls":
            make_certs(self.dir)
            settings += [("tls.server.mode", "enforcing"),
                         ("tls.server.certPath", self.dir / "server.pem"),
                         ("tls.server.keyPath", self.dir / "server.key"),
                         ("tls.enable", "true"), ("tls.client.trustCertPath", self.dir / "ca.pem")]
            self.client_flags = ["--tls", "--tls-trust-cert", str(self.dir / "ca.pem")]
        for k, v in settings:
            args += ["-o", f"{k}={v}"]
        log = open(self.dir / "broker.log", "w")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True,
                                     env={**os.environ, "RUST_LOG": "warn"})
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if "boot success" in line:
                # Keep draining stdout so the broker never blocks on it.
                subprocess.Popen(["cat"], stdin=self.proc.stdout, stdout=subprocess.DEVNULL)
                return f"127.0.0.1:{ns_port}", self.proc.pid
        raise RuntimeError(f"vostok broker did not boot; see {self.dir / 'broker.log'}")

    def halt(self):
        """Stops the broker and keeps its directory, for `start(reuse_dir=...)`."""
        terminate(self.proc)
        self.proc = None

    def stop(self):
        terminate(self.proc)
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class Peer(Target):
    """rocketmq-rust 1.0: rocketmq-namesrv-rust + rocketmq-broker-rust."""

    name = "peer"

    def __init__(self, namesrv_bin, broker_bin, admin, work):
        self.namesrv_bin, self.broker_bin, self.work = namesrv_bin, broker_bin, work
        self.admin = admin
        self.ns = self.broker = None
        self.dir = None

    def start(self, flush, profile=None, settings=None):
        self.dir = Path(tempfile.mkdtemp(prefix="peer-bench-", dir=self.work))
        home = self.dir / "home"
        (home / "conf").mkdir(parents=True)
        ns_port, port = free_port(), free_port()
        env = {**os.environ, "ROCKETMQ_HOME": str(home), "HOME": str(home), "RUST_LOG": "warn"}
        self.ns = subprocess.Popen(
            [self.namesrv_bin, "--listenPort", str(ns_port), "--bindAddress", "127.0.0.1",
             "--kvConfigPath", str(self.dir / "kvConfig.json")],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / "namesrv.log", "w"), env=env)
        if not wait_port(ns_port, 30):
            raise RuntimeError(f"peer name server did not start; see {self.dir / 'namesrv.log'}")
        conf = self.dir / "broker.properties"
        conf.write_text("\n".join([
            "brokerClusterName=DefaultCluster",
            "brokerName=bench-peer",
            "brokerId=0",
            "brokerIP1=127.0.0.1",
            f"listenPort={port}",
            f"namesrvAddr=127.0.0.1:{ns_port}",
            f"storePathRootDir={self.dir / 'store'}",
            f"flushDiskType={flush}",
            "autoCreateTopicEnable=true",
            "commitLogMicroBatchEnabled=false",
        ]) + "\n")
        self.broker = subprocess.Popen(
            [self.broker_bin, "-c", str(conf), "-n", f"127.0.0.1:{ns_port}"],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / "broker.log", "w"), env=env)
        if not wait_port(port, 60):
            raise RuntimeError(f"peer broker did not start; see {self.dir / 'broker.log'}")
        namesrv = f"127.0.0.1:{ns_port}"
        if not wait_registered(self.admin, namesrv, "bench-peer", 30):
            raise RuntimeError(f"peer broker did not register; see {self.dir / 'broker.log'}")
        return namesrv, self.broker.pid

    def stop(self):
        # Its store is thrown away, so no graceful shutdown (which takes ~3 s).
        kill(self.broker)
        kill(self.ns)
        self.broker = self.ns = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def settle():
    """Lets the last broker's dirty pages reach the disk, so that its writeback does not
    run during the next run (the other broker's, when alternating). `sync` returns once
    the writeback is done."""
    os.sync()
