"""Guards of a run directory: one writer at a time, and disk trouble as one line.

**The lock.** A writer (``coevo run``, ``coevo run --resume``) holds ``<run_dir>/run.lock``,
a JSON file::

    {"pid": 4242, "host": "box", "started_at": 1764553200.5, "since": "2026-12-01T01:40:00Z",
     "proc_start": 123456, "boot_id": "…", "token": "…"}

``proc_start`` is the holder's start time in clock ticks since boot (``/proc/<pid>/stat``
field 22) and ``boot_id`` the kernel's boot id: a lock whose pid is gone, is a zombie, or
now belongs to a different process (another start time, another boot) on the same host is
stale and is taken over. A lock from another host is never taken over (its pid cannot be
checked here). The file appears atomically (written aside, then hard-linked in place), and
check-then-take runs under ``flock`` on the run directory, so two writers that race for a
stale lock cannot both win. Readers (``coevo audit``, ``coevo report``) take no lock; of a
live run they read a copy of the last committed step (coevo/ledger/live.py).

**Disk trouble.** :func:`disk_trouble` recognises a full, read-only or over-quota
filesystem in an exception (OSError errno, DuckDB IO errors, torch's stream writer) and
words it as one line naming the path and the free space.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "run.lock"
DISK_ERRNOS = {errno.ENOSPC: "no space left on device", errno.EROFS: "read-only file system",
               errno.EDQUOT: "disk quota exceeded", errno.EIO: "I/O error"}
_DISK_TEXTS = (("no space left", errno.ENOSPC), ("read-only file system", errno.EROFS),
               ("disk quota exceeded", errno.EDQUOT), ("unexpected pos", errno.ENOSPC),
               ("file write failed", errno.ENOSPC))


class RunLockError(Exception):
    """Another live writer holds the run directory (one line, names the holder)."""


def occupied(run_dir: Path) -> bool:
    """Whether a new run may not start in ``run_dir``: it holds anything but a lone lock (a writer killed at start)."""
    d = Path(run_dir)
    return d.is_dir() and any(f.name != LOCK_NAME for f in d.iterdir())


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks since boot) of a process, or None if unknown."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[-1].split()  # the command name may hold spaces and parentheses
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def holder_alive(info: dict) -> bool:
    """Whether the process a lock names still runs (same host only; another host counts as alive)."""
    if info.get("host") != socket.gethostname():
        return True
    pid = info.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    boot = _boot_id()
    if info.get("boot_id") and boot and info["boot_id"] != boot:
        return False  # written before a reboot
    if not _pid_alive(pid):
        return False
    st = _proc_stat(pid)
    if st is None:
        return True  # no /proc: the pid is all there is to go by
    state, start = st
    if state == "Z":
        return False  # killed, not yet reaped
    return info.get("proc_start") is None or info["proc_start"] == start


def read_lock(run_dir: Path) -> dict | None:
    """The lock's content; None if there is no lock; {} if it cannot be parsed."""
    try:
        raw = (Path(run_dir) / LOCK_NAME).read_text()
    except FileNotFoundError:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def describe_holder(info: dict) -> str:
    return f"pid {info.get('pid', '?')} on host {info.get('host', '?')} since {info.get('since', '?')}"


class RunLock:
    """``with RunLock(run_dir):`` — hold the run directory's writer lock for the block."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self.info: dict | None = None

    def _my_info(self) -> dict:
        now = time.time()
        st = _proc_stat(os.getpid())
        return {"pid": os.getpid(), "host": socket.gethostname(), "started_at": now,
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                "proc_start": st[1] if st else None, "boot_id": _boot_id(), "token": uuid.uuid4().hex}

    def _place(self, info: dict) -> bool:
        """Put the lock file in place atomically; False if one is already there."""
        tmp = self.run_dir / f".{LOCK_NAME}.{os.getpid()}.{info['token'][:8]}"
        try:
            tmp.write_text(json.dumps(info) + "\n")
            os.link(tmp, self.path)
            return True
        except FileExistsError:
            return False
        except OSError as e:  # a filesystem without hard links: exclusive create instead
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(info) + "\n")
            return True
        finally:
            tmp.unlink(missing_ok=True)

    def acquire(self) -> "RunLock":
        info = self._my_info()
        with _dir_flock(self.run_dir):
            for _ in range(3):
                if self._place(info):
                    self.info = info
                    return self
                held = read_lock(self.run_dir)
                if held is None:
                    continue  # released between the two looks
                if held and holder_alive(held):
                    raise RunLockError(
                        f"run directory {self.run_dir} is in use by {describe_holder(held)} "
                        f"(lock {self.path}); wait for it to finish or stop it"
                        + ("" if held.get("host") == socket.gethostname()
                           else f"; if that process is gone, delete {self.path}"))
                self.path.unlink(missing_ok=True)  # stale (holder gone) or unreadable: take it over
        raise RunLockError(f"cannot take the lock {self.path}: it keeps changing")

    def release(self) -> None:
        if self.info is None:
            return
        try:
            if (read_lock(self.run_dir) or {}).get("token") == self.info["token"]:
                self.path.unlink()
        except OSError:
            pass  # left behind: the next writer finds its holder gone and takes it over
        self.info = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class _dir_flock:
    """flock on the directory itself for the check-then-take section; a no-op where
    flock is unavailable (the lock file alone still keeps two writers apart)."""

    def __init__(self, d: Path) -> None:
        self.d, self.fd = d, None

    def __enter__(self):
        try:
            import fcntl

            self.fd = os.open(self.d, os.O_RDONLY)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except (ImportError, OSError):
            if self.fd is not None:
                os.close(self.fd)
            self.fd = None
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor releases the flock


@contextmanager
def writer_guard(run_dir: Path, error: type[Exception]):
    """Hold the run directory's lock for the block; a held lock, and disk trouble in the block,
    become ``error`` with one line. The lock is released however the block ends."""
    lock = RunLock(run_dir)
    try:
        lock.acquire()
    except RunLockError as e:
        raise error(str(e)) from None
    except OSError as e:
        raise error(disk_trouble(e, run_dir) or f"cannot lock {run_dir}: {e}") from None
    try:
        yield lock
    except error:
        raise
    except Exception as e:  # noqa: BLE001 - only disk trouble is reworded, the rest re-raised
        msg = disk_trouble(e, run_dir)
        if msg is None:
            raise
        raise error(f"{msg}; the completed steps are saved: free space, then "
                    f"`coevo run --resume {run_dir}`") from None
    finally:
        lock.release()


# ---------------------------------------------------------------------- disk trouble
def _disk_errno(exc: BaseException) -> int | None:
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in DISK_ERRNOS:
            return e.errno
        text = str(e).lower()
        for needle, code in _DISK_TEXTS:
            if needle in text:
                return code
        if type(e).__name__ == "IOException" and type(e).__module__.startswith("duckdb"):
            return errno.EIO
        e = e.__cause__ or e.__context__
    return None


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def free_space(path: Path) -> str:
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        u = shutil.disk_usage(p)
    except OSError:
        return "free space unknown"
    return f"free now: {_size(u.free)} of {_size(u.total)}"


def disk_trouble(exc: BaseException, path: Path) -> str | None:
    """One line for a full/read-only/over-quota filesystem under ``path``; None for any other error."""
    code = _disk_errno(exc)
    if code is None:
        return None
    return f"{DISK_ERRNOS[code]}: cannot write to {path} ({free_space(path)})"
