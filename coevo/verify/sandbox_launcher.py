"""Trusted launcher that runs *inside* the sandbox before the untrusted program.

Invoked by ``coevo.verify.sandbox`` as ``python -I sandbox_launcher.py CONFIG_JSON_PATH``
(stdlib only; it must not import coevo).  Two modes:

``namespaces`` (run under ``unshare --user --map-root-user --mount --net --pid --fork
--mount-proc --kill-child``): this process is PID 1 of a fresh PID namespace.  It
makes every mount read-only (``mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)``),
mounts small fresh tmpfs on /tmp, /var/tmp and /dev/shm, forks the program into
``/tmp/work``, and in the child sets rlimits, drops every capability (bounding set,
ambient set, ``no_new_privs``) and ``execve``s Python on the program.  PID 1 reaps
everything and reports the child's status on the status pipe; when PID 1 exits the
kernel kills every process left in the namespace (daemonised grandchildren included).

``fallback`` (no user namespaces): rlimits, a child subreaper, a separate uid (65534)
when started as root and the interpreter is reachable by that uid, and an audit hook inside the program's interpreter that refuses
sockets, subprocesses, ``fork``/``exec``, signals and writes outside the work dir.
This is best-effort (ctypes can bypass audit hooks) and documented as such.
"""
import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442}.get(os.uname().machine, 442)
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
PR_SET_CHILD_SUBREAPER = 36
SETUP_FAILED = 121

libc = ctypes.CDLL(None, use_errno=True)


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def mount(src, target, fstype, flags, data):
    _check(libc.mount(src.encode(), target.encode(), fstype.encode() if fstype else None,
                      ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


def readonly_everything():
    mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    attr = MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)  # not NODEV: /dev/null must work
    rc = libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr))
    _check(rc, "mount_setattr / read-only")


MS_BIND, MS_MOVE = 4096, 8192


def set_readonly(path):
    attr = MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, 0, 0)
    rc = libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE, ctypes.byref(attr), ctypes.sizeof(attr))
    _check(rc, f"mount_setattr {path} read-only")


def hide_paths(hide, keep, stash_root="/tmp/.keep"):
    """Cover each ``hide`` dir with an empty read-only tmpfs, then put back the
    ``keep`` dirs under it (the interpreter and its site-packages), read-only."""
    stashed = []
    for i, k in enumerate(keep):
        if os.path.isdir(k) and any(k.startswith(h + "/") for h in hide):
            st = f"{stash_root}/{i}"
            os.makedirs(st, exist_ok=True)
            mount(k, st, None, MS_BIND | MS_REC, None)
            stashed.append((st, k))
    for h in hide:
        if os.path.isdir(h):
            mount("tmpfs", h, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    for st, k in stashed:
        os.makedirs(k, exist_ok=True)
        mount(st, k, None, MS_MOVE, None)
        os.rmdir(st)
    if stashed:
        os.rmdir(stash_root)
    for h in hide:
        if os.path.isdir(h):
            set_readonly(h)


def drop_privileges():
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def set_limits(cfg):
    def lim(res, v):
        if v is None:
            return
        v = int(v)
        try:
            resource.setrlimit(res, (v, v))
        except (ValueError, OSError):
            soft, hard = resource.getrlimit(res)
            resource.setrlimit(res, (min(v, hard) if hard != resource.RLIM_INFINITY else v, hard))
    mb = 1024 * 1024
    lim(resource.RLIMIT_CPU, cfg.get("cpu_s"))
    lim(resource.RLIMIT_AS, cfg["memory_mb"] * mb if cfg.get("memory_mb") else None)
    lim(resource.RLIMIT_FSIZE, cfg["file_size_mb"] * mb if cfg.get("file_size_mb") else None)
    lim(resource.RLIMIT_NPROC, cfg.get("max_procs"))
    lim(resource.RLIMIT_NOFILE, cfg.get("max_files", 256))
    lim(resource.RLIMIT_CORE, 0)


def report(fd, obj):
    try:
        os.write(fd, (json.dumps(obj) + "\n").encode())
    except OSError:
        pass


def wait_child(pid):
    """Reap every process until ``pid`` exits; return its status dict."""
    while True:
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return {"status": "lost"}
        except InterruptedError:
            continue
        if got == pid:
            if os.WIFSIGNALED(status):
                return {"status": "signaled", "signal": os.WTERMSIG(status)}
            return {"status": "exited", "code": os.WEXITSTATUS(status)}


def run_namespaces(cfg, status_fd):
    work = "/tmp/work"
    try:
        readonly_everything()
        tmp_opts = f"size={int(cfg.get('disk_mb', 16))}m,mode=1777,nr_inodes=4096"
        tmp_dirs = [p for p in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(p)]
        # interpreter dirs that live under a temp dir (a venv in a clone under /tmp): hold
        # them open, then bind them back over the fresh tmpfs, read-only
        held = [(os.open(k, os.O_RDONLY | os.O_DIRECTORY), k) for k in cfg.get("keep", [])
                if os.path.isdir(k) and any(k.startswith(t + "/") for t in tmp_dirs)]
        for path in tmp_dirs:
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, tmp_opts if path == "/tmp" else "size=1m,mode=1777")
        for fd, k in held:
            os.makedirs(k, exist_ok=True)
            mount(f"/proc/self/fd/{fd}", k, None, MS_BIND | MS_REC, None)
            os.close(fd)
            set_readonly(k)
        hide_paths(cfg.get("hide", []), [k for k in cfg.get("keep", []) if k not in {h for _, h in held}])
        os.makedirs(work, mode=0o777, exist_ok=True)
        with open(os.path.join(work, "main.py"), "w") as f:
            f.write(cfg["code"])
        if cfg.get("stdin_text") is not None:
            with open(os.path.join(work, ".stdin"), "w") as f:
                f.write(cfg["stdin_text"])
    except Exception as e:  # noqa: BLE001
        report(status_fd, {"status": "setup-error", "error": f"{type(e).__name__}: {e}"})
        os._exit(SETUP_FAILED)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(status_fd)
            os.chdir(work)
            if cfg.get("stdin_text") is not None:
                fd = os.open(".stdin", os.O_RDONLY)
                os.dup2(fd, 0)
                os.close(fd)
            else:
                fd = os.open("/dev/null", os.O_RDONLY)
                os.dup2(fd, 0)
            os.setsid()
            drop_privileges()
            set_limits(cfg)
            env = dict(cfg["env"], HOME=work, TMPDIR="/tmp")
            os.execve(cfg["python"], [cfg["python"], "-I", "-B", os.path.join(work, "main.py")], env)
        except BaseException as e:  # noqa: BLE001
            os.write(2, f"sandbox child setup failed: {e}\n".encode())
        os._exit(SETUP_FAILED)
    # PID 1: ignore whatever the program sends us; reap; report
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE):
        signal.signal(s, signal.SIG_IGN)
    res = wait_child(pid)
    report(status_fd, res)
    os._exit(0)  # PID 1 exiting kills everything still in the namespace


# ------------------------------------------------------------------ fallback ----
FALLBACK_PRELUDE = r'''
import sys, os
_WORK = os.path.realpath(os.getcwd())
_BLOCK = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
          "os.forkpty", "os.kill", "os.killpg", "signal.pthread_kill", "ctypes.", "os.chmod", "os.chown",
          "pty.", "os.symlink", "os.link", "os.setuid", "sys.remote_exec", "_posixsubprocess")
def _hook(event, args):
    if event.startswith(_BLOCK):
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event in ("open",) and len(args) > 1 and args[1] and any(c in str(args[1]) for c in "wax+"):
        p = args[0]
        if isinstance(p, int):
            return
        p = os.path.realpath(os.fsdecode(p))
        if not (p == _WORK or p.startswith(_WORK + os.sep)):
            raise PermissionError(f"sandbox: write outside the work dir: {p}")
    if event in ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "shutil.rmtree", "os.truncate"):
        for p in args[:2]:
            if isinstance(p, (str, bytes, os.PathLike)):
                p = os.path.realpath(os.fsdecode(p))
                if not (p == _WORK or p.startswith(_WORK + os.sep)):
                    raise PermissionError(f"sandbox: {event} outside the work dir: {p}")
sys.addaudithook(_hook)
del _hook
'''


def _world_reachable(path):
    """Can uid 65534 execute ``path`` (every directory on the way o+x, the file o+rx)?"""
    import stat
    real = os.path.realpath(path)
    parts = real.split("/")
    for i in range(2, len(parts)):
        if not os.stat("/".join(parts[:i])).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(real).st_mode & stat.S_IXOTH)


def run_fallback(cfg, status_fd):
    work = cfg["workdir"]
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with open(os.path.join(work, "main.py"), "w") as f:
        f.write(cfg["code"])
    pid = os.fork()
    if pid == 0:
        try:
            os.close(status_fd)
            os.chdir(work)
            src = "/dev/null"
            if cfg.get("stdin_text") is not None:
                src = os.path.join(work, ".stdin")
                with open(src, "w") as f:
                    f.write(cfg["stdin_text"])
            fd = os.open(src, os.O_RDONLY)
            os.dup2(fd, 0)
            os.setsid()
            if os.getuid() == 0 and _world_reachable(cfg["python"]):  # a separate uid: cannot signal our processes
                os.chown(work, 65534, 65534)
                for name in os.listdir(work):
                    os.chown(os.path.join(work, name), 65534, 65534)
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            set_limits(cfg)
            env = dict(cfg["env"], HOME=work, TMPDIR=work)
            runner = FALLBACK_PRELUDE + "\nimport runpy\nrunpy.run_path('main.py', run_name='__main__')\n"
            os.execve(cfg["python"], [cfg["python"], "-I", "-B", "-c", runner], env)
        except BaseException as e:  # noqa: BLE001
            os.write(2, f"sandbox child setup failed: {e}\n".encode())
        os._exit(SETUP_FAILED)
    res = wait_child(pid)
    # kill anything the program left behind (re-parented to us as subreaper)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    report(status_fd, res)
    os._exit(0)


def main():
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    status_fd = int(cfg["status_fd"])
    if cfg["mode"] == "namespaces":
        run_namespaces(cfg, status_fd)
    else:
        run_fallback(cfg, status_fd)


if __name__ == "__main__":
    main()
