"""Ray executor: verification on Ray actors, sampling on policy replicas held by Ray actors.

Verification.  ``RayVerifierPool`` is a drop-in for ``coevo.verify.pool.VerifierPool``
(``map(fn, items, timeout_s)``, results in input order, never raises per item).  Each
``VerifierActor`` (one per CPU of the cluster by default, spread over the nodes) owns a
local ``VerifierPool`` of killable processes, so the per-item limit and the verdict
reasons are the local pool's own: a hung checker is SIGKILLed on its node and its item
becomes ``Verdict(None, "timeout")``, a dying checker ``"worker-crash"``.  The driver
splits a batch into chunks and keeps every actor busy with one chunk; an actor that dies
(its node lost) gets its chunk re-run once on a fresh actor, then ``"worker-crash"``; a
chunk that outlives its deadline (every item at the limit, plus slack) has its actor
killed and its items become ``"timeout"``, so a stuck node can never hang the run.

Sampling.  ``RayPolicy`` wraps a driver policy (tiny backend): ``sample`` runs on a
``ReplicaActor`` holding a copy of the weights, pushed whenever ``policy.version``
changed (or the state was loaded); everything else (``forward_backward``,
``optim_step``, state files, checkpoints) runs on the driver's policy.  The RNG stream
the draw uses travels with the call: the replica sets the driver's generator state,
samples, and sends the new state back, which the driver adopts, so the draws are the
driver's stream exactly (same seed, same completions as the local executor; see
docs/cluster.md for the conditions).  The ledger is written by the driver only.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from typing import Any, Callable, Iterable, Optional

from coevo.core.policy import STREAMS, BackendError
from coevo.executors.base import ExecutorError
from coevo.core.verdict import Verdict

CHUNK_SLACK_S = 30.0   # a chunk's deadline: items x (limit + 2 s) + this


def import_ray():
    try:
        import ray
    except ImportError as e:
        raise ExecutorError(f"executor.kind=ray needs Ray (pip install -e '.[ray]'): {e}") from None
    return ray


def actor_errors(ray) -> tuple:
    ex = ray.exceptions
    return (ex.RayActorError, ex.WorkerCrashedError, ex.ObjectLostError)


def reach(address: str, timeout_s: float = 10.0) -> None:
    """``ExecutorError`` unless ``host:port`` accepts a TCP connection (``ray.init`` would wait minutes)."""
    import socket

    host, _, port = address.replace("ray://", "").rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except (OSError, ValueError) as e:
        raise ExecutorError(f"cannot reach the Ray cluster at {address!r} (executor.address): {e}") from None


# ---------------------------------------------------------------------- actors
class VerifierActor:
    """Runs on a cluster node: a local ``VerifierPool`` of ``workers`` killable processes."""

    def __init__(self, workers: int, timeout_s: float, memory_mb: Optional[int]):
        from coevo.verify.pool import VerifierPool

        self.pool = VerifierPool(workers=workers, timeout_s=timeout_s, memory_mb=memory_mb)

    def where(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def map(self, fn, items: list, timeout_s: float) -> list:
        return self.pool.map(fn, items, timeout_s=timeout_s)

    def close(self) -> None:
        self.pool.close()


class ReplicaActor:
    """Runs on a cluster node: a sampling replica of one tiny policy."""

    def __init__(self, threads: int):
        import torch

        torch.set_num_threads(int(threads))
        self.policy = None

    def load(self, name: str, st: dict) -> str:
        from coevo.backends.tiny import TinyConfig, TinyPolicy

        if self.policy is None:
            self.policy = TinyPolicy(name, TinyConfig(**st["cfg"]))
        self.policy.load_state(st)
        return self.policy.version

    def sample(self, prompts, n, sampling, token_prefixes, gen_state):
        gen = stream_generator(self.policy, sampling.stream)
        gen.set_state(gen_state)
        out = self.policy.sample(prompts, n, sampling, token_prefixes=token_prefixes)
        return out, gen.get_state()


def stream_generator(policy, stream: str):
    """The tiny policy's generator of RNG stream ``stream`` ("train" | "audit")."""
    if stream not in STREAMS:
        raise ValueError(f"SamplingParams.stream must be one of {STREAMS}, got {stream!r}")
    return policy.gen if stream == "train" else policy.audit_gen


# ---------------------------------------------------------------------- verification
class RayVerifierPool:
    """``VerifierPool``'s ``map`` over ``actors`` Ray actors (see the module docstring)."""

    def __init__(self, actors: int, workers_per_actor: int = 1, timeout_s: float = 5.0,
                 memory_mb: Optional[int] = 4096, max_chunk: int = 64, start_timeout_s: float = 120.0):
        self.ray = import_ray()
        self.n_actors = max(1, int(actors))
        self.workers_per_actor = max(1, int(workers_per_actor))
        self.timeout_s, self.memory_mb = float(timeout_s), memory_mb
        self.max_chunk = max(1, int(max_chunk))
        self.start_timeout_s = float(start_timeout_s)
        self._remote = self.ray.remote(num_cpus=self.workers_per_actor, max_restarts=0,
                                       scheduling_strategy="SPREAD")(VerifierActor)
        self._actors: list = []
        self._closed = False
        self._lock = threading.Lock()
        self.stats = {"timeouts": 0, "crashes": 0, "replaced": 0, "items": 0}
        self.nodes: list[str] = []

    def start(self) -> "RayVerifierPool":
        """Create the actors and wait until each is placed (``ExecutorError`` if they cannot be)."""
        self._actors = [self._new_actor() for _ in range(self.n_actors)]
        try:
            self.nodes = self.ray.get([a.where.remote() for a in self._actors], timeout=self.start_timeout_s)
        except self.ray.exceptions.GetTimeoutError:
            self.close()
            raise ExecutorError(f"{self.n_actors} verifier actors ({self.workers_per_actor} CPU each) could not be "
                                f"placed on the Ray cluster within {self.start_timeout_s:.0f} s; lower "
                                f"executor.verify_actors or add nodes") from None
        return self

    def _new_actor(self):
        return self._remote.remote(self.workers_per_actor, self.timeout_s, self.memory_mb)

    def _replace(self, k: int) -> None:
        try:
            self.ray.kill(self._actors[k], no_restart=True)
        except Exception:  # noqa: BLE001 - already dead
            pass
        self._actors[k] = self._new_actor()
        self.stats["replaced"] += 1

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for a in self._actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self._actors = []

    def __enter__(self) -> "RayVerifierPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], timeout_s: Optional[float] = None) -> list:
        if self._closed:
            raise RuntimeError("RayVerifierPool is closed")
        items = list(items)
        if not items:
            return []
        limit = self.timeout_s if timeout_s is None else float(timeout_s)
        with self._lock:
            if not self._actors:
                self.start()
            out = self._map(fn, items, limit)
        self.stats["items"] += len(items)
        return out

    def _map(self, fn, items: list, limit: float) -> list:
        ray, n = self.ray, len(items)
        size = max(1, min(self.max_chunk, math.ceil(n / (len(self._actors) * 4))))
        queue = deque((s, min(n, s + size)) for s in range(0, n, size))
        results: list = [None] * n
        retried: set = set()
        idle = list(range(len(self._actors)))
        inflight: dict = {}  # object ref -> (actor index, start, end, deadline)
        while queue or inflight:
            while idle and queue:
                k, (s, e) = idle.pop(), queue.popleft()
                ref = self._actors[k].map.remote(fn, items[s:e], limit)
                inflight[ref] = (k, s, e, time.monotonic() + (e - s) * (limit + 2.0) + CHUNK_SLACK_S)
            wait_s = min(d for *_, d in inflight.values()) - time.monotonic()
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=min(max(0.0, wait_s), 1.0))
            for ref in ready:
                k, s, e, _ = inflight.pop(ref)
                idle.append(k)
                try:
                    results[s:e] = ray.get(ref)
                except actor_errors(ray) as err:
                    self.stats["crashes"] += 1
                    self._replace(k)
                    if s in retried:
                        bad = Verdict(None, "worker-crash", detail={"ray": f"{type(err).__name__}"})
                        results[s:e] = [bad] * (e - s)
                    else:  # the node may be gone: once more on a fresh actor
                        retried.add(s)
                        queue.appendleft((s, e))
            now = time.monotonic()
            for ref, (k, s, e, d) in list(inflight.items()):
                if now > d:  # the actor's own pool should have timed its items out: a stuck node
                    inflight.pop(ref)
                    self.stats["timeouts"] += 1
                    self._replace(k)
                    idle.append(k)
                    results[s:e] = [Verdict(None, "timeout", detail={"limit_s": limit, "ray": "chunk deadline"})
                                    ] * (e - s)
        return results


# ---------------------------------------------------------------------- sampling
_OWN = ("_inner", "_actor", "_ray", "_pushed", "_stale")


class RayPolicy:
    """A policy whose ``sample`` runs on a Ray replica; every other call goes to the driver's
    policy (``inner``), so training, state files and checkpoints are unchanged."""

    def __init__(self, inner, actor, ray):
        for k, v in zip(_OWN, (inner, actor, ray, None, True)):
            object.__setattr__(self, k, v)

    def __getattr__(self, name: str):
        if name in _OWN:
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value) -> None:
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self._inner, name, value)

    @property
    def version(self) -> str:
        return self._inner.version

    def _push(self) -> None:
        """Send the driver's weights to the replica when they changed since the last push."""
        v = self._inner.version
        if self._stale or v != self._pushed:
            self._call(self._actor.load.remote(self._inner.name, self._inner.state(with_optimizer=False)))
            self._pushed, self._stale = v, False

    def _call(self, ref):
        try:
            return self._ray.get(ref)
        except actor_errors(self._ray) as e:
            raise BackendError(f"the sampling replica of policy {self._inner.name!r} was lost "
                               f"({type(e).__name__})") from None

    def sample(self, prompts, n, sampling, token_prefixes=None):
        gen = stream_generator(self._inner, sampling.stream)
        self._push()
        pre = [list(p) for p in token_prefixes] if token_prefixes is not None else None
        out, state = self._call(self._actor.sample.remote(list(prompts), n, sampling, pre, gen.get_state()))
        gen.set_state(state)
        return out

    def load_state(self, st: dict) -> None:
        self._inner.load_state(st)
        self._stale = True

    def load(self, path) -> None:
        self._inner.load(path)
        self._stale = True

    def close(self) -> None:
        try:
            self._ray.kill(self._actor, no_restart=True)
        except Exception:  # noqa: BLE001
            pass
        self._inner.close()


# ---------------------------------------------------------------------- executor
class RayExecutor:
    """Connects to (or starts) Ray; builds the verifier actors and the sampling replicas."""

    kind = "ray"

    def __init__(self, ex, verify=None, threads: int = 1):
        self.ray = ray = import_ray()
        self.cfg, self.threads, self.owns = ex, int(threads), False
        self.pool: Optional[RayVerifierPool] = None
        if not ray.is_initialized():
            if ex.address and ex.address != "auto":
                reach(ex.address)
            kw: dict = {"address": ex.address} if ex.address else {"num_cpus": ex.local_cpus}
            try:
                ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                         namespace="coevo", **kw)
            except Exception as e:  # noqa: BLE001 - ConnectionError, RuntimeError, ValueError
                raise ExecutorError(f"cannot start Ray (executor.address={ex.address!r}): "
                                    f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
            self.owns = True
        if verify is not None and verify.workers > 0:
            self.pool = self.make_pool(verify.timeout_s).start()

    def cluster_cpus(self) -> int:
        return int(self.ray.cluster_resources().get("CPU", 0))

    def make_pool(self, timeout_s: float) -> RayVerifierPool:
        per = self.cfg.workers_per_actor
        n = self.cfg.verify_actors or max(1, self.cluster_cpus() // per)
        return RayVerifierPool(n, workers_per_actor=per, timeout_s=timeout_s,
                               start_timeout_s=self.cfg.start_timeout_s)

    def verifier_pool(self, verify):
        """The pool built at start (``verify.workers > 0``), else None (checks run in-process)."""
        return self.pool

    def wrap_policies(self, policies: dict) -> dict:
        """Tiny policies sample on replicas (``executor.sample_replicas``); other backends as built."""
        from coevo.backends.tiny import TinyPolicy

        if not self.cfg.sample_replicas:
            return policies
        remote = self.ray.remote(num_cpus=self.cfg.replica_cpus, max_restarts=0)(ReplicaActor)
        wrapped: dict = {}
        for p in {id(p): p for p in policies.values()}.values():  # roles may share one policy
            if isinstance(p, TinyPolicy):
                wrapped[id(p)] = RayPolicy(p, remote.remote(self.threads), self.ray)
        try:
            self.ray.get([w._actor.load.remote(w.name, w._inner.state(with_optimizer=False))
                          for w in wrapped.values()], timeout=self.cfg.start_timeout_s)
        except self.ray.exceptions.GetTimeoutError:
            raise ExecutorError(f"sampling replicas could not be placed on the Ray cluster within "
                                f"{self.cfg.start_timeout_s:.0f} s (executor.replica_cpus="
                                f"{self.cfg.replica_cpus})") from None
        for w in wrapped.values():
            w._pushed, w._stale = w._inner.version, False
        return {role: wrapped.get(id(p), p) for role, p in policies.items()}

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self.owns and self.ray.is_initialized():
            self.ray.shutdown()
