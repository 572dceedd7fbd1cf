"""Clean interruption of a writer (``coevo run``): SIGINT and SIGTERM become one exception, ``Interrupted``.

``install()`` (main thread) makes both signals raise ``Interrupted`` where the main thread is, so start-up and a
step in flight stop at once: the step's rows were never written (the step transaction, ``coevo/runner/loop.py``
with ``coevo/ledger/store.py``) and a resume runs it again.  Inside ``held()`` (a step's state file, its ledger
commit, its checkpoints) a signal waits for the block's end, so a step is committed whole or not at all.  After the
first ``Interrupted`` further signals are ignored: the ``finally`` blocks (the verifier pool, the ledger, the run
lock) run undisturbed.  ``Interrupted`` is a ``BaseException``, as ``KeyboardInterrupt`` is, so no
``except Exception`` in a recipe swallows it.  ``coevo run`` turns it into one line,
``interrupted at step N; resume: coevo run --resume DIR``, and exit status 128 + the signal (130, 143).
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT / SIGTERM in a writer; the runner fills in ``run_dir`` and ``step`` (the first uncommitted one)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)
        self.run_dir = None
        self.step: int | None = None

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_state = {"held": 0, "pending": None, "stopping": False, "signalled": None}


def _handler(signum, frame) -> None:
    if _state["stopping"]:
        return  # already stopping: the clean-up runs undisturbed
    if _state["held"]:
        _state["pending"] = _state["pending"] or signum
        return
    _state["stopping"], _state["signalled"] = True, signum
    if _in_import(frame):  # raised inside an import, it can abort the process (torch's pybind11 module init calls
        return             # std::terminate): the run stops at its next step boundary instead (``check``)
    raise Interrupted(signum)


def _in_import(frame) -> bool:
    """Whether the signal arrived while a module was being imported (an import machinery frame below it)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def interruption(e: BaseException | None) -> "Interrupted | None":
    """The ``Interrupted`` that ``e`` is: ``e`` itself, or, once a signal arrived, whatever exception came out of
    it (raised inside a C extension or an import, ``Interrupted`` can come out as another error: safetensors'
    ValueError, a half-imported module's RecursionError) — that error is the interruption, never a traceback.
    None when no signal arrived."""
    if isinstance(e, Interrupted):
        return e
    s = _state["signalled"]
    return Interrupted(s) if s is not None and e is not None else None


def check() -> None:
    """At a safe point (between two steps): raise ``Interrupted`` if a signal arrived whose exception a library
    swallowed (an ``except`` in an import it cut), so the run stops there instead of going on."""
    if _state["signalled"] is not None:
        raise Interrupted(_state["signalled"])


def install() -> dict:
    """SIGINT and SIGTERM raise ``Interrupted`` from here on; returns the previous handlers (for ``restore``).
    Outside the main thread (where Python cannot set handlers) nothing changes and ``{}`` is returned."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    _state.update(held=0, pending=None, stopping=False, signalled=None)
    return {s: signal.signal(s, _handler) for s in SIGNALS}


def _exit_now(signum, frame) -> None:
    os.write(2, b"interrupted before the command started; nothing was written\n")
    os._exit(128 + signum)


def quiet_start() -> None:
    """While ``coevo`` starts (its imports, before a command runs): SIGINT / SIGTERM print one line and exit
    130 / 143 at once; nothing is written yet.  ``default_signals()`` ends it when the command starts."""
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            signal.signal(s, _exit_now)


def default_signals() -> None:
    """Python's own: SIGINT raises KeyboardInterrupt, SIGTERM ends the process (``coevo run`` installs its own)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def restore(previous: dict) -> None:
    for s, h in previous.items():
        signal.signal(s, h if h is not None else signal.SIG_DFL)


@contextmanager
def held():
    """A block a signal must not cut: the signal waits, and ``Interrupted`` is raised when the block ends
    (unless the block raised: then its own exception goes on)."""
    _state["held"] += 1
    try:
        yield
    finally:
        _state["held"] -= 1
    pending = _state["pending"]
    if pending is not None and not _state["held"] and not _state["stopping"]:
        _state["pending"], _state["stopping"], _state["signalled"] = None, True, pending
        raise Interrupted(pending)


@contextmanager
def signals_ignored_in_children():
    """Signals SIGINT and SIGTERM ignored while the block starts a child process, which keeps them ignored
    (an ignored signal stays ignored through exec; a Python child then installs no KeyboardInterrupt handler).
    For helpers the parent stops itself (the verifier pool's fork server and workers): a Ctrl-C or a SIGTERM to the
    process group leaves no traceback from them.  Meanwhile the signals are blocked here, so one that arrives
    reaches this process after the block.  Main thread only; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        old = {s: signal.signal(s, signal.SIG_IGN) for s in SIGNALS}
        try:
            yield
        finally:
            restore(old)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
