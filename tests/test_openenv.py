"""openenv-core 0.3.0's own client (PyPI, in .venv-openenv, built by .ci/openenv.sh) plays episodes of
`coevo serve-env --world math` and asks its NeMo Gym /verify, as docs/integrations.md's OpenEnv commands say
(the commands are read from the document); no oracle answer reaches the client; the ledger it wrote imports
and audits. Skipped without .venv-openenv; ``COEVO_REQUIRE_OPENENV=1`` (set by .ci/openenv.sh) turns the skip
into a failure."""
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[1]
OE_PY = REPO / ".venv-openenv" / "bin" / "python"
pytestmark = pytest.mark.openenv

if not OE_PY.exists():  # a failure under COEVO_REQUIRE_OPENENV=1, or COEVO_REQUIRE_ALL=1 with -m openenv (conftest)
    skip_or_fail(f"no {OE_PY} (bash .ci/openenv.sh --build)", "COEVO_REQUIRE_OPENENV", marker="openenv")

ORACLE = "391"  # sample-01: "What is $17 \times 23$?"
ANSWER_KEYS = {"answer", "reference", "oracle", "oracle_answer", "expected_answer", "solution", "ground_truth"}


def docs_commands() -> list[list[str]]:
    """The command lines of the OpenEnv section's first bash block (serve, client, stop, import, audit)."""
    text = (REPO / "docs" / "integrations.md").read_text()
    sect = text.split("## OpenEnv", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", sect, re.S).group(1)
    lines = [ln.split(" #")[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln) for ln in lines if ln and not ln.startswith("bash ")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keys_of(x) -> set:
    if isinstance(x, dict):
        return set(x) | set().union(*(keys_of(v) for v in x.values()))
    if isinstance(x, list):
        return set().union(*(keys_of(v) for v in x)) if x else set()
    return set()


def test_docs_example_episodes_verify_ledger_audit(tmp_path):
    serve, client, stop, imp, audit = docs_commands()
    assert serve[:2] == [".venv-openenv/bin/coevo", "serve-env"] and serve[-1] == "&" and stop == ["kill", "%1"]
    assert client[:2] == [".venv-openenv/bin/python", "examples/openenv_client.py"]
    assert imp[:3] == ["coevo", "import", "parts"] and audit[:2] == ["coevo", "audit"]
    port = str(free_port())
    swap = {"runs/openenv-ledger": str(tmp_path / "led"), "runs/openenv-run": str(tmp_path / "run"), "8011": port,
            "http://127.0.0.1:8011": f"http://127.0.0.1:{port}"}
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO), COLUMNS="200")
    srv = subprocess.Popen([str(REPO / serve[0])] + [swap.get(x, x) for x in serve[1:-1]], cwd=REPO, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(srv.stdout.readline())
        assert first["url"] == f"http://127.0.0.1:{port}" and first["tasks"] == 20 and first["verifier"] == "math"
        p = subprocess.run([str(REPO / client[0])] + [swap.get(x, x) for x in client[1:]], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
    finally:
        srv.send_signal(signal.SIGTERM)  # `kill %1`: the server commits its ledger part and stops
        srv.wait(timeout=60)
    out = json.loads(p.stdout.splitlines()[0])
    eps = out["episodes"]
    # hand-computed: \boxed{391} right 1.0; \boxed{390} wrong 0.0; the power tower hangs math-verify, the pool
    # ends it at --timeout-s: abstained, reward None; "x = 5" has no \boxed{}: 0.0 (no-answer)
    assert [(e["step"]["reward"], e["step"]["done"], e["step"]["observation"]["verdict"],
             e["step"]["observation"]["reason"]) for e in eps] == \
        [(1.0, True, "correct", ""), (0.0, True, "wrong", ""), (None, True, "abstained", "timeout"),
         (0.0, True, "wrong", "no-answer")]
    assert [e["reset"]["done"] for e in eps] == [False] * 4 and eps[0]["reset"]["reward"] is None
    assert eps[0]["reset"]["observation"]["question"] == "What is $17 \\times 23$?"
    assert "\\boxed{}" in eps[0]["reset"]["observation"]["prompt"]
    assert [(e["state"]["step_count"], e["state"]["done"], e["end"]["step_count"], e["end"]["done"]) for e in eps] \
        == [(0, False, 1, True)] * 4
    # no oracle answer reaches the client: no answer-like key anywhere, and "391" nowhere but the agent's own
    # correct answer echoed back (extracted_answer of episode 0)
    seen = [e[k] for e in eps for k in ("reset", "state", "end")] + [e["step"] for e in eps[1:]]
    assert not keys_of(seen) & ANSWER_KEYS
    assert all(ORACLE not in json.dumps(x) for x in seen)
    assert eps[0]["step"]["observation"]["extracted_answer"] == ORACLE
    # NeMo Gym's /verify: the request echoed + reward; the abstention masked with its reason
    v_ok, v_abs = out["verify"]
    assert (v_ok["reward"], v_ok["mask_sample"], v_ok["failure_kind"], v_ok["expected_answer"]) == (1.0, False, None, ORACLE)
    assert (v_abs["reward"], v_abs["mask_sample"], v_abs["failure_kind"], v_abs["failure_reason"]) == \
        (0.0, True, "coevo:abstained", "timeout")
    assert v_abs["coevo_verdict"]["value"] is None and "responses_create_params" in v_abs and "response" in v_abs
    ledger_and_audit(tmp_path, imp, audit, swap, env)


def ledger_and_audit(tmp_path, imp, audit, swap, env):
    i = subprocess.run([sys.executable, "-m", "coevo"] + [swap.get(x, x) for x in imp[1:]], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert i.returncode == 0, i.stderr
    a = subprocess.run([sys.executable, "-m", "coevo"] + [swap.get(x, x) for x in audit[1:]], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert a.returncode == 0, a.stderr
    assert "bearing rate per step: 0: 33.3% (n=3)" in a.stdout, a.stdout
    j = json.loads(subprocess.run([sys.executable, "-m", "coevo", "audit", str(tmp_path / "run"), "--json"], cwd=REPO,
                                  env=env, capture_output=True, text=True, timeout=300).stdout)
    ins = j["runs"][0]["instruments"]
    # 3 answer groups at step 0: sample-01 (1, 0, abstained), sample-02 (0), the /verify row (1, abstained):
    # bearing 1/3; abstention share = mean of the groups' shares (1/3 + 0 + 1/2) / 3 = 5/18
    assert ins["bearing_rate"]["value"] == pytest.approx(1 / 3) and ins["bearing_rate"]["n"] == 3
    assert ins["abstention_share"]["value"] == pytest.approx(5 / 18) and ins["abstention_share"]["n"] == 3
    from coevo.ledger.store import Ledger

    led = Ledger(tmp_path / "run" / "ledger.duckdb", read_only=True)
    t = led.query("SELECT task_id, source, prompt_version, oracle_answer, json_extract_string(meta_json, '$.role') AS role "
                  "FROM tasks ORDER BY task_id")
    assert [(r["task_id"], r["source"], r["oracle_answer"], r["role"]) for r in t] == \
        [("nemo-row-1", "nemo-gym", "391", "solver"), ("sample-01", "openenv", "391", "solver"),
         ("sample-02", "openenv", "5", "solver")]
    assert t[1]["prompt_version"] == "openenv 0.3.0"
    r = led.query("SELECT r.task_id, r.reward, v.value, v.reason FROM rewards r JOIN verdicts v ON v.rollout_id = r.item_id "
                  "ORDER BY r.task_id, r.reward NULLS LAST")
    assert [(x["task_id"], x["reward"], x["value"], x["reason"]) for x in r] == \
        [("nemo-row-1", 1.0, 1, ""), ("nemo-row-1", None, None, "timeout"), ("sample-01", 0.0, 0, ""),
         ("sample-01", 1.0, 1, ""), ("sample-01", None, None, "timeout"), ("sample-02", 0.0, 0, "no-answer")]
    led.close()


@pytest.mark.parametrize("args, line", [
    (["--world", "facts", "--tasks", "x.jsonl"], "error: --tasks is for --world math only"),
    (["--tasks", "/nonexistent.jsonl"], "error: tasks file not found: /nonexistent.jsonl"),
    (["--timeout-s", "0"], "error: --timeout-s must be > 0, got 0.0"),
])
def test_serve_env_bad_input_is_one_line(args, line):
    p = subprocess.run([str(REPO / ".venv-openenv" / "bin" / "coevo"), "serve-env", "--port", "0", "--max-seconds", "1",
                        *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stderr.strip(), p.stdout) == (2, line, "")


def test_serve_env_port_taken_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        p = subprocess.run([str(REPO / ".venv-openenv" / "bin" / "coevo"), "serve-env", "--port", str(s.getsockname()[1]),
                            "--max-seconds", "1"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr
