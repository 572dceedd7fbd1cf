"""OpenRLHF 0.11.2's own reward-function loader and calling path (PyPI, in .venv-openrlhf, built by
.ci/openrlhf.sh) on examples/openrlhf_reward.py: ``SingleTurnAgentExecutor`` loads the file as
``--reward.remote_url`` does and runs ``execute`` for a batch of samples at once (examples/openrlhf_check.py,
the commands of docs/integrations.md's OpenRLHF section), then ``coevo import parts`` and ``coevo audit`` read
the ledger. Skipped without the venv ($COEVO_OPENRLHF_VENV, default .venv-openrlhf);
``COEVO_REQUIRE_OPENRLHF=1`` (set by .ci/openrlhf.sh) turns the skip into a failure."""
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
VENV = Path(os.environ.get("COEVO_OPENRLHF_VENV") or REPO / ".venv-openrlhf")
PY = VENV / "bin" / "python"
pytestmark = pytest.mark.openrlhf

if not PY.exists():  # a failure under COEVO_REQUIRE_OPENRLHF=1, or COEVO_REQUIRE_ALL=1 with -m openrlhf (conftest)
    skip_or_fail(f"no {PY} (bash .ci/openrlhf.sh --build)", "COEVO_REQUIRE_OPENRLHF", marker="openrlhf")

# the Challenger's batch: 6 responses of one engine's step; the stand-in Solver (tests/openrlhf_stub_solver.py)
# answers "Split" with p_hat 0.5, "Easy" 1.0, "Mostly" 0.7, the riddle with nothing (abstains)
SPLIT = "<question>Split seven apples between two children, how many ways?</question>"
CHALLENGES = [SPLIT, "<question>Easy sum: compute 2+2 now?</question>",
              "<question>Mostly harmless integer: 1+2 equals?</question>",
              "<question>Unknown riddle about a sphinx?</question>", "no tags at all", SPLIT]


def docs_commands() -> list[list[str]]:
    """The command lines of the OpenRLHF section's first bash block (the build line left out)."""
    text = (REPO / "docs" / "integrations.md").read_text()
    sect = text.split("## OpenRLHF", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", sect, re.S).group(1)
    lines = [ln.split("#")[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln) for ln in lines if ln and not ln.startswith("bash ")]


def run_check(cmd: list[str], extra_env: dict, swap: dict) -> list[dict]:
    env_kv = [x for x in cmd if re.match(r"^[A-Z_]+=", x)]
    argv = [swap.get(x, x) for x in cmd[len(env_kv):]]
    assert argv[:2] == [".venv-openrlhf/bin/python", "examples/openrlhf_check.py"], argv
    env = dict(os.environ, OMP_NUM_THREADS="1", **dict(x.split("=", 1) for x in env_kv))
    env.update({k: swap.get(v, v) for k, v in env.items() if k == "COEVO_LEDGER"}, **extra_env)
    p = subprocess.run([str(PY)] + argv[1:], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    # OpenRLHF's own loader logged it (its logger writes to stdout)
    assert "Loading custom `reward_func(queries, prompts, labels)` from examples/openrlhf_reward.py" in p.stdout
    return json.loads(p.stdout.strip().splitlines()[-1])


def coevo(*args: str) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "coevo", *args], cwd=REPO, capture_output=True, text=True,
                       env=dict(os.environ, COLUMNS="200"), timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def query(run: Path, sql: str) -> list:
    from coevo.ledger.store import Ledger

    led = Ledger(run / "ledger.duckdb", read_only=True)
    try:
        return led.query(sql)
    finally:
        led.close()


def test_docs_example_solver_through_openrlhf_loader_then_audit(tmp_path):
    check, imp, audit = docs_commands()
    assert imp[:3] == ["coevo", "import", "parts"] and audit[:2] == ["coevo", "audit"]
    swap = {"runs/openrlhf-ledger": str(tmp_path / "led"), "runs/openrlhf-run": str(tmp_path / "run")}
    out = run_check(check, {}, swap)
    assert {o["loaded"] for o in out} == {"SolverRewardFunc"}
    # Q1 (label 5): \boxed{5} right, \boxed{6} wrong, no answer wrong; Q2 has no label: the verifier abstains,
    # and OpenRLHF needs a number: COEVO_ABSTAIN's 0.0, the row keeps the abstention
    assert [o["reward"] for o in out] == [[1.0], [0.0], [0.0], [0.0]]
    assert [o["scores"] for o in out] == [[1.0], [0.0], [0.0], [0.0]]
    assert [o["extra_logs"] for o in out] == [{"coevo_abstained": [x]} for x in (0.0, 0.0, 0.0, 1.0)]
    coevo(*[swap.get(x, x) for x in imp[1:]])
    a = coevo(*[swap.get(x, x) for x in audit[1:]]).stdout
    # one step (COEVO_BATCH_SIZE=4: the 4 calls are step 0): Q1's group 1/0/0 bears; Q2's group abstained
    assert "bearing rate per step: 0: 100.0% (n=1)" in a, a
    assert re.search(r"abstention share phi\s+│\s+50\.0%", a), a
    run = tmp_path / "run"
    assert query(run, "SELECT DISTINCT source, prompt_version, json_extract_string(meta_json, '$.framework_version') "
                      "AS v, json_extract_string(meta_json, '$.step_from') AS src, "
                      "json_extract_string(meta_json, '$.role') AS role FROM tasks") == \
        [{"source": "openrlhf", "prompt_version": "openrlhf 0.11.2", "v": "0.11.2", "src": "counter", "role": "solver"}]
    # the ledger keeps the abstention NULL (OpenRLHF got 0.0, meta.abstain_value)
    assert query(run, "SELECT step, reward, json_extract_string(components_json, '$.abstained') AS ab FROM rewards "
                      "ORDER BY reward DESC NULLS LAST") == \
        [{"step": 0, "reward": 1.0, "ab": "false"}] + [{"step": 0, "reward": 0.0, "ab": "false"}] * 2 + \
        [{"step": 0, "reward": None, "ab": "true"}]
    assert query(run, "SELECT count(*) AS n FROM verdicts WHERE value IS NULL") == [{"n": 1}]


def test_challenger_batch_penalty_through_openrlhf_calling_path(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps([{"prompt": "Write one math question.\n", "label": "",
                                                  "response": r} for r in CHALLENGES]))
    cmd = [".venv-openrlhf/bin/python", "examples/openrlhf_check.py", "examples/openrlhf_reward.py",
           str(tmp_path / "c.json")]
    env = {"COEVO_ROLE": "challenger", "COEVO_SOLVER_FN": "openrlhf_stub_solver:solve", "COEVO_BATCH_SIZE": "6",
           "COEVO_BATCH_WAIT_S": "120", "COEVO_LEDGER": str(tmp_path / "led"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    out = run_check(cmd, env, {})
    assert {o["loaded"] for o in out} == {"ChallengerRewardFunc"}
    logs = [{k: v[0] for k, v in o["extra_logs"].items()} for o in out]  # one sample per call
    # 6 per-sample calls joined one batch: B = 6; the two Split questions are one BLEU cluster (r_rep 2/6), the
    # other valid questions singletons (1/6), the untagged text none; r = max(0, (1 - 2|p_hat - 0.5|) - r_rep)
    assert [x["coevo_batch_size"] for x in logs] == [6.0] * 6
    assert [x["coevo_r_rep"] for x in logs] == pytest.approx([2 / 6, 1 / 6, 1 / 6, 1 / 6, 0.0, 2 / 6])
    assert [x["coevo_p_hat"] for x in logs] == pytest.approx([0.5, 1.0, 0.7, 0.0, 0.0, 0.5])
    assert [x["coevo_format_ok"] for x in logs] == [1.0] * 4 + [0.0, 1.0]
    assert [x["coevo_abstained"] for x in logs] == [0.0] * 3 + [1.0, 0.0, 0.0]
    assert [o["reward"][0] for o in out] == pytest.approx([1 - 2 / 6, 0.0, 0.6 - 1 / 6, 0.0, 0.0, 1 - 2 / 6])
    coevo("import", "parts", str(tmp_path / "led"), "--out", str(tmp_path / "run"))
    rows = query(tmp_path / "run", "SELECT step, role, reward, json_extract_string(components_json, '$.framework') "
                                   "AS fw FROM rewards ORDER BY task_id")
    assert len(rows) == 6 and {(r["step"], r["role"], r["fw"]) for r in rows} == {(0, "challenger", "openrlhf")}
    # the riddle's reward is NULL in the ledger (abstained; OpenRLHF got 0.0)
    assert sorted(round(r["reward"], 6) for r in rows if r["reward"] is not None) == \
        [0.0, 0.0, round(0.6 - 1 / 6, 6)] + [round(2 / 3, 6)] * 2
    assert sum(r["reward"] is None for r in rows) == 1
    assert query(tmp_path / "run", "SELECT DISTINCT json_extract_string(meta_json, '$.batch_size') AS b, "
                                   "json_extract_string(meta_json, '$.step_from') AS s FROM tasks") == \
        [{"b": "6", "s": "counter"}]
