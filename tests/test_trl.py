"""TRL 1.16.0's own GRPOTrainer (PyPI, in .venv-trl, built by .ci/trl.sh) trains 2 steps with coevo's Solver
reward, as docs/integrations.md's TRL commands say (the commands are read from the document), then
``coevo audit`` prints the per-step bearing rates and the abstention share of the ledger it wrote.
Skipped without .venv-trl; ``COEVO_REQUIRE_TRL=1`` (set by .ci/trl.sh) turns the skip into a failure."""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[1]
TRL_PY = REPO / ".venv-trl" / "bin" / "python"
pytestmark = pytest.mark.trl

if not TRL_PY.exists():  # a failure under COEVO_REQUIRE_TRL=1, or COEVO_REQUIRE_ALL=1 with -m trl (conftest)
    skip_or_fail(f"no .venv-trl: {TRL_PY} is missing (bash .ci/trl.sh --build)", "COEVO_REQUIRE_TRL", marker="trl")


def docs_commands() -> list[list[str]]:
    """The command lines of the TRL section's first bash block that run the example and the audit."""
    text = (REPO / "docs" / "integrations.md").read_text()
    sect = text.split("## TRL", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", sect, re.S).group(1)
    lines = [ln.split("#")[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln) for ln in lines if ln and not ln.startswith("bash ")]


def test_docs_example_trains_two_steps_then_audit(tmp_path):
    run_cmd, audit_cmd = docs_commands()
    assert run_cmd[:2] == [".venv-trl/bin/python", "examples/trl_grpo.py"] and audit_cmd[:2] == ["coevo", "audit"]
    swap = {"runs/trl-ledger": str(tmp_path / "led"), "runs/trl-run": str(tmp_path / "run")}
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    p = subprocess.run([str(REPO / run_cmd[0])] + [swap.get(x, x) for x in run_cmd[1:]], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "trained 2 steps" in p.stdout
    a = subprocess.run([sys.executable, "-m", "coevo"] + [swap.get(x, x) for x in audit_cmd[1:]], cwd=REPO,
                       env=dict(env, COLUMNS="200"), capture_output=True, text=True, timeout=300)
    assert a.returncode == 0, a.stderr
    assert re.search(r"bearing rate per step: 0: [\d.]+% \(n=\d\), 1: [\d.]+% \(n=\d\)", a.stdout), a.stdout
    assert "abstention share phi" in a.stdout and "25.0%" in a.stdout
    j = json.loads(subprocess.run([sys.executable, "-m", "coevo", "audit", str(tmp_path / "run"), "--json"], cwd=REPO,
                                  env=env, capture_output=True, text=True, timeout=300).stdout)
    ins = j["runs"][0]["instruments"]
    # 4 prompts x 4 completions over 2 steps; "Name any colour." has no reference: its group of 4 abstains
    assert ins["abstention_share"]["value"] == 0.25 and ins["abstention_share"]["n"] == 4
    assert [s["step"] for s in ins["bearing_rate"]["extra"]["per_step"]] == [0, 1]
    assert sum(s["n"] for s in ins["bearing_rate"]["extra"]["per_step"]) == 3
    from coevo.ledger.store import Ledger

    led = Ledger(tmp_path / "run" / "ledger.duckdb", read_only=True)
    t = led.query("SELECT DISTINCT source, prompt_version, json_extract_string(meta_json, '$.framework_version') AS v, "
                  "json_extract_string(meta_json, '$.step_from') AS src FROM tasks")
    assert t == [{"source": "trl", "prompt_version": "trl 1.16.0", "v": "1.16.0", "src": "trainer_state.global_step"}]
    assert led.query("SELECT step, count(*) AS n, count(reward) AS scored FROM rewards GROUP BY step ORDER BY step") \
        in ([{"step": 0, "n": 8, "scored": 8}, {"step": 1, "n": 8, "scored": 4}],
            [{"step": 0, "n": 8, "scored": 4}, {"step": 1, "n": 8, "scored": 8}])
    led.close()
