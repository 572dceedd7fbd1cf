"""verifiers 0.4.0's own evaluation loop (``vf-eval``'s main, PyPI, in .venv-verifiers, built by .ci/verifiers.sh)
plays coevo's math and facts worlds (``coevo.integrations.verifiers``) against a stub OpenAI-compatible server
on 127.0.0.1 that this test starts, with scripted answers: right, wrong, and one the math verifier abstains on
(a tower of powers that runs past the pool's timeout). The commands are read from docs/integrations.md's
"verifiers (prime-rl)" section; then ``coevo import parts`` and ``coevo audit`` read the ledger.
Skipped without .venv-verifiers; ``COEVO_REQUIRE_VERIFIERS=1`` (set by .ci/verifiers.sh) turns the skip
into a failure."""
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import skip_or_fail

REPO = Path(__file__).resolve().parents[1]
VF_PY = REPO / ".venv-verifiers" / "bin" / "python"
pytestmark = pytest.mark.verifiers

if not VF_PY.exists():  # a failure under COEVO_REQUIRE_VERIFIERS=1, or COEVO_REQUIRE_ALL=1 with -m verifiers (conftest)
    skip_or_fail(f"no {VF_PY} (bash .ci/verifiers.sh --build)", "COEVO_REQUIRE_VERIFIERS", marker="verifiers")

# the sample math set's first 4 tasks (coevo/data/eval_sample_math.jsonl): 391, 5, 55, \frac{2}{3}
MATH_SCRIPT = {
    "17 \\times 23": "17 * 23 = 391, so the answer is \\boxed{391}.",  # right
    "3x + 7 = 22": "\\boxed{9^{9^{9^{9}}}}",  # the verifier runs past its timeout: abstains
    "first 10 positive": "1 + ... + 10 = \\boxed{54}",  # wrong
    "lowest terms": "\\boxed{\\frac{2}{3}}",  # right
}
# the facts world's first eval task (seed 0, 1 hop): 'e05r1 x' -> e30
FACTS_SCRIPT = {"<solve>e05r1 x": "<answer>e30</answer>"}  # the second task gets "I do not know." (no answer: 0)


class StubServer:
    """``POST /v1/chat/completions`` (streamed or not) answering each request with the script's reply for the
    first key found in its user messages ("I do not know." otherwise); the requests are kept."""

    def __init__(self, script: dict) -> None:
        self.script, self.requests = script, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                self.reply(stub.answer(body), body)

            def reply(self, text: str, body: dict) -> None:
                base = {"id": f"stub-{len(stub.requests)}", "created": int(time.time()), "model": body.get("model")}
                if not body.get("stream"):
                    out = json.dumps(dict(base, object="chat.completion", usage=_USAGE, choices=[
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]))
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out.encode())))
                    self.end_headers()
                    self.wfile.write(out.encode())
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for ch in ({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                         "finish_reason": None}]},
                           {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                           {"choices": [], "usage": _USAGE}):
                    chunk = json.dumps(dict(base, object="chat.completion.chunk", **ch))
                    self.wfile.write(f"data: {chunk}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, body: dict) -> str:
        user = " ".join(_text(m.get("content")) for m in body["messages"] if m.get("role") == "user")
        return next((v for k, v in self.script.items() if k in user), "I do not know.")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


_USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}


def _text(c) -> str:
    return c if isinstance(c, str) else " ".join(p.get("text", "") for p in (c or []) if isinstance(p, dict))


def docs_commands() -> list[list[str]]:
    """The command lines of the section's first bash block, without the venv build."""
    text = (REPO / "docs" / "integrations.md").read_text()
    sect = text.split("## verifiers (prime-rl)", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", sect, re.S).group(1)
    lines = [ln.split(" #")[0].strip() for ln in block.replace("\\\n", " ").splitlines()]
    return [shlex.split(ln) for ln in lines if ln and not ln.startswith("bash ")]


def run_docs_eval(cmd: list[str], swap: dict, url: str) -> None:
    """Run the documented eval line (``KEY=VALUE`` prefixes are its environment) against the server at ``url``."""
    cmd = list(cmd)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    while "=" in cmd[0] and not cmd[0].startswith("-"):
        k, v = cmd.pop(0).split("=", 1)
        env[k] = swap.get(v, v)
    cmd = [swap.get(x, x) for x in cmd]
    cmd[cmd.index("--client.base-url") + 1] = url
    p = subprocess.run([str(REPO / cmd[0])] + cmd[1:], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-3000:])


def run_eval(cmd: list[str], swap: dict, stub: StubServer) -> dict:
    """The documented eval against ``stub``: task id -> (reward, coevo_abstained, episode ok)."""
    run_docs_eval(cmd, swap, stub.url)
    out = {}
    for f in glob.glob(os.path.join(swap["runs/vf-eval"], "**", "traces.jsonl"), recursive=True):
        for line in Path(f).read_text().splitlines():
            ep = json.loads(line)
            tr = ep["traces"][0]
            out[ep["task"]["data"]["task_id"]] = (tr["rewards"]["coevo_reward"]["score"],
                                                  tr["metrics"]["coevo_abstained"], ep["ok"])
    return out


def test_docs_example_math_vf_eval_then_audit(tmp_path):
    eval_cmd, import_cmd, audit_cmd = docs_commands()
    assert eval_cmd[-1] == "runs/vf-eval" and "coevo.integrations.verifiers" in eval_cmd
    assert import_cmd[:3] == ["coevo", "import", "parts"] and audit_cmd[:2] == ["coevo", "audit"]
    swap = {"runs/vf-ledger": str(tmp_path / "led"), "runs/vf-run": str(tmp_path / "run"),
            "runs/vf-eval": str(tmp_path / "eval")}
    stub = StubServer(MATH_SCRIPT)
    try:
        got = run_eval(list(eval_cmd), swap, stub)
    finally:
        stub.close()
    assert len(stub.requests) == 4
    # reward (what verifiers trains on), coevo_abstained, episode ok: the abstention reads 0.0, counted apart
    assert got == {"sample-01": (1.0, 0.0, True), "sample-02": (0.0, 1.0, True), "sample-03": (0.0, 0.0, True),
                   "sample-04": (1.0, 0.0, True)}
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    for cmd in (import_cmd, audit_cmd):
        p = subprocess.run([sys.executable, "-m", "coevo"] + [swap.get(x, x) for x in cmd[1:]], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
    assert "abstention share phi" in p.stdout and "25.0%" in p.stdout, p.stdout
    j = json.loads(subprocess.run([sys.executable, "-m", "coevo", "audit", str(tmp_path / "run"), "--json"],
                                  cwd=REPO, env=env, capture_output=True, text=True, timeout=300).stdout)
    ins = j["runs"][0]["instruments"]
    assert ins["abstention_share"]["value"] == 0.25 and ins["abstention_share"]["n"] == 4
    from coevo.ledger.store import Ledger

    led = Ledger(tmp_path / "run" / "ledger.duckdb", read_only=True)
    t = led.query("SELECT DISTINCT source, prompt_version, json_extract_string(meta_json, '$.framework_version') AS v, "
                  "json_extract_string(meta_json, '$.role') AS role, json_extract_string(meta_json, '$.world') AS w "
                  "FROM tasks")
    assert t == [{"source": "verifiers", "prompt_version": "verifiers 0.4.0", "v": "0.4.0", "role": "solver",
                  "w": "math"}]
    r = led.query("SELECT r.task_id, r.step, r.reward, json_extract_string(r.components_json, '$.abstained') AS a, "
                  "v.value, v.reason, v.verifier_kind AS kind FROM rewards r JOIN verdicts v ON v.rollout_id = r.item_id "
                  "ORDER BY r.task_id")
    led.close()
    assert r == [
        {"task_id": "sample-01", "step": 0, "reward": 1.0, "a": "false", "value": 1, "reason": "", "kind": "math"},
        {"task_id": "sample-02", "step": 0, "reward": None, "a": "true", "value": None, "reason": "timeout",
         "kind": "math"},
        {"task_id": "sample-03", "step": 0, "reward": 0.0, "a": "false", "value": 0, "reason": "", "kind": "math"},
        {"task_id": "sample-04", "step": 0, "reward": 1.0, "a": "false", "value": 1, "reason": "", "kind": "math"}]


def test_facts_world_single_turn_with_passages(tmp_path):
    eval_cmd = docs_commands()[0]
    eval_cmd[eval_cmd.index("math")] = "facts"
    eval_cmd[eval_cmd.index("-n") + 1] = "2"
    swap = {"runs/vf-ledger": str(tmp_path / "led"), "runs/vf-eval": str(tmp_path / "eval")}
    stub = StubServer(FACTS_SCRIPT)
    try:
        got = run_eval(eval_cmd, swap, stub)
    finally:
        stub.close()
    # the prompt holds the passages of each hop, then the world's Solver prompt
    first = _text(stub.requests[0]["messages"][-1]["content"])
    assert any(_text(q["messages"][-1]["content"]) == "<information>e05r1 x e30;e05r1 z e30</information>"
               "<solve>e05r1 x" for q in stub.requests), first
    assert got == {"369122341161c7ca": (1.0, 0.0, True), "9a0a5f43eb5fe4f9": (0.0, 0.0, True)}


def test_dead_server_is_an_error_not_an_abstention(tmp_path):
    """A model server that does not answer: verifiers' rollout error (ProviderError), no reward, no ledger row."""
    eval_cmd = docs_commands()[0]
    eval_cmd[eval_cmd.index("-n") + 1] = "1"
    swap = {"runs/vf-ledger": str(tmp_path / "led"), "runs/vf-eval": str(tmp_path / "eval")}
    stub = StubServer({})
    stub.close()  # its port now refuses connections
    run_docs_eval(eval_cmd, swap, stub.url)
    [f] = glob.glob(os.path.join(str(tmp_path / "eval"), "**", "traces.jsonl"), recursive=True)
    [ep] = [json.loads(line) for line in Path(f).read_text().splitlines()]
    tr = ep["traces"][0]
    assert ep["ok"] is False and tr["rewards"] == {} and tr["metrics"] == {}
    assert [e["type"] for e in tr["errors"]] == ["ProviderError"]
    assert not (tmp_path / "led").exists()
