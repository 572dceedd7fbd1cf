"""VerifierPool: killable worker processes with a hard per-item timeout.

Why not ``multiprocessing.Pool`` / ``concurrent.futures``: neither can kill one hung
task (a sympy call inside C code ignores everything but SIGKILL), and a killed worker
breaks them.  Here each worker owns a pipe and a two-slot shared array
``[position in batch, start time]`` that it writes before each item.  The parent sends
*batches* (one pipe round trip per batch, results flushed every ~20 ms), reads the
shared slots to see how long the current item has been running, and SIGKILLs a worker
whose item passes ``timeout_s``: that item becomes ``Verdict(None, "timeout")``, the
rest of its batch is re-queued, a fresh worker replaces it.  A worker that dies on its
own turns its current item into ``Verdict(None, "worker-crash")``.  Results keep input
order.

Start method: ``forkserver`` (default).  The parent may hold threads (torch, httpx,
the training loop) and forking a multi-threaded process can deadlock the child on a
lock some other thread held; the fork server is a clean single-threaded process with
math-verify / sympy / pint pre-imported, so replacing a killed worker costs a fork
(~10 ms), not an interpreter start.  ``fn`` must therefore be importable by reference
from a module (not defined in ``__main__`` or a test file's local scope).
"""
from __future__ import annotations

import atexit
import collections
import ctypes
import math
import multiprocessing as mp
import os
import signal
import threading
import time
import weakref
from multiprocessing.connection import wait as mp_wait
from typing import Any, Callable, Iterable, Optional

from coevo.core.verdict import Verdict
from coevo.interrupt import signals_ignored_in_children

FLUSH_S = 0.02          # a worker sends finished results at least this often
PRELOAD = ["coevo.verify.forkserver_quiet", "coevo.verify.checks"]  # the first: the server ignores SIGINT / SIGTERM
_live_pools: "weakref.WeakSet[VerifierPool]" = weakref.WeakSet()
_preload_lock = threading.Lock()
_preload_done = False


def _set_pdeathsig() -> None:
    try:  # Linux: die with the parent (the fork server), never orphaned
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001
        pass


def _worker_main(conn, state, memory_mb: Optional[int]) -> None:
    """Worker loop: receive (fn, items), run each, stream results back in order."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _set_pdeathsig()
    if memory_mb:
        import resource
        lim = int(memory_mb) * 1024 * 1024
        try:
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        except (ValueError, OSError):
            pass
    clock = time.monotonic
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        except Exception as e:  # noqa: BLE001 - e.g. fn not importable in the worker
            conn.send(("x", -1, 0, f"{type(e).__name__}: {e}"))
            continue
        if msg is None:
            return
        seq, fn, items = msg
        out, start, last, n = [], 0, clock(), len(items)
        for j, it in enumerate(items):
            state[0] = j
            state[1] = clock()
            try:
                r = fn(it)
            except (MemoryError, RecursionError) as e:
                r = Verdict(None, "resource-limit", detail={"error": f"{type(e).__name__}: {str(e)[:200]}"})
            except BaseException as e:  # noqa: BLE001 - the pool never raises per item
                r = Verdict(None, "verifier-error", detail={"error": f"{type(e).__name__}: {str(e)[:500]}"})
            out.append(r)
            now = clock()
            if now - last > FLUSH_S and j + 1 < n:
                state[1] = 0.0  # not running an item while blocked on the pipe
                _send(conn, seq, start, out)
                start, out, last = j + 1, [], clock()
        state[1] = 0.0
        _send(conn, seq, start, out, done=True)


def _send(conn, seq: int, start: int, out: list, done: bool = False) -> None:
    tag = "d" if done else "r"
    try:
        conn.send((tag, seq, start, out))
    except Exception as e:  # noqa: BLE001 - an unpicklable result
        bad = [Verdict(None, "verifier-error", detail={"error": f"unpicklable result: {e}"})] * len(out)
        conn.send((tag, seq, start, bad))


try:
    import io as _io
    from multiprocessing import context as _mpctx, forkserver as _mpfs, popen_forkserver as _mppf
    from multiprocessing import reduction as _mpred, spawn as _mpspawn, util as _mputil

    class _CleanPopen(_mppf.Popen):
        """Forkserver Popen whose child does not re-import the parent's ``__main__``.

        The stock child re-runs the main script (``init_main_from_path``) to find
        pickled functions; a script without an ``if __name__ == "__main__"`` guard
        would then start pools recursively.  Workers only need ``fn``'s own module.
        Mirrors CPython 3.10-3.13 ``popen_forkserver.Popen._launch``.
        """

        def _launch(self, process_obj):
            prep_data = _mpspawn.get_preparation_data(process_obj._name)
            prep_data.pop("init_main_from_path", None)
            prep_data.pop("init_main_from_name", None)
            buf = _io.BytesIO()
            _mpctx.set_spawning_popen(self)
            try:
                _mpred.dump(prep_data, buf)
                _mpred.dump(process_obj, buf)
            finally:
                _mpctx.set_spawning_popen(None)
            self.sentinel, w = _mpfs.connect_to_new_process(self._fds)
            _parent_w = os.dup(w)
            self.finalizer = _mputil.Finalize(self, _mputil.close_fds, (_parent_w, self.sentinel))
            with open(w, "wb", closefd=True) as f:
                f.write(buf.getbuffer())
            self.pid = _mpfs.read_signed(self.sentinel)

    class _CleanProcess(_mpctx.ForkServerProcess):
        @staticmethod
        def _Popen(process_obj):
            return _CleanPopen(process_obj)
except Exception:  # noqa: BLE001 - other Python versions: the stock class
    _CleanProcess = None


class _Worker:
    def __init__(self, ctx, memory_mb):
        self.state = ctx.RawArray("d", 2)
        self.conn, child = ctx.Pipe(duplex=True)
        proc_cls = ctx.Process
        if ctx.get_start_method() == "forkserver":
            proc_cls = _CleanProcess or ctx.Process
        self.proc = proc_cls(target=_worker_main, args=(child, self.state, memory_mb), daemon=True)
        self.proc.start()
        child.close()
        self.batch: Optional[list] = None   # [(global index, item), ...]
        self.got = 0                        # results received for this batch (contiguous prefix)
        self.seq = 0                        # id of the current batch; stale replies are ignored
        self.sent_at = 0.0

    def kill(self) -> None:
        try:
            self.proc.kill()
        except Exception:  # noqa: BLE001
            pass
        self.proc.join(timeout=5)
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001
            pass
        try:
            self.proc.close()
        except Exception:  # noqa: BLE001
            pass


_MISSING = object()


class VerifierPool:
    """A pool of killable verifier workers.

    ``map(fn, items, timeout_s=None)`` returns ``[fn(item) ...]`` in input order; an
    item that runs past ``timeout_s`` yields ``Verdict(None, "timeout")``, one whose
    worker dies yields ``Verdict(None, "worker-crash")``.  ``memory_mb`` caps each
    worker's address space (None: no cap) so a runaway sympy power cannot eat the host.
    """

    def __init__(self, workers: Optional[int] = None, timeout_s: float = 5.0,
                 memory_mb: Optional[int] = 4096, start_method: str = "forkserver",
                 max_batch: int = 256):
        self.n_workers = max(1, int(workers or os.cpu_count() or 1))
        self.timeout_s = float(timeout_s)
        self.memory_mb = memory_mb
        self.max_batch = max(1, int(max_batch))
        if start_method == "forkserver":
            _ensure_preload()
        self._ctx = mp.get_context(start_method)
        self._workers: list[_Worker] = []
        self._closed = False
        self._lock = threading.Lock()
        self.stats = {"timeouts": 0, "crashes": 0, "replaced": 0, "items": 0}
        _live_pools.add(self)

    # -- lifecycle -------------------------------------------------------
    def _spawn(self) -> _Worker:
        if self._ctx.get_start_method() == "forkserver":
            _start_forkserver()
        return _Worker(self._ctx, self.memory_mb)

    def _ensure_workers(self) -> None:
        self._workers = [w for w in self._workers if w is not None]
        while len(self._workers) < self.n_workers:
            self._workers.append(self._spawn())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for w in self._workers:
            try:
                w.conn.send(None)
            except Exception:  # noqa: BLE001
                pass
        deadline = time.monotonic() + 2.0
        for w in self._workers:
            w.proc.join(timeout=max(0.0, deadline - time.monotonic()))
            w.kill()
        self._workers = []

    def __enter__(self) -> "VerifierPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # -- work ------------------------------------------------------------
    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], timeout_s: Optional[float] = None) -> list:
        if self._closed:
            raise RuntimeError("VerifierPool is closed")
        items = list(items)
        n = len(items)
        if n == 0:
            return []
        limit = self.timeout_s if timeout_s is None else float(timeout_s)
        with self._lock:
            return self._map(fn, items, limit)

    def _map(self, fn, items, limit) -> list:
        self._ensure_workers()
        results = _MapRun(self, fn, items, limit).run()
        self.stats["items"] += len(items)
        return results


class _MapRun:
    """One ``VerifierPool.map`` call: chunks queued to idle workers, results collected in input
    order, a worker past its item's limit or dead retired (its item gets the reason, the rest of
    its chunk is re-queued) and replaced by a fresh fork."""

    def __init__(self, pool: VerifierPool, fn, items, limit) -> None:
        n = len(items)
        size = max(1, min(pool.max_batch, math.ceil(n / (pool.n_workers * 4))))
        self.pool, self.fn, self.limit = pool, fn, limit
        self.queue = collections.deque([(i, items[i]) for i in range(s, min(n, s + size))] for s in range(0, n, size))
        self.results = [_MISSING] * n
        self.remaining = n
        self.idle = list(pool._workers)
        self.busy: list[_Worker] = []

    def finish(self, w: _Worker, start, out) -> None:
        for k, r in enumerate(out):
            gi = w.batch[start + k][0]
            if self.results[gi] is _MISSING:
                self.remaining -= 1
            self.results[gi] = r
        w.got = max(w.got, start + len(out))

    def drain(self, w: _Worker) -> bool:
        """Read everything the worker has sent; True if it finished its batch."""
        done = False
        try:
            while w.conn.poll():
                tag, seq, start, out = w.conn.recv()
                if tag != "x" and seq != w.seq:
                    continue  # the tail of an earlier batch whose results we already have
                if tag == "x":
                    raise RuntimeError(f"verifier pool worker could not load the task: {out} "
                                       "(fn must be a top-level function of an importable module)")
                self.finish(w, start, out)
                done = done or tag == "d"
        except (EOFError, OSError):
            pass
        return done

    def retire(self, w: _Worker, reason: str) -> None:
        """Kill ``w``; its current item gets ``reason``, the rest is re-queued."""
        pool = self.pool
        self.drain(w)
        pos, started = int(w.state[0]), float(w.state[1])
        elapsed = time.monotonic() - started if started > 0 else 0.0
        w.kill()
        pool.stats["timeouts" if reason == "timeout" else "crashes"] += 1
        pool.stats["replaced"] += 1
        batch = w.batch or []
        missing = [k for k in range(len(batch)) if self.results[batch[k][0]] is _MISSING]
        if missing:
            bad = pos if (started > 0 and pos in missing) else missing[0]
            gi = batch[bad][0]
            detail = {"limit_s": self.limit} if reason == "timeout" else {"exitcode": _exitcode(w)}
            self.results[gi] = Verdict(None, reason, elapsed_s=elapsed, detail=detail)
            self.remaining -= 1
            rest = [batch[k] for k in missing if k != bad]
            if rest:
                self.queue.appendleft(rest)
        self.busy.remove(w)
        pool._workers[pool._workers.index(w)] = nw = pool._spawn()
        self.idle.append(nw)

    def dispatch(self) -> None:
        while self.idle and self.queue:
            w = self.idle.pop()
            w.batch, w.got = self.queue.popleft(), 0
            w.seq += 1
            w.conn.send((w.seq, self.fn, [it for _, it in w.batch]))
            w.sent_at = time.monotonic()
            self.busy.append(w)

    def poll(self) -> None:
        """Wait for a result, a death or the nearest deadline; handle what happened."""
        now = time.monotonic()
        wait_s = 0.05
        for w in self.busy:
            started = w.state[1]
            if started > 0:
                wait_s = min(wait_s, max(0.0, started + self.limit - now))
        ready = set(mp_wait([w.conn for w in self.busy] + [w.proc.sentinel for w in self.busy], timeout=wait_s + 0.001))
        for w in list(self.busy):
            if w.conn in ready and self.drain(w):
                self.busy.remove(w)
                w.batch = None
                self.idle.append(w)
                continue
            if w.proc.sentinel in ready and not w.proc.is_alive():
                self.retire(w, "worker-crash")
                continue
            started = w.state[1]
            if started > 0 and time.monotonic() - started > self.limit:
                if w.state[1] == started:  # re-read: the worker may have moved on between the two reads
                    self.retire(w, "timeout")

    def run(self) -> list:
        pool = self.pool
        try:
            while self.remaining > 0:
                self.dispatch()
                if not self.busy:
                    break
                self.poll()
        except BaseException:
            # a KeyboardInterrupt or a loader error: leave no half-used worker behind
            for w in self.busy:
                w.kill()
                pool._workers[pool._workers.index(w)] = None
            pool._workers = [w for w in pool._workers if w is not None]
            raise
        return [r if r is not _MISSING else Verdict(None, "worker-crash", detail={"lost": True}) for r in self.results]


def _exitcode(w: _Worker):
    try:
        return w.proc.exitcode
    except Exception:  # noqa: BLE001
        return None


def _ensure_preload() -> None:
    """Pre-import the checkers in the fork server (only effective before it starts)."""
    global _preload_done
    with _preload_lock:
        if not _preload_done:
            try:
                mp.get_context("forkserver").set_forkserver_preload(PRELOAD)
            except Exception:  # noqa: BLE001
                pass
            _preload_done = True


def _start_forkserver() -> None:
    """Start the fork server (if not yet running) with SIGINT and SIGTERM ignored, and so its workers: a Ctrl-C
    while it imports the checkers prints no KeyboardInterrupt traceback, and a SIGTERM to the process group
    (``timeout``, a scheduler) leaves the workers to the pool's owner, which stops them (``close``; a killed owner
    takes them along: the server exits with it, each worker with the server)."""
    from multiprocessing import forkserver

    with signals_ignored_in_children():
        forkserver.ensure_running()


@atexit.register
def _close_all() -> None:
    for p in list(_live_pools):
        try:
            p.close()
        except Exception:  # noqa: BLE001
            pass


_default_pool: Optional[VerifierPool] = None
_default_lock = threading.Lock()


def default_pool() -> VerifierPool:
    """A process-wide pool used by verifiers that were given none (lazily started)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._closed:
            _default_pool = VerifierPool(workers=max(1, min(4, os.cpu_count() or 1)))
        return _default_pool
