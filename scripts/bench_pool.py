"""VerifierPool vs pebble.ProcessPool: per-item overhead, a hung item, a crashing item.

    .venv/bin/python scripts/bench_pool.py [--n 2000] [--workers 2] [--repeat 3]

Needs ``pebble`` (``pip install pebble``; measurement only, not a coevo dependency).
Both pools use the ``forkserver`` start method with ``coevo.verify.checks`` preloaded
(what coevo runs) and the task functions of ``coevo.verify.probes``.  Prints JSON:

* ``overhead``: wall time per item for ``n`` cheap items (``echo_item``) after a warm-up,
  best of ``repeat``: ours (``map``: batches, per-item timeout kept), pebble ``schedule``
  per item (a future per item: per-item timeout kept), pebble ``map`` with
  ``chunksize=1`` (per-item timeout) and with chunks like ours (timeout per *chunk*);
* ``hang``: 20 cheap items around one ``sleep_item(30)``, per-item timeout 1 s: batch
  wall time, what the hung item returns, whether the worker was replaced (pids);
* ``crash``: the same around ``os._exit(3)`` and around a SIGSEGV (``segv_item``).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import time
from concurrent.futures import TimeoutError as FutTimeout

from coevo.verify import VerifierPool
from coevo.verify.probes import crash_item, echo_item, pid_item, segv_item, sleep_item

TIMEOUT_S = 1.0


def _ctx():
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["coevo.verify.checks"])
    return ctx


def _best(fn, repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def overhead(n: int, workers: int, repeat: int) -> dict:
    import pebble

    items = list(range(n))
    out = {}
    with VerifierPool(workers=workers, timeout_s=5) as ours:
        ours.map(echo_item, items[:workers * 4])

        def run_ours():
            t = time.perf_counter()
            ours.map(echo_item, items)
            return time.perf_counter() - t
        out["ours_map_us"] = _best(run_ours, repeat) / n * 1e6
    chunk = max(1, min(256, math.ceil(n / (workers * 4))))
    with pebble.ProcessPool(max_workers=workers, context=_ctx()) as pp:
        [f.result() for f in [pp.schedule(echo_item, args=[i]) for i in range(workers * 4)]]

        def run_schedule():
            t = time.perf_counter()
            futs = [pp.schedule(echo_item, args=[i], timeout=5) for i in items]
            [f.result() for f in futs]
            return time.perf_counter() - t

        def run_map(cs):
            def go():
                t = time.perf_counter()
                list(pp.map(echo_item, items, chunksize=cs, timeout=5).result())
                return time.perf_counter() - t
            return go
        out["pebble_schedule_us"] = _best(run_schedule, repeat) / n * 1e6
        out["pebble_map_chunk1_us"] = _best(run_map(1), repeat) / n * 1e6
        out[f"pebble_map_chunk{chunk}_us"] = _best(run_map(chunk), repeat) / n * 1e6
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in out.items()}


def _ours_faulty(fn, bad, workers: int) -> dict:
    items = [0] * 10 + [bad] + [0] * 10
    with VerifierPool(workers=workers, timeout_s=TIMEOUT_S) as pool:
        before = set(pool.map(pid_item, range(workers * 4)))
        t = time.perf_counter()
        res = pool.map(fn, items)
        wall = time.perf_counter() - t
        after = set(pool.map(pid_item, range(workers * 8)))
    bad_v = res[10]
    return {"wall_s": round(wall, 2), "bad_item": f"Verdict({bad_v.value}, {bad_v.reason!r})",
            "others_ok": sum(v.value == 1 for i, v in enumerate(res) if i != 10), "worker_replaced": bool(after - before)}


def _pebble_faulty(fn, bad, workers: int) -> dict:
    import pebble

    items = [0] * 10 + [bad] + [0] * 10
    with pebble.ProcessPool(max_workers=workers, context=_ctx()) as pp:
        before = {pp.schedule(pid_item, args=[i]).result() for i in range(workers * 4)}
        t = time.perf_counter()
        futs = [pp.schedule(fn, args=[x], timeout=TIMEOUT_S) for x in items]
        res = []
        for f in futs:
            try:
                res.append(f.result())
            except FutTimeout as e:
                res.append(f"TimeoutError({e})")
            except pebble.ProcessExpired as e:
                res.append(f"ProcessExpired(exitcode={e.exitcode})")
            except Exception as e:  # noqa: BLE001
                res.append(f"{type(e).__name__}({e})")
        wall = time.perf_counter() - t
        after = {pp.schedule(pid_item, args=[i]).result() for i in range(workers * 8)}
    return {"wall_s": round(wall, 2), "bad_item": str(res[10]),
            "others_ok": sum(getattr(v, "value", None) == 1 for i, v in enumerate(res) if i != 10),
            "worker_replaced": bool(after - before)}


def _pebble_map_hang(workers: int, chunk: int) -> dict:
    """pebble ``map`` with chunks: the timeout covers a whole chunk."""
    import pebble

    items = [0] * 10 + [30] + [0] * 10
    with pebble.ProcessPool(max_workers=workers, context=_ctx()) as pp:
        t = time.perf_counter()
        it = pp.map(sleep_item, items, chunksize=chunk, timeout=TIMEOUT_S).result()
        got = []
        while True:
            try:
                got.append(next(it).value)
            except StopIteration:
                break
            except FutTimeout:
                got.append("timeout")
        wall = time.perf_counter() - t
    return {"chunksize": chunk, "wall_s": round(wall, 2), "timeout_errors": sum(g == "timeout" for g in got),
            "good_items_lost": len(items) - 1 - sum(g == 1 for g in got)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    res = {"n": a.n, "workers": a.workers, "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 1),
           "item_timeout_s": TIMEOUT_S}
    res["overhead"] = overhead(a.n, a.workers, a.repeat)
    res["hang"] = {"ours": _ours_faulty(sleep_item, 30, a.workers), "pebble": _pebble_faulty(sleep_item, 30, a.workers),
                   "pebble_map_chunked": _pebble_map_hang(a.workers, 7)}
    res["exit"] = {"ours": _ours_faulty(crash_item, "crash", a.workers),
                   "pebble": _pebble_faulty(crash_item, "crash", a.workers)}
    res["segfault"] = {"ours": _ours_faulty(segv_item, "segv", a.workers),
                       "pebble": _pebble_faulty(segv_item, "segv", a.workers)}
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
