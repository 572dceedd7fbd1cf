"""Sandbox for model-written Python: ``run_sandboxed(code, timeout_s) -> SandboxResult``.

What it does (namespaces mode, the default where ``unshare`` works):
- new user, mount, network and PID namespaces (util-linux ``unshare``); the program
  sees only its own processes (fresh /proc), has only a loopback interface that is
  down (no 127.0.0.1 of the host, no outside address), and every mount of the host is
  read-only; /tmp, /var/tmp, /dev/shm are fresh size-limited tmpfs; the working
  directory is an empty ``/tmp/work``;
- all capabilities dropped (bounding + ambient set, ``no_new_privs``) before the
  program starts, so it cannot undo the read-only mounts;
- rlimits: CPU seconds, address space, file size, process count, open files, no core;
- a scrubbed environment (PATH, LANG, HOME=work dir only);
- a wall-clock kill of the whole tree: the host SIGKILLs ``unshare`` (``--kill-child``),
  PID 1 of the namespace dies and the kernel kills every process in it, daemonised
  grandchildren included; stdout/stderr are capped (``max_output``).

What it does NOT protect against: see docs/verifiers.md ("Sandbox").  In short: it
reads host files that the host user can read (read-only, but readable); kernel
exploits; CPU / memory-bandwidth contention with the host; side channels; in fallback
mode (no user namespaces) the isolation is only an audit hook + rlimits + uid 65534.
"""
from __future__ import annotations

import functools
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox_launcher.py")
SETUP_FAILED = 121
SAFE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
UNSHARE_FLAGS = ["--user", "--map-root-user", "--mount", "--net", "--pid", "--fork", "--mount-proc",
                 "--kill-child"]
RESOURCE_SIGNALS = {signal.SIGXCPU, signal.SIGXFSZ, signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT}


@dataclass
class SandboxResult:
    """Outcome of one sandboxed run.  ``reason``: ``ok`` | ``exit-nonzero`` | ``timeout``
    | ``resource-limit`` | ``output-limit`` | ``sandbox-error``."""

    stdout: str
    stderr: str
    exit_status: Optional[int]      # exit code, or -signal; None if it never ran
    reason: str
    elapsed_s: float
    isolation: str                  # "namespaces" | "fallback"
    detail: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.reason == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def namespaces_available() -> bool:
    """True if an unprivileged-style ``unshare`` with user+net+pid namespaces works here."""
    exe = shutil.which("unshare")
    if not exe:
        return False
    try:
        r = subprocess.run([exe, *UNSHARE_FLAGS, "true"], capture_output=True, timeout=10)
        return r.returncode == 0
    except Exception:  # noqa: BLE001
        return False


def sandbox_isolation() -> str:
    return "namespaces" if namespaces_available() else "fallback"


def run_sandboxed(code: str, timeout_s: float, *, memory_mb: int = 1024, cpu_s: Optional[float] = None,
                  file_size_mb: int = 8, disk_mb: int = 16, max_procs: int = 32, max_output: int = 1 << 20,
                  stdin: Optional[str] = None, python: Optional[str] = None,
                  mode: Optional[str] = None) -> SandboxResult:
    """Run untrusted Python ``code`` in the sandbox; never raises.

    ``timeout_s`` is wall-clock for the whole run (the process tree is killed at the
    deadline); ``cpu_s`` (default ``ceil(timeout_s)+1``) is the RLIMIT_CPU of each
    process.  ``mode`` forces ``"namespaces"`` or ``"fallback"`` (default: best there is).
    """
    t0 = time.monotonic()
    mode = mode or sandbox_isolation()
    try:
        return _run(code, float(timeout_s), memory_mb, cpu_s, file_size_mb, disk_mb, max_procs, max_output,
                    stdin, python or sys.executable, mode, t0)
    except Exception as e:  # noqa: BLE001 - never raise
        return SandboxResult("", "", None, "sandbox-error", time.monotonic() - t0, mode,
                             {"error": f"{type(e).__name__}: {e}"})


def _run(code, timeout_s, memory_mb, cpu_s, file_size_mb, disk_mb, max_procs, max_output, stdin, python,
         mode, t0) -> SandboxResult:
    host_dir = tempfile.mkdtemp(prefix="coevo-sbx-")
    status_r, status_w = os.pipe()
    proc = None
    try:
        os.chmod(host_dir, 0o700)
        work = os.path.join(host_dir, "work")
        os.mkdir(work, 0o700)
        hidden = _hidden_paths(python)
        cfg = {
            "mode": mode, "code": str(code), "python": python, "env": dict(SAFE_ENV),
            "status_fd": status_w, "workdir": work, "stdin_text": stdin,
            "cpu_s": int(cpu_s if cpu_s is not None else int(timeout_s) + 1), "memory_mb": memory_mb,
            "file_size_mb": file_size_mb, "disk_mb": disk_mb, "max_procs": max_procs, "max_files": 256,
            "hide": hidden[0], "keep": hidden[1],
        }
        cfg_path = os.path.join(host_dir, "cfg.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        if mode == "namespaces":
            cmd = [shutil.which("unshare") or "unshare", *UNSHARE_FLAGS, python, "-I", "-B", LAUNCHER, cfg_path]
        else:
            cmd = [python, "-I", "-B", LAUNCHER, cfg_path]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(SAFE_ENV), cwd=host_dir, pass_fds=(status_w,), start_new_session=True)
        os.close(status_w)
        status_w = -1
        out, err, status_raw, why = _collect(proc, status_r, t0 + timeout_s, max_output)
        elapsed = time.monotonic() - t0
        if why is not None:
            _kill_tree(proc)
        rc = proc.wait(timeout=10)
        status = _parse_status(status_raw)
        stdout = out.decode("utf-8", "replace")
        stderr = err.decode("utf-8", "replace")
        detail = {"launcher_rc": rc, "status": status}
        if why == "timeout":
            return SandboxResult(stdout, stderr, None, "timeout", elapsed, mode, detail)
        if why == "output-limit":
            return SandboxResult(stdout, stderr, None, "output-limit", elapsed, mode, detail)
        if status.get("status") == "exited":
            code_ = status["code"]
            if code_ == SETUP_FAILED and "sandbox child setup failed" in stderr:
                return SandboxResult(stdout, stderr, code_, "sandbox-error", elapsed, mode, detail)
            if code_ == 0:
                return SandboxResult(stdout, stderr, 0, "ok", elapsed, mode, detail)
            reason = "resource-limit" if _looks_like_resource(stderr) else "exit-nonzero"
            return SandboxResult(stdout, stderr, code_, reason, elapsed, mode, detail)
        if status.get("status") == "signaled":
            sig = status["signal"]
            reason = "resource-limit" if sig in RESOURCE_SIGNALS else "exit-nonzero"
            detail["signal_name"] = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
            return SandboxResult(stdout, stderr, -sig, reason, elapsed, mode, detail)
        detail["error"] = status.get("error", "no status from the sandbox launcher")
        return SandboxResult(stdout, stderr, None, "sandbox-error", elapsed, mode, detail)
    finally:
        if proc is not None and proc.poll() is None:
            _kill_tree(proc)
            try:
                proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                pass
        for fd in (status_r, status_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        _rmtree(host_dir)


def _collect(proc, status_r, deadline, max_output):
    """Read stdout, stderr and the status pipe until all close, the deadline or the cap."""
    sel = selectors.DefaultSelector()
    bufs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray(), status_r: bytearray()}
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    open_fds = set(bufs)
    why = None
    try:
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "timeout"
                break
            for key, _ in sel.select(timeout=min(left, 0.25)):
                fd = key.fd
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(fd)
                    open_fds.discard(fd)
                    continue
                bufs[fd] += chunk
            if len(bufs[proc.stdout.fileno()]) + len(bufs[proc.stderr.fileno()]) > max_output:
                why = "output-limit"
                break
            if status_r not in open_fds and proc.poll() is not None:
                # launcher done; drain what is already buffered, don't wait for stray holders
                for fd in list(open_fds):
                    try:
                        while True:
                            chunk = os.read(fd, 65536)
                            if not chunk:
                                break
                            bufs[fd] += chunk
                            if len(bufs[fd]) > max_output:
                                break
                    except (BlockingIOError, OSError):
                        pass
                break
    finally:
        sel.close()
    out = bytes(bufs[proc.stdout.fileno()][:max_output])
    err = bytes(bufs[proc.stderr.fileno()][:max_output])
    return out, err, bytes(bufs[status_r]), why


def _parse_status(raw: bytes) -> dict:
    for line in raw.decode("utf-8", "replace").splitlines()[::-1]:
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {}


def _looks_like_resource(stderr: str) -> bool:
    tail = stderr[-2000:]
    return any(s in tail for s in ("MemoryError", "BlockingIOError: [Errno 11]", "Resource temporarily unavailable",
                                    "File too large", "No space left on device", "RecursionError",
                                    "Too many open files"))


def _kill_tree(proc) -> None:
    """SIGKILL the launcher's process group; in namespaces mode ``--kill-child`` then
    takes PID 1 of the namespace down and the kernel kills the rest of the tree."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except Exception:  # noqa: BLE001
        pass


HIDE = ("/root", "/home", "/work", "/srv", "/mnt", "/opt", "/var/lib", "/var/log", "/run")


def _hidden_paths(python: str) -> tuple:
    """(hide, keep): host directories covered by an empty read-only tmpfs inside the
    sandbox (home directories, /work, ...), and the interpreter's own directories that
    are put back under them so ``python`` and its site-packages still work."""
    hide = []
    for p in (os.path.expanduser("~"), *HIDE):
        rp = os.path.realpath(p)
        if os.path.isdir(rp) and rp != "/" and rp not in hide:
            hide.append(rp)
    keep = []
    for p in (os.path.dirname(os.path.dirname(os.path.realpath(python))), sys.prefix, sys.base_prefix,
              sys.exec_prefix, sys.base_exec_prefix):
        rp = os.path.realpath(p)
        if rp not in keep:
            keep.append(rp)
    keep = [k for k in keep if not any(k != o and k.startswith(o + "/") for o in keep)]  # outermost only
    hide = [h for h in hide if not any(k == h or h.startswith(k + "/") for k in keep)]
    return hide, keep


def _rmtree(path: str) -> None:
    def onerror(func, p, exc):  # a fallback-mode program may leave read-only files
        try:
            os.chmod(p, 0o700)
            func(p)
        except Exception:  # noqa: BLE001
            pass
    shutil.rmtree(path, onerror=onerror)
