"""The ledger writer of reward hot paths: one ledger part per process, rows buffered and committed in
batches off the caller's thread. Names no framework: the adapter passes its name and version.

**Parts (the one-writer rule).** A trainer may call a reward function from several processes at once
(verl's reward workers, TRL under accelerate with one process per device), on several nodes. A DuckDB
file has one writer, so each process writes its *own* part,
``<root>/parts/<host>-<pid>/ledger.duckdb``, a run directory whose ``run.lock`` (``coevo.runlock``) the
process holds from its first write until it exits. ``coevo import parts <root> --out RUN`` merges them.

**Two write modes.**

* ``flush_rows=1`` (committed): every ``write`` commits before it returns (the connection stays open,
  so a commit is milliseconds, not a file open). Nothing is lost even when the process is killed with
  SIGKILL, as verl's ``ray.shutdown()`` ends its reward workers. The verl adapter's default.
* ``flush_rows=N > 1`` (buffered): ``write`` only appends the call's rows, or a function that builds
  them, to a queue (microseconds); a background thread builds and commits the queue in one transaction when it holds ``N`` rows or ``flush_s``
  seconds after the last commit. What is queued is committed at normal exit (atexit), on SIGTERM (a
  handler installed when the first buffered writer opens in the main thread: it commits, then lets
  the previous handler or the default action end the process), and by ``close()`` (the trainer
  callback at train end). A SIGKILL loses at most what was queued since the last commit.

Every part's ``runs`` row names the framework and its version (``recipe = "<framework>-adapter"``,
``world = <framework>``, ``config_yaml``).
"""
from __future__ import annotations

import atexit
import collections
import os
import signal
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from coevo.ledger.schema import TABLES
from coevo.ledger.store import Ledger
from coevo.runlock import RunLock

__all__ = ["PartWriter", "part_writer", "flush_parts", "close_parts", "coevo_version"]


def coevo_version() -> str:
    try:
        from coevo import __version__

        return str(__version__)
    except ImportError:
        return "?"


class PartWriter:
    """This process's ledger part under ``root`` (see the module docstring)."""

    def __init__(self, root: Path, framework: str, framework_version: str = "", flush_rows: int = 1,
                 flush_s: float = 30.0) -> None:
        if int(flush_rows) < 1 or float(flush_s) <= 0:
            raise ValueError(f"flush_rows must be >= 1 and flush_s > 0, got {flush_rows}, {flush_s}")
        self.pid = os.getpid()
        self.part = f"{socket.gethostname()}-{self.pid}"
        self.framework, self.framework_version = str(framework), str(framework_version or "")
        self.dir = Path(root) / "parts" / self.part
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lock = RunLock(self.dir).acquire()  # RunLockError if a live process holds it
        self.path = self.dir / "ledger.duckdb"
        self.flush_rows, self.flush_s = int(flush_rows), float(flush_s)
        self.buffered = self.flush_rows > 1
        self.mutex = threading.Lock()  # the id counter
        self.wlock = threading.RLock()  # the connection: one transaction at a time (re-entered by the SIGTERM handler)
        self.counter = 0
        # the calls' rows, each call's {table: rows} one entry: deque append / popleft are atomic, so neither a
        # writer thread nor the SIGTERM handler ever waits on the queue
        self.queue: collections.deque = collections.deque()
        self.n_queued, self.n_written, self.last = 0, 0, time.monotonic()
        self.closed = False
        self.led = Ledger(self.path)
        if not self.led.count("runs"):
            self.led.commit({"runs": [{"run_id": self.part, "created_at": time.time(),
                                       "recipe": f"{self.framework}-adapter", "world": self.framework, "seed": None,
                                       "config_yaml": f"framework: {self.framework}\nframework_version: "
                                                      f"'{self.framework_version}'\n",
                                       "coevo_version": coevo_version()}]}, checkpoint=False)
        self.wake = threading.Event()
        self.thread: Optional[threading.Thread] = None
        if self.buffered:
            self.thread = threading.Thread(target=self._flusher, name=f"coevo-ledger-{self.part}", daemon=True)
            self.thread.start()
            _install_sigterm()

    @property
    def tag(self) -> str:
        return f"{self.framework} {self.framework_version}".strip()

    def next_id(self) -> str:
        with self.mutex:
            self.counter += 1
            return f"{self.part}-c{self.counter}"

    def write(self, rows, flush: bool = False, n_rows: int = 0) -> int:
        """Queue ``{table: rows}`` (every row gets this part's run_id), or a function that returns them
        (built at commit time, off the caller's thread in buffered mode; ``n_rows``: how many it will
        return, for the size trigger). Committed at once in committed mode or with ``flush``, else by the
        background thread (see the module docstring). Returns the rows queued (``n_rows`` for a function)."""
        if self.closed:
            raise RuntimeError(f"ledger part {self.dir} is closed")
        n = n_rows if callable(rows) else self._stamp(rows)
        self.queue.append((n, rows))  # one append: a call's rows are queued whole or not at all
        self.n_queued += n  # a count for the flush trigger only
        if flush or not self.buffered:
            self.flush()
        elif self.n_queued >= self.flush_rows:
            self.wake.set()
        return n

    def _stamp(self, rows: dict) -> int:
        n = 0
        for table, rs in rows.items():
            if table not in TABLES:
                raise ValueError(f"unknown table {table}")
            for r in rs:
                r["run_id"] = self.part
            n += len(rs)
        return n

    def flush(self) -> int:
        """Commit what is queued, in one transaction; the number of rows committed."""
        with self.wlock, _signals_held():
            batch, n = [], 0
            while True:
                try:
                    batch.append(self.queue.popleft())
                except IndexError:
                    break
                n += batch[-1][0]
            self.n_queued -= n
            if batch:
                merged: dict[str, list[dict]] = {}
                for _, rows in batch:
                    if callable(rows):
                        rows = rows()
                        self._stamp(rows)
                    for table, rs in rows.items():
                        merged.setdefault(table, []).extend(rs)
                try:
                    # the ledger's step transaction (no step marker: a reward call is no step of coevo's loop),
                    # under its write guard (ledger/live.py)
                    self.led.commit(merged, checkpoint=False)
                except BaseException:  # not committed: back to the front of the queue
                    self.queue.extendleft(reversed(batch))
                    self.n_queued += n
                    raise
                self.n_written += n
            self.last = time.monotonic()
            return n

    def _flusher(self) -> None:
        while not self.closed:
            self.wake.wait(timeout=max(0.01, self.flush_s - (time.monotonic() - self.last)))
            self.wake.clear()
            if self.closed:
                return
            if self.n_queued and (self.n_queued >= self.flush_rows or time.monotonic() - self.last >= self.flush_s):
                try:
                    self.flush()
                except Exception:  # the rows stay queued; close() commits them or raises
                    time.sleep(min(self.flush_s, 1.0))

    def close(self) -> None:
        """Commit what is queued, stop the background thread, release the part's lock."""
        with self.wlock, _signals_held():
            if self.closed:
                return
            try:
                self.flush()
            finally:
                self.closed = True
                self.wake.set()
                self.led.close()
                self.lock.release()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=5.0)


_PARTS: dict = {}
_PLOCK = threading.RLock()


def part_writer(root: str | Path, framework: str, framework_version: str = "", flush_rows: int = 1,
                flush_s: float = 30.0) -> PartWriter:
    """The writer of this process under ``root`` (a forked child gets its own part); the settings of
    the first call stay."""
    key = (str(Path(root).resolve()), os.getpid())
    with _PLOCK:
        w = _PARTS.get(key)
        if w is None or w.closed:
            w = _PARTS[key] = PartWriter(Path(root), framework, framework_version, flush_rows, flush_s)
        return w


def current_part(w: Optional[PartWriter], root: Optional[str | Path], fw, flush_rows: int = 1,
                 flush_s: float = 30.0) -> Optional[PartWriter]:
    """A reward function's ledger part: ``w`` while it is open in this process, else this process's part under
    ``root`` for framework ``fw`` (a ``scoring.Framework``); None without a root."""
    if w is not None and not w.closed and w.pid == os.getpid():
        return w
    return part_writer(Path(root), fw.name, fw.version, flush_rows, flush_s) if root else None


def flush_parts() -> int:
    """Commit what this process's parts have queued; the number of rows committed."""
    with _PLOCK:
        return sum(w.flush() for k, w in list(_PARTS.items()) if k[1] == os.getpid() and not w.closed)


def close_parts() -> None:
    """Commit and release this process's parts (also run at exit and on SIGTERM)."""
    with _PLOCK:
        for k, w in list(_PARTS.items()):
            if k[1] == os.getpid():
                try:
                    w.close()
                finally:
                    del _PARTS[k]


atexit.register(close_parts)

# ---------------------------------------------------------------------- SIGTERM: commit, then end as before
_PREV: dict = {}


def _on_sigterm(signum, frame) -> None:
    close_parts()
    prev = _PREV.get(signum, signal.SIG_DFL)
    if callable(prev):
        prev(signum, frame)
    elif prev != signal.SIG_IGN:  # the default action: end the process by the same signal
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_sigterm() -> None:
    """Install the handler once, from the main thread (Python allows no other); a process whose first
    buffered writer opens in another thread relies on atexit and ``close()``."""
    if signal.SIGTERM in _PREV or threading.current_thread() is not threading.main_thread():
        return
    prev = signal.getsignal(signal.SIGTERM)
    if prev is _on_sigterm:
        return
    _PREV[signal.SIGTERM] = prev
    signal.signal(signal.SIGTERM, _on_sigterm)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGTERM waits while the main thread is inside a commit (the handler commits too, and one
    connection cannot open a transaction inside another); delivered when the commit is done."""
    if SIGTERM_HOOKED() and threading.current_thread() is threading.main_thread():
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    else:
        yield


def SIGTERM_HOOKED() -> bool:  # noqa: N802 - reads as the flag it is
    return signal.SIGTERM in _PREV
