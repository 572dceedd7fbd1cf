"""What a new user types first (issue "Fail loud, stop cleanly, show the knobs", item 6, in part): ``--version``,
``-h`` on every level, and a "did you mean" for an unknown config key; each through the real CLI in a subprocess."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def coevo(*args):
    return subprocess.run([sys.executable, "-m", "coevo.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def test_version():
    from coevo import __version__

    p = coevo("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"coevo {__version__}"


@pytest.mark.parametrize("args", [("-h",), ("run", "-h"), ("experiment", "-h"), ("experiment", "rzero-seeds", "-h"),
                                  ("bench", "-h")])
def test_dash_h_is_help(args):
    p = coevo(*args)
    assert p.returncode == 0 and "Usage: " in p.stdout and " ".join(args[:-1]) in p.stdout, (args, p.stderr[-500:])


@pytest.mark.parametrize("key,near", [("rzero.round=1", "rounds"), ("loss.aggregaton=dr_grpo", "aggregation"),
                                      ("rzro.rounds=1", "rzero")])
def test_unknown_key_did_you_mean(tmp_path, key, near):
    out = tmp_path / "run"
    p = coevo("run", "--set", key, "--out", str(out))
    assert p.returncode == 2 and f"unknown field (did you mean '{near}'?)" in p.stderr, p.stderr[-500:]
    assert len(p.stderr.strip().splitlines()) == 1 and not out.exists()
