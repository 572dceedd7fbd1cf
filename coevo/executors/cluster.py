"""A Ray cluster of separate processes on this machine, for tests and benchmarks.

``LocalCluster(workers=2)`` starts a head node and ``workers`` worker nodes with
``ray start --block --node-ip-address=127.0.0.1``, each in its own process group, and
stops them by killing those groups (never ``ray stop``, which stops every Ray node of
the machine, other users' included).  Ray's gRPC servers listen on every interface
whatever the node address, so with ``isolate=True`` (and root, and ``ip``) the whole
cluster, and every command run through ``cluster.prefix``, lives in a fresh network
namespace that has only a loopback device: nothing of it can be reached from outside.
Without that, the nodes still advertise 127.0.0.1 only.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DISABLE_DOCKER_CPU_WARNING": "1"}


def ray_cli() -> str:
    """The ``ray`` script next to this interpreter (the venv's), else the one on PATH."""
    here = Path(sys.executable).with_name("ray")
    return str(here) if here.exists() else (shutil.which("ray") or "ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_netns(name: str) -> bool:
    """A network namespace with its loopback up; False where that is not possible (no root/ip)."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True,
                       capture_output=True, timeout=30)
        return True
    except (subprocess.SubprocessError, OSError):
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)
        return False


class LocalCluster:
    """Head (``head_cpus`` CPUs) + ``workers`` worker nodes (``worker_cpus`` each) as processes."""

    def __init__(self, workers: int = 1, head_cpus: int = 1, worker_cpus: int = 1, isolate: bool = True,
                 start_timeout_s: float = 120.0):
        self.workers, self.head_cpus, self.worker_cpus = int(workers), int(head_cpus), int(worker_cpus)
        self.isolate, self.start_timeout_s = isolate, float(start_timeout_s)
        self.procs: list[subprocess.Popen] = []
        self.netns: Optional[str] = None
        self.tmp = ""
        self.port = 0
        self.token = secrets.token_hex(32)  # token authentication between nodes and drivers

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def prefix(self) -> list[str]:
        """Put this in front of a command that must reach the cluster (its network namespace)."""
        return ["ip", "netns", "exec", self.netns] if self.netns else []

    @property
    def env(self) -> dict:
        """Environment of the nodes, and of any driver that joins them (it carries the token)."""
        return {**os.environ, **RAY_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}

    def _start(self, args: list[str], log: str, ready: str) -> None:
        path = Path(self.tmp) / log
        with open(path, "wb") as out:
            p = subprocess.Popen([*self.prefix, ray_cli(), "start", *args, "--block"], stdout=out,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
                                 start_new_session=True)
        self.procs.append(p)
        deadline = time.monotonic() + self.start_timeout_s
        while ready not in path.read_text(errors="replace"):
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start failed ({log}):\n{path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)

    def start(self) -> "LocalCluster":
        self.tmp = tempfile.mkdtemp(prefix="cray", dir="/tmp")  # short: Ray's socket paths are limited
        if self.isolate:
            name = f"coevo-ray-{os.getpid()}-{int(time.time() * 1000) % 100000}"
            self.netns = name if make_netns(name) else None
        self.port = free_port() if not self.netns else 6379
        try:
            self._start(["--head", "--node-ip-address=127.0.0.1", f"--port={self.port}",
                         f"--num-cpus={self.head_cpus}", "--include-dashboard=false",
                         f"--temp-dir={self.tmp}"], "head.log", "block forever")
            for i in range(self.workers):
                self._start([f"--address={self.address}", "--node-ip-address=127.0.0.1",
                             f"--num-cpus={self.worker_cpus}"], f"worker-{i}.log", "block forever")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill the nodes' process groups (TERM, then KILL after 5 s), drop the namespace and temp dir."""
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            for p in self.procs:
                try:
                    os.killpg(p.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            end = time.monotonic() + grace
            for p in self.procs:
                try:
                    p.wait(timeout=max(0.1, end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        self.procs = []
        for pid in self.leftovers():  # Ray workers start sessions of their own
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.netns:
            subprocess.run(["ip", "netns", "delete", self.netns], capture_output=True, timeout=30)
            self.netns = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """Processes of this cluster still alive: those whose environment holds its token."""
        mark, pids = f"RAY_AUTH_TOKEN={self.token}".encode(), []
        for d in Path("/proc").iterdir():
            if d.name.isdigit() and int(d.name) != os.getpid():
                try:
                    if mark in (d / "environ").read_bytes().split(b"\0"):
                        pids.append(int(d.name))
                except OSError:
                    pass
        return pids

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
