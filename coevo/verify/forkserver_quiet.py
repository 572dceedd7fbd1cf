"""The verifier pool's fork server imports this first (``coevo.verify.pool.PRELOAD``): SIGINT and SIGTERM ignored
in the server, and so in every worker it forks.  The pool's owner ignores them around the server's start
(``coevo.interrupt.signals_ignored_in_children``), but only its main thread can change a disposition: a pool first
started from another thread (a served verifier, a framework's reward thread) would otherwise leave the server, and
every later worker of that process, to die of a SIGTERM to the process group.  Imported anywhere else (not from the
fork server's ``main``) it does nothing."""
from __future__ import annotations

import signal
import sys


def _in_forkserver_main() -> bool:
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if code.co_name == "main" and code.co_filename.replace("\\", "/").endswith("multiprocessing/forkserver.py"):
            return True
        f = f.f_back
    return False


if _in_forkserver_main():
    for _sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_sig, signal.SIG_IGN)
