"""The COEVO_REQUIRE_ALL switch (tests/conftest.py: need_module, skip_or_fail): a tiny test file that needs a
module nobody has is skipped without the switch and fails with it, at module level and inside a test; a
test's own COEVO_REQUIRE_<X> does the same; a peer framework's test (its marker) fails only where the run
selects that marker. Each case is a pytest run in a subprocess, in a folder with a copy of tests/conftest.py."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MISSING = "coevo_no_such_module_4c1e"
FILES = {
    "test_module_level.py": f"from conftest import need_module\n\nneed_module({MISSING!r})\n\n\n"
                            "def test_x():\n    pass\n",
    "test_in_a_test.py": "from conftest import need_module, skip_or_fail\n\n\n"
                         f"def test_module():\n    need_module({MISSING!r})\n\n\n"
                         "def test_own_switch():\n    skip_or_fail('no widget here', 'COEVO_REQUIRE_WIDGET')\n",
    "test_peer.py": "import pytest\n\nfrom conftest import need_module\n\npytestmark = pytest.mark.zzpeer\n"
                    f"need_module({MISSING!r}, 'its own venv', 'COEVO_REQUIRE_ZZPEER', marker='zzpeer')\n\n\n"
                    "def test_x():\n    pass\n",
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("require_all")
    shutil.copy(Path(__file__).with_name("conftest.py"), d / "conftest.py")
    for name, text in FILES.items():
        (d / name).write_text(text)
    return d


def pytest_run(folder: Path, name: str, *args: str, **env: str) -> tuple[int, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("COEVO_REQUIRE_") and k != "PYTEST_ADDOPTS"}
    e.update(env)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "-W", "ignore::pytest.PytestUnknownMarkWarning", name, *args],
                       cwd=folder, env=e, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def test_module_level_skip_becomes_a_failure(folder):
    rc, out = pytest_run(folder, "test_module_level.py")  # 5: a module skipped whole collects no test
    assert rc == 5 and "1 skipped" in out and f"{MISSING} is not installed" in out, out
    rc, out = pytest_run(folder, "test_module_level.py", COEVO_REQUIRE_ALL="1")
    assert rc == 2 and "1 error" in out and f"COEVO_REQUIRE_ALL=1 but {MISSING} is not installed" in out, out
    rc, out = pytest_run(folder, "test_module_level.py", COEVO_REQUIRE_ALL="0")
    assert rc == 5 and "1 skipped" in out, out


def test_in_a_test_and_a_tests_own_switch(folder):
    rc, out = pytest_run(folder, "test_in_a_test.py")
    assert rc == 0 and "2 skipped" in out, out
    rc, out = pytest_run(folder, "test_in_a_test.py", COEVO_REQUIRE_ALL="1")
    assert rc == 1 and "2 failed" in out and "COEVO_REQUIRE_ALL=1 but no widget here" in out, out
    rc, out = pytest_run(folder, "test_in_a_test.py", COEVO_REQUIRE_WIDGET="1")  # the old per-test variables
    assert rc == 1 and "1 failed, 1 skipped" in out and "COEVO_REQUIRE_WIDGET=1 but no widget here" in out, out


def test_peer_framework_fails_only_where_its_marker_is_selected(folder):
    for args in ([], ["-m", "not slow"], ["-m", "not zzpeer"]):  # `make test`'s -m leaves the marker unselected
        rc, out = pytest_run(folder, "test_peer.py", *args, COEVO_REQUIRE_ALL="1")
        assert rc in (0, 5) and "error" not in out and "failed" not in out, (args, out)
    rc, out = pytest_run(folder, "test_peer.py", "-m", "zzpeer", COEVO_REQUIRE_ALL="1")  # its stage: -m zzpeer
    assert rc != 0 and f"COEVO_REQUIRE_ALL=1 but {MISSING} is not installed" in out, out
    rc, out = pytest_run(folder, "test_peer.py", COEVO_REQUIRE_ZZPEER="1")
    assert rc != 0 and "COEVO_REQUIRE_ZZPEER=1 but" in out, out
