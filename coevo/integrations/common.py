"""What the verl adapter and the importers share: answer extraction, the verifier, ledger parts.

**Ledger parts (the one-writer rule with several reward workers).** verl may call a reward
function from several processes at once (the trainer, ``launch_reward_fn_async`` tasks, the
reward-loop workers), on several nodes. A DuckDB file has one writer, so each process writes
its *own* part: ``<COEVO_LEDGER>/parts/<host>-<pid>/ledger.duckdb``, a run directory whose
``run.lock`` (``coevo.runlock.RunLock``) the process holds from its first write until it exits.
Within a process a mutex serialises the threads (verl's reward loop calls ``compute_score`` from
an executor thread). By default every call's rows are committed before the call returns
(``flush_rows=1``): the part's DuckDB connection stays open, so a commit costs milliseconds, and
a worker that verl's ``ray.shutdown()`` kills (no atexit) loses nothing, since DuckDB replays
the committed write-ahead log when the part is next opened. ``flush_rows=N`` / ``flush_s``
buffer instead (at exit, or lost with a killed worker). ``coevo import parts
<COEVO_LEDGER> --out RUN`` merges the parts into one run (it refuses a part whose writer is alive).
"""
from __future__ import annotations

import atexit
import os
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any, Optional

from coevo.ledger.store import Ledger
from coevo.ledger.schema import TABLES
from coevo.runlock import RunLock
from coevo.verify.run import shared_run_verifier as build_verifier  # noqa: F401 (re-exported)

__all__ = ["LEDGER_ENV", "EXTRACT_MODES", "extract_answer", "build_verifier", "PartWriter", "part_writer",
           "close_parts", "as_reference"]

LEDGER_ENV = "COEVO_LEDGER"
EXTRACT_MODES = ("auto", "boxed", "gsm8k", "raw")
_GSM8K_RE = re.compile(r"####\s*([^\n]+)")


def extract_answer(text: Optional[str], mode: str = "auto") -> Optional[str]:
    """The answer in a model output: ``boxed`` = the last brace-balanced ``\\boxed{}`` (R-Zero,
    coevo's math world), ``gsm8k`` = after the last ``####`` (verl's GSM8K reward), ``auto`` =
    boxed, else ``####``; ``raw`` = the stripped text. None when there is none."""
    from coevo.verify.latex import last_boxed

    if mode not in EXTRACT_MODES:
        raise ValueError(f"extract must be one of {EXTRACT_MODES}, got {mode!r}")
    if text is None:
        return None
    if mode == "raw":
        return text.strip() or None
    if mode in ("auto", "boxed"):
        a = last_boxed(text)
        if a is not None or mode == "boxed":
            return a
    hits = _GSM8K_RE.findall(text)
    return hits[-1].strip().replace(",", "") if hits else None


def as_reference(gts: Any) -> Optional[str]:
    """A ground truth as the verifier's reference string: str as is, a number as text; None for
    anything else (None, lists, dicts: no single reference)."""
    if isinstance(gts, bool):
        return None
    if isinstance(gts, str):
        return gts
    if isinstance(gts, (int, float)):
        return str(gts)
    return None




class PartWriter:
    """This process's ledger part under ``root`` (see the module docstring)."""

    def __init__(self, root: Path, recipe: str = "verl-adapter", flush_rows: int = 1,
                 flush_s: float = 30.0) -> None:
        self.part = f"{socket.gethostname()}-{os.getpid()}"
        self.dir = Path(root) / "parts" / self.part
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lock = RunLock(self.dir).acquire()  # RunLockError if a live process holds it
        self.path = self.dir / "ledger.duckdb"
        self.mutex = threading.Lock()
        self.counter = 0
        self.flush_rows, self.flush_s = int(flush_rows), float(flush_s)
        self.buf: dict[str, list[dict]] = {}
        self.n_buf, self.last = 0, time.monotonic()
        self.led = Ledger(self.path)  # open for the process's life: a commit is then ~4 ms, not ~200 ms
        if not self.led.query("SELECT run_id FROM runs"):
            self.led.append("runs", [{"run_id": self.part, "created_at": time.time(), "recipe": recipe,
                                      "world": "verl", "seed": None, "config_yaml": None,
                                      "coevo_version": _version()}])

    def next_id(self) -> str:
        with self.mutex:
            self.counter += 1
            return f"{self.part}-c{self.counter}"

    def write(self, rows: dict[str, list[dict]], flush: bool = False) -> int:
        """Buffer ``{table: rows}`` (every row gets this part's run_id); the buffer is appended in one
        transaction when ``flush``, when it holds ``flush_rows`` rows, ``flush_s`` seconds after the
        last flush, and at exit (``flush_rows=1``, the default: every call is committed)."""
        n = 0
        with self.mutex:
            for table, rs in rows.items():
                if table not in TABLES:
                    raise ValueError(f"unknown table {table}")
                for r in rs:
                    r["run_id"] = self.part
                self.buf.setdefault(table, []).extend(rs)
                n += len(rs)
            self.n_buf += n
            if flush or self.n_buf >= self.flush_rows or time.monotonic() - self.last >= self.flush_s:
                self._flush()
        return n

    def _flush(self) -> None:
        if self.n_buf:
            with self.led.transaction(checkpoint=False):  # under the ledger's write guard (ledger/live.py)
                for table, rs in self.buf.items():
                    self.led.append(table, rs)
        self.buf, self.n_buf, self.last = {}, 0, time.monotonic()

    def close(self) -> None:
        """Write what is buffered, release the part's lock."""
        with self.mutex:
            try:
                self._flush()
            finally:
                self.led.close()
                self.lock.release()


_PARTS: dict = {}
_PLOCK = threading.Lock()


def part_writer(root: str | Path, flush_rows: int = 1, flush_s: float = 30.0) -> PartWriter:
    """The writer of this process (a forked child gets its own part); the flush settings of
    the first call stay."""
    key = (str(Path(root).resolve()), os.getpid())
    with _PLOCK:
        if key not in _PARTS:
            _PARTS[key] = PartWriter(Path(root), flush_rows=flush_rows, flush_s=flush_s)
        return _PARTS[key]


def close_parts() -> None:
    """Release this process's part locks (also run at exit)."""
    with _PLOCK:
        for k, w in list(_PARTS.items()):
            if k[1] == os.getpid():
                w.close()
                del _PARTS[k]


atexit.register(close_parts)


def _version() -> str:
    try:
        from coevo import __version__

        return str(__version__)
    except ImportError:
        return "?"


def rollout_row_of(run_id: str, round_: int, step: int, rollout_id: str, task_id: str, role: str, purpose: str,
                   group_idx: int, text: Optional[str], answer: Optional[str], version: str = "",
                   finish_reason: Optional[str] = None) -> dict:
    """A ``rollouts`` row (``coevo.ledger.rows.rollout_row``) for a rollout another framework
    sampled: its text as given (None when the source kept only the answer), tokens unknown."""
    from coevo.backends.base import Completion
    from coevo.ledger.rows import rollout_row

    c = Completion(prompt="", text=text or "", prompt_ids=[], token_ids=[], logprobs=[],
                   finish_reason=finish_reason or "stop", policy_version=version)
    row = rollout_row(run_id, round_, step, rollout_id, task_id, role, purpose, group_idx, c, answer)
    row.update({"text": text, "n_tokens": None, "finish_reason": finish_reason, "n_masked_tokens": None})
    return row


def task_row_of(run_id: str, round_: int, step: int, task_id: str, source: str, question: Optional[str],
                reference: Optional[str] = None, raw_text: Optional[str] = None, parse_reason: str = "",
                parse_ok: Optional[bool] = None, prompt_version: str = "", **extra) -> dict:
    """A ``tasks`` row (``coevo.ledger.rows.task_row``) for a task another framework posed."""
    from coevo.ledger.rows import task_row
    from coevo.worlds.base import Task

    task = Task(task_id=task_id, question=question, reference=reference) if question is not None else None
    row = task_row(run_id, round_, step, task_id, source, None, prompt_version, task, parse_reason, **extra)
    row["raw_text"] = raw_text
    if parse_ok is not None:
        row["parse_ok"] = parse_ok
    return row
