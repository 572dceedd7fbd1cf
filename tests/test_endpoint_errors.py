"""Fail closed on unreachable parts (issue #31 item 1), through the real CLI in a subprocess.

Three dead endpoints: a port with nothing listening, a server that answers HTTP 500, one that accepts
connections and never answers (short timeouts keep the test quick).  Each gives rc 2 and exactly one
line on stderr naming the endpoint and the cause.  A flaky server (one call fails after its retries)
gives a warning with the count and the result's count, and rc 2 above ``--max-error-rate``.

Model-server cases use ``--model tiny-llama`` (a random tiny HF model, loaded locally) against a fake
OpenAI-compatible server; judge cases use ``coevo stress`` with ``--attacker scripted`` (no model).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import JSONHandler

ROOT = Path(__file__).resolve().parents[1]


class _Fake(JSONHandler):
    """OpenAI-compatible enough for the openai backend and the judge. ``mode``: ok | 500 | flaky (every
    request whose body is the second distinct one seen fails with 500, so that call fails after retries)."""

    mode = "ok"
    bodies: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.mode == "500":
            return self._send(500, {"error": {"message": "boom"}})
        if self.path.endswith("_lora_adapter"):
            return self._send(200, {})
        key = json.dumps({k: body.get(k) for k in ("prompt", "messages")}, sort_keys=True)
        with threading.Lock():
            if key not in self.bodies:
                self.bodies.append(key)
        if self.mode == "flaky" and self.bodies.index(key) == 1:
            return self._send(500, {"error": {"message": "flaky"}})
        if self.path.endswith("/chat/completions"):
            return self._send(200, {"model": body.get("model"), "choices": [{"message": {"content": "yes"}}]})
        ch = [{"index": i, "text": "4", "finish_reason": "stop",
               "logprobs": {"tokens": ["token_id:19"], "token_logprobs": [-0.5]}} for i in range(int(body.get("n", 1)))]
        return self._send(200, {"model": body.get("model"), "choices": ch})


def _server(mode: str):
    handler = type("H", (_Fake,), {"mode": mode, "bodies": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_port}"


@pytest.fixture(params=["refused", "500", "hang"])
def dead(request):
    """(url, the cause stderr must name) of an endpoint that never answers usefully."""
    if request.param == "500":
        srv, url = _server("500")
        yield url, "500"
        srv.shutdown()
        srv.server_close()
        return
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    if request.param == "hang":
        s.listen(64)  # the kernel accepts connections; nobody reads or answers
        yield f"http://127.0.0.1:{port}", "Timeout"
    else:
        s.close()  # nothing listens on the port
        yield f"http://127.0.0.1:{port}", "Connect"
    s.close()


def _coevo(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "coevo", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def _one_error_line(r: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "Warning" not in ln and "warnings.warn" not in ln
             and "it/s]" not in ln]
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def test_stress_with_a_dead_judge_stops_with_one_line(dead):
    url, cause = dead
    r = _coevo("stress", "--judge", url, "--judge-model", "base", "--prompts", "2", "--attacker", "scripted",
               "--judge-timeout", "0.3")
    line = _one_error_line(r)
    assert line.startswith(f"error: judge {url}: ") and cause.lower() in line.lower(), line
    assert "(1 of 1 calls failed after retries)" in line and r.stdout == ""


def test_stress_with_a_flaky_judge_counts_errors_apart_and_warns():
    srv, url = _server("flaky")
    try:
        args = ("stress", "--judge", url, "--judge-model", "base", "--prompts", "2", "--attacker", "scripted")
        r = _coevo(*args)  # default --max-error-rate 0: one failed call is too many
        line = _one_error_line(r)
        assert line.startswith("error: judge / attacker: 1 of 10 calls failed (10.0%), above --max-error-rate 0; "
                               "first: status 500"), line
        assert "judge 1, attacker 0 of 10 endpoint calls" in r.stdout  # the result was printed first
        srv.RequestHandlerClass.bodies.clear()
        r = _coevo(*args, "--max-error-rate", "0.2", "--json")
        assert r.returncode == 0, r.stderr
        warn = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
        assert warn == ["warning: 1 of 10 judge / attacker calls failed after retries (first: status 500); they are "
                        "counted as errors, not as wrong or abstained"]
        res = json.loads(r.stdout)
        assert (res["judge_errors"], res["endpoint_calls"]) == (1, 10)
        b, sp = res["break"], res["should_pass"]
        assert b["n_errors"] + sp["n_errors"] == 1 and b["n"] + sp["n"] == 9  # the error is in no denominator
        assert b["n_abstained"] == sp["n_abstained"] == 0  # and never an abstention
    finally:
        srv.shutdown()
        srv.server_close()


def test_eval_with_a_dead_model_server_stops_with_one_line(dead):
    url, cause = dead
    r = _coevo("eval", "--model", "tiny-llama", "--limit", "2", "--max-new-tokens", "4", "--server", url,
               "--server-timeout", "1")
    line = _one_error_line(r)
    assert line.startswith(f"error: model server {url}: "), line
    assert {"Connect": "ConnectError", "500": "HTTP 500", "Timeout": "Timeout"}[cause] in line, line
    assert line.endswith("(2 of 2 calls failed after retries)"), line
    assert "accuracy" not in r.stdout


def test_eval_with_a_flaky_model_server_leaves_the_error_out_of_accuracy():
    srv, url = _server("flaky")
    try:
        args = ("eval", "--model", "tiny-llama", "--limit", "3", "--max-new-tokens", "4", "--server", url)
        r = _coevo(*args)
        line = _one_error_line(r)
        assert line.startswith(f"error: model server: 1 of 3 calls failed (33.3%), above --max-error-rate 0; "
                               f"first: {url}: HTTP 500"), line
        assert "errors_greedy: 1 of 3" in r.stdout
        srv.RequestHandlerClass.bodies.clear()
        r = _coevo(*args, "--max-error-rate", "0.5", "--json")
        assert r.returncode == 0, r.stderr
        assert [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")] == [
            f"warning: 1 of 3 model server calls failed after retries (first: {url}: HTTP 500: "
            '{"error": {"message": "flaky"}}); they are counted as errors, not as wrong or abstained']
        res = json.loads(r.stdout)
        assert (res["errors_greedy"], res["calls_greedy"]) == (1, 3)
        assert sum(v["n"] for v in res["by_level"].values()) == 2  # the errored question is scored nowhere
    finally:
        srv.shutdown()
        srv.server_close()


def _run_args(url: str, out: Path) -> list[str]:
    sets = ["world.name=math", "world.prompt_style=fewshot", "backend.kind=openai", "backend.roles=lora",
            "backend.options.model=tiny-llama", f"backend.options.servers={json.dumps([url])}",
            "backend.options.timeout_s=0.5", "backend.options.retries=1", "backend.options.backoff_s=0.01",
            "rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=1", "rzero.challenger_prompts=2",
            "rzero.challenger_group=2", "rzero.m=2", "rzero.n_candidates=2", "rzero.solver_prompts=1",
            "rzero.solver_group=2", "sampling.max_new_tokens=4", "verify.workers=0"]
    return ["run", "--preset", "cpu", "--force", "-q", "--no-report", "--out", str(out)] + [
        a for s in sets for a in ("--set", s)]


def test_run_with_a_dead_model_server_stops_at_the_first_step_with_one_line(dead, tmp_path):
    url, cause = dead
    r = _coevo(*_run_args(url, tmp_path / "run"))
    line = _one_error_line(r)
    assert line.startswith(f"error: step 0 (round 0 eval) failed: model server {url}: "), line
    assert cause.lower() in line.lower() and "calls failed after retries). Nothing of this step was written" in line
    assert f"--resume {tmp_path / 'run'}" in line


def test_run_with_a_flaky_model_server_warns_counts_and_fails_above_the_threshold(tmp_path):
    srv, url = _server("flaky")
    try:
        r = _coevo(*_run_args(url, tmp_path / "a"))
        warn = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
        errs = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
        assert r.returncode == 2 and len(errs) == 1 and "Traceback" not in r.stderr, r.stderr
        assert warn and warn[0].startswith("warning: step 0 (round 0 eval): 1 of ") and "HTTP 500" in warn[0]
        ms = json.loads((tmp_path / "a" / "summary.json").read_text())["errors"]["model_server"]
        # the flaky prompt is asked again, with the same seed, by the evaluation of round 1: 2 failed calls
        assert ms["failed"] == 2 and ms["calls"] > 10 and ms["first"].startswith(f"{url}: HTTP 500")
        assert errs[0].startswith(f"error: model server: 2 of {ms['calls']} calls failed "
                                  f"({100 * 2 / ms['calls']:.1f}%), above max_error_rate 0; first: {url}: HTTP 500")
        assert errs[0].endswith(f"the run is complete in {tmp_path / 'a'} (summary.json: errors)")
        srv.RequestHandlerClass.bodies.clear()
        r = _coevo(*_run_args(url, tmp_path / "b"), "--max-error-rate", "0.5")
        assert r.returncode == 0 and "run directory:" in r.stdout, r.stderr
        assert json.loads((tmp_path / "b" / "summary.json").read_text())["errors"]["model_server"] == ms
        a = _coevo("audit", str(tmp_path / "b"))
        assert a.returncode == 0, a.stderr
        assert f"errors: 2 of {ms['calls']} model server calls failed after retries" in a.stdout
    finally:
        srv.shutdown()
        srv.server_close()
