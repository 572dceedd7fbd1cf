"""Escape corpus for run_sandboxed: every program ends as a recorded failure or
abstention, and the host is unaffected (sentinels untouched, parent alive, no
listener reached).  Network tests touch only a listener this test starts on
127.0.0.1 and the documentation address 192.0.2.1."""
import os
import socket
import threading
import time

import pytest

from conftest import skip_or_fail
from coevo.verify import SandboxPyVerifier, run_sandboxed, sandbox_isolation

NS = sandbox_isolation() == "namespaces"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    d = tmp_path_factory.mktemp("host")
    sentinel = d / "sentinel.txt"
    sentinel.write_text("untouched")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    srv.settimeout(0.2)
    hits = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                c, _ = srv.accept()
                hits.append(1)
                c.close()
            except OSError:
                pass
    th = threading.Thread(target=accept, daemon=True)
    th.start()
    os.environ["COEVO_TEST_SECRET"] = "s3cret-value"
    yield {"dir": d, "sentinel": sentinel, "port": srv.getsockname()[1], "hits": hits}
    stop.set()
    th.join(2)
    srv.close()
    os.environ.pop("COEVO_TEST_SECRET", None)


def programs(h):
    s, port, ppid = str(h["sentinel"]), h["port"], os.getpid()
    return {
        "infinite_loop": "while True: pass",
        "sleep_forever": "import time; time.sleep(1000)",
        "fork_bomb": "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass",
        "memory_bomb": "x = []\nwhile True: x.append(bytearray(50 * 1024 * 1024))",
        "write_sentinel": f"open({s!r}, 'w').write('pwned')",
        "delete_sentinel": f"import os; os.remove({s!r})",
        "write_outside_dir": f"open({str(h['dir'] / 'new.txt')!r}, 'w').write('x')",
        "read_env": "import os, sys\nv = os.environ.get('COEVO_TEST_SECRET')\nsys.exit(3 if v else 4)",
        "read_parent_environ": f"import sys\ndata = open('/proc/{ppid}/environ','rb').read()\nsys.exit(3 if b's3cret' in data else 4)",
        "connect_host_listener": f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\nprint('connected')",
        "connect_outside": "import socket\ns = socket.create_connection(('192.0.2.1', 80), timeout=1)\nprint('connected')",
        "kill_parent_pid": f"import os, signal\nos.kill({ppid}, signal.SIGKILL)",
        "kill_getppid": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nraise SystemExit(5)",
        "kill_all": "import os, signal\nos.kill(-1, signal.SIGKILL)",
        "huge_stdout": "import sys\nwhile True: sys.stdout.write('x' * 65536)",
        "huge_stderr": "import sys\nwhile True: sys.stderr.write('y' * 65536)",
        "huge_file": "f = open('big.bin', 'wb')\nwhile True: f.write(b'0' * (1 << 20))",
        "daemonised_grandchild": (
            "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        time.sleep(1.5)\n        open({s!r}, 'w').write('late')\n        os._exit(0)\n    os._exit(0)\n"
            "raise SystemExit(6)"),
        "subprocess_shell": f"import subprocess, sys\nr = subprocess.run(['sh', '-c', 'echo x > {s}'])\nsys.exit(7)",
        "recursion": "def f(n): return f(n + 1)\nf(0)",
        "list_host_processes": "import os, sys\npids = [p for p in os.listdir('/proc') if p.isdigit()]\nsys.exit(8 if len(pids) > 5 else 9)",
        "open_many_files": "fs = [open('/dev/null') for _ in range(100000)]",
        "syntax_error": "def (:",
    }


EXPECT_FAIL = {"ok"}  # no program in the corpus may end "ok" with its goal reached


def test_escape_corpus(host):
    if not NS:  # CI (root, COEVO_REQUIRE_ALL=1) has namespaces: there this skip is a failure
        skip_or_fail("namespaces unavailable: the kill(-1)/host-process checks are only safe in namespaces mode")
    progs = programs(host)
    assert len(progs) >= 20
    results = {}
    for name, code in progs.items():
        # the memory bomb gets 30 s: on a loaded machine 2 s did not reach 512 MB (it ended "timeout", CI 2026-12-05);
        # the limit under test is the memory limit, which must stop it long before
        r = run_sandboxed(code, timeout_s=30.0 if name == "memory_bomb" else 2.0, memory_mb=512)
        results[name] = r
        assert r.reason in ("exit-nonzero", "timeout", "resource-limit", "output-limit", "ok"), (name, r)
        if r.reason == "timeout":  # ended by its time limit, never before it (the run's own record)
            assert r.elapsed_s >= 2.0 and r.exit_status is None, (name, r)
    # what each program must have ended as
    assert results["infinite_loop"].reason in ("timeout", "resource-limit")
    assert results["sleep_forever"].reason == "timeout"
    assert results["fork_bomb"].reason in ("timeout", "resource-limit", "exit-nonzero")
    assert results["memory_bomb"].reason == "resource-limit"
    for n in ("write_sentinel", "delete_sentinel", "write_outside_dir", "connect_host_listener",
              "connect_outside", "kill_parent_pid", "recursion", "syntax_error", "open_many_files"):
        assert results[n].reason in ("exit-nonzero", "resource-limit"), (n, results[n])
    assert results["read_env"].exit_status == 4
    assert results["read_parent_environ"].exit_status == 1 or results["read_parent_environ"].exit_status == 4
    assert results["kill_getppid"].exit_status in (5, -9, 1)
    assert results["huge_stdout"].reason == "output-limit" and len(results["huge_stdout"].stdout) <= 1 << 20
    assert results["huge_stderr"].reason == "output-limit"
    assert results["huge_file"].reason in ("resource-limit", "exit-nonzero")
    assert results["daemonised_grandchild"].exit_status == 6
    assert results["subprocess_shell"].exit_status == 7
    assert results["list_host_processes"].exit_status == 9
    # the host is unaffected
    time.sleep(2.0)  # give a surviving daemon time to misbehave
    assert host["sentinel"].read_text() == "untouched"
    assert not (host["dir"] / "new.txt").exists()
    assert host["hits"] == []
    assert os.getppid() > 1  # we are alive (and so is our parent)


def test_sandbox_basic_io_and_stdin():
    r = run_sandboxed("import sys\nprint(sys.stdin.read().upper())\nprint('err', file=sys.stderr)", 5, stdin="abc")
    assert r.ok and r.exit_status == 0 and r.stdout.strip() == "ABC" and "err" in r.stderr
    r = run_sandboxed("import sys; sys.exit(2)", 5)
    assert r.reason == "exit-nonzero" and r.exit_status == 2


def test_sandbox_can_use_sympy():
    r = run_sandboxed("import sympy\nprint(sympy.factorint(2**32 + 1))", 20)
    assert r.ok, r
    assert "641" in r.stdout


def test_fallback_mode_basics(host):
    s = str(host["sentinel"])
    r = run_sandboxed("print('hi')", 10, mode="fallback")
    assert r.ok and r.stdout.strip() == "hi" and r.isolation == "fallback"
    r = run_sandboxed("while True: pass", 1.0, mode="fallback")
    assert r.reason in ("timeout", "resource-limit")
    r = run_sandboxed(f"open({s!r}, 'w').write('x')", 10, mode="fallback")
    assert r.reason == "exit-nonzero"
    r = run_sandboxed(f"import socket; socket.create_connection(('127.0.0.1', {host['port']}), timeout=1)", 10,
                      mode="fallback")
    assert r.reason == "exit-nonzero"
    r = run_sandboxed("import os, sys; sys.exit(3 if os.environ.get('COEVO_TEST_SECRET') else 4)", 10, mode="fallback")
    assert r.exit_status == 4
    assert host["sentinel"].read_text() == "untouched" and host["hits"] == []


def test_sandbox_py_verifier_check_and_recompute():
    v = SandboxPyVerifier(code="print('PASS' if int(ANSWER) == 6 * 7 else 'FAIL')", timeout_s=10)
    assert v.verify("42").value == 1
    assert v.verify("41").value == 0
    assert v.verify("forty").value is None and v.verify("forty").reason == "check-error"
    loop = SandboxPyVerifier(code="while True: pass", timeout_s=1.0)
    t = loop.verify("1")
    assert t.value is None and t.reason in ("timeout", "resource-limit") and t.kind == "sandbox_py"
    rec = SandboxPyVerifier(code="print(sum(range(101)))", mode="recompute", timeout_s=10)
    assert rec.verify("5050").value == 1 and rec.verify("5051").value == 0
