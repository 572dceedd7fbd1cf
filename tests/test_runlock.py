"""One writer per run directory: coevo/runlock.py in process, and the real CLI in subprocesses."""
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import REPO, coevo_cmd, run_coevo, tiny_run_args
from coevo.runlock import LOCK_NAME, RunLock, RunLockError, holder_alive, read_lock


def _proc_start(pid: int) -> int:
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])


def _write_lock(d, **info):
    (d / LOCK_NAME).write_text(json.dumps(info))


def test_lock_file_format_and_release(tmp_path):
    with RunLock(tmp_path):
        info = read_lock(tmp_path)
        assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
        assert info["proc_start"] == _proc_start(os.getpid())
        assert set(info) == {"pid", "host", "started_at", "since", "proc_start", "boot_id", "token"}
        assert info["since"].endswith("Z") and len(info["since"]) == 20
        with pytest.raises(RunLockError, match=f"in use by pid {os.getpid()} on host"):
            RunLock(tmp_path).acquire()
    assert read_lock(tmp_path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary files left behind


def test_release_on_error(tmp_path):
    with pytest.raises(ValueError):
        with RunLock(tmp_path):
            raise ValueError("boom")
    assert not (tmp_path / LOCK_NAME).exists()


def test_stale_locks_are_taken_over(tmp_path):
    p = subprocess.Popen(["sleep", "0"])
    p.wait()  # a pid that is gone
    host = socket.gethostname()
    _write_lock(tmp_path, pid=p.pid, host=host, since="x", proc_start=1, token="old")
    assert not holder_alive(read_lock(tmp_path))
    with RunLock(tmp_path) as lk:
        assert read_lock(tmp_path)["token"] == lk.info["token"] != "old"
    # pid reused by a different process: a live pid whose start time is not the holder's
    _write_lock(tmp_path, pid=os.getpid(), host=host, since="x", proc_start=_proc_start(os.getpid()) + 1, token="o")
    assert not holder_alive(read_lock(tmp_path))
    with RunLock(tmp_path):
        pass
    # unreadable lock (half-written by a writer killed before the atomic link existed)
    (tmp_path / LOCK_NAME).write_text("{")
    with RunLock(tmp_path):
        pass
    assert not (tmp_path / LOCK_NAME).exists()


def test_zombie_holder_is_stale(tmp_path):
    p = subprocess.Popen(["sleep", "30"])
    start = _proc_start(p.pid)
    info = {"pid": p.pid, "host": socket.gethostname(), "proc_start": start}
    assert holder_alive(info)
    os.kill(p.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not holder_alive(info)  # killed, not yet reaped
    p.wait()


def test_other_host_is_never_taken_over(tmp_path):
    _write_lock(tmp_path, pid=1, host="elsewhere.example", since="2026-01-01T00:00:00Z", token="t")
    with pytest.raises(RunLockError) as e:
        RunLock(tmp_path).acquire()
    msg = str(e.value)
    assert "pid 1 on host elsewhere.example since 2026-01-01T00:00:00Z" in msg
    assert f"delete {tmp_path / LOCK_NAME}" in msg and "\n" not in msg
    assert read_lock(tmp_path)["token"] == "t"


def test_readers_ignore_the_lock(tiny_ckpts, tmp_path):
    out = tmp_path / "run"
    run_coevo("run", "--out", str(out), *tiny_run_args(tiny_ckpts))
    assert not (out / LOCK_NAME).exists()  # released at the end
    _write_lock(out, pid=1, host="elsewhere.example", since="x", token="t")  # a live writer elsewhere
    assert run_coevo("report", str(out)).returncode == 0
    assert run_coevo("audit", "--json", str(out)).returncode == 0


def test_second_writer_refused_then_stale_lock_taken_over(tiny_ckpts, tmp_path):
    d = tmp_path / "live"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(coevo_cmd("run", "--out", str(d), *tiny_run_args(tiny_ckpts)), cwd=REPO, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not ((d / LOCK_NAME).exists() and (d / "config.yaml").exists()) and p.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert p.poll() is None, "the holder ended before its lock was seen"
        os.killpg(p.pid, signal.SIGSTOP)  # hold it still: alive, holding the lock, writing nothing
        assert read_lock(d)["pid"] == p.pid
        second = run_coevo("run", "--resume", str(d), "-q", check=False, env={"COLUMNS": "400"})
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in second.stderr
        assert f"in use by pid {p.pid} on host {socket.gethostname()} since " in lines[0]
        fresh = run_coevo("run", "--out", str(d), *tiny_run_args(tiny_ckpts), check=False)
        assert fresh.returncode == 2 and "--resume" in fresh.stderr
    finally:
        os.killpg(p.pid, signal.SIGKILL)  # kill -9 the holder and its verifier pool
        p.wait()
    assert read_lock(d)["pid"] == p.pid  # left behind, stale
    assert not (d / "summary.json").exists()
    run_coevo("run", "--resume", str(d), "-q")
    assert (d / "summary.json").exists()
    assert not (d / LOCK_NAME).exists()


# ---------------------------------------------------------------------- guard rail: a preset's intended backends
def test_intended_backends_validated_and_checked():
    from coevo.config import ConfigError, check_intended_backend, load_config

    assert load_config("paper").intended_backends == ["hf", "openai"]
    assert load_config("smollm2-cpu").intended_backends == ["hf"]
    assert load_config("cpu").intended_backends == ["tiny", "hf", "openai"]
    with pytest.raises(ConfigError, match="intended_backends.0: Input should be 'tiny', 'hf' or 'openai'"):
        load_config("cpu", None, ["intended_backends=[gpu]"])
    with pytest.raises(ConfigError, match="pass --force"):
        check_intended_backend(load_config("paper"))
    check_intended_backend(load_config("paper", None, ["backend.kind=hf"]))
    check_intended_backend(load_config("cpu", None, ["intended_backends=null"]))


def test_paper_preset_refuses_tiny_unless_forced(tiny_ckpts, tmp_path):
    out = tmp_path / "paper"
    p = run_coevo("run", "--preset", "paper", "--out", str(out), check=False, env={"COLUMNS": "400"})
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        "error: preset 'paper' is meant for backend hf or openai, not 'tiny' (intended_backends); set "
        "backend.kind, or pass --force to run it anyway"]
    assert not out.exists()
    shrink = ["--set", "rzero.challenger_prompts=4", "--set", "rzero.n_candidates=8", "--set", "rzero.solver_prompts=4",
              "--set", "rzero.rounds=1", "--set", "rzero.challenger_steps=1", "--set", "rzero.solver_steps=1"]
    run_coevo("run", "--preset", "paper", "--force", "--out", str(out), *tiny_run_args(tiny_ckpts), *shrink)
    assert json.loads((out / "summary.json").read_text())["preset"] == "paper"
    run_coevo("run", "--resume", str(out), "-q")  # a run once forced resumes without --force
