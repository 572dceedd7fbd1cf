"""LLM judge against a real HTTP server on 127.0.0.1: scripted answers, then 500s,
timeouts and malformed JSON -> verdicts, then abstentions with reasons; cache replay."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from coevo.verify import LLMJudge, MemoryCacheStore, VerdictCache


class Script:
    def __init__(self):
        self.steps = []   # each: ("reply", text) | ("status", code) | ("sleep", s) | ("garbage", body)
        self.calls = 0
        self.bodies = []


@pytest.fixture()
def server():
    script = Script()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", 0))
            script.bodies.append(json.loads(self.rfile.read(n)))
            script.calls += 1
            kind, arg = script.steps.pop(0) if script.steps else ("status", 503)
            if kind == "sleep":
                time.sleep(arg)
                kind, arg = "reply", "yes"
            if kind == "reply":
                body = json.dumps({"choices": [{"message": {"role": "assistant", "content": arg}}]}).encode()
                code = 200
            elif kind == "garbage":
                body, code = arg.encode(), 200
            else:
                body, code = b'{"error": "x"}', arg
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield script, f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_judge_verdicts_then_abstentions(server):
    script, url = server
    j = LLMJudge(url, "judge-model", timeout_s=0.5, retries=2, backoff_s=0.01)
    script.steps = [("reply", "Yes."), ("reply", "**No**, wrong"), ("reply", "unknown"), ("reply", "maybe?")]
    out = [j.judge("q", "4", a) for a in ("4", "5", "x", "y")]
    assert [v.value for v in out] == [1, 0, None, None]
    assert [v.reason for v in out[2:]] == ["judge-unknown", "unparsable"]
    assert all(v.kind == "llm_judge" and v.version.endswith("judge-model") for v in out)
    assert out[0].detail["prompt_version"] == "judge-v1"
    assert script.bodies[0]["model"] == "judge-model" and "Candidate answer" in script.bodies[0]["messages"][0]["content"]

    # 500s until retries run out -> judge-unavailable; a 500 then a good answer -> verdict
    script.steps = [("status", 500)] * 3
    v = j.judge("q", "4", "4")
    assert v.value is None and v.reason == "judge-unavailable" and v.detail["attempts"] == 3
    script.steps = [("status", 500), ("reply", "yes")]
    assert j.judge("q", "4", "4").value == 1

    # timeouts, malformed JSON -> abstain with reasons, quickly
    script.steps = [("sleep", 1.0)] * 3
    v = j.judge("q", "4", "4")
    assert v.reason == "judge-unavailable" and any("timeout" in e for e in v.detail["errors"])
    # 1 + retries = 3 attempts, each ended by the 0.5 s client timeout (not by the 1.0 s reply)
    assert v.detail["attempts"] == 3 and len(v.detail["errors"]) == 3
    assert all(e.startswith("timeout") for e in v.detail["errors"])
    assert v.elapsed_s >= 3 * 0.5  # the judge's own record: three timeouts waited out
    script.steps = [("garbage", "{not json"), ("garbage", '{"choices": []}'), ("garbage", "[]")]
    v = j.judge("q", "4", "4")
    assert v.reason == "judge-unavailable" and all("malformed" in e for e in v.detail["errors"])
    # 4xx is not retried
    script.steps = [("status", 401)]
    calls = script.calls
    assert j.judge("q", "4", "4").reason == "judge-unavailable" and script.calls == calls + 1
    # and the run continues
    script.steps = [("reply", "no")]
    assert j.judge("q", "4", "5").value == 0
    time.sleep(0.6)  # let the sleeping handler threads finish


def test_judge_unreachable_abstains():
    j = LLMJudge("http://127.0.0.1:9/v1", "m", timeout_s=0.3, retries=1, backoff_s=0.01)
    v = j.judge("q", "r", "a")
    assert v.value is None and v.reason == "judge-unavailable"


def test_cache_replays_instead_of_recalling(server):
    script, url = server
    cache = VerdictCache(MemoryCacheStore())
    j = LLMJudge(url, "m", timeout_s=0.5, retries=0, cache=cache)
    script.steps = [("reply", "yes"), ("reply", "no")]
    a = j.judge("q", "4", "4", criterion_id="c1")
    b = j.judge("q", "4", "5", criterion_id="c1")
    n = script.calls
    # re-score: same answers -> no HTTP calls, same verdicts
    j2 = LLMJudge(url, "m", timeout_s=0.5, retries=0, cache=cache)
    a2, b2 = j2.judge("q", "4", "4", criterion_id="c1"), j2.judge("q", "4", "5", criterion_id="c1")
    assert script.calls == n and (a2.value, b2.value) == (a.value, b.value) == (1, 0)
    assert a2.detail.get("cached") is True and cache.hits == 2
    # a different prompt version or model is a different key
    script.steps = [("status", 500)]
    j3 = LLMJudge(url, "other-model", timeout_s=0.5, retries=0, cache=cache)
    v = j3.judge("q", "4", "4", criterion_id="c1")
    assert v.reason == "judge-unavailable" and script.calls == n + 1
    # transient abstentions are not cached
    script.steps = [("reply", "yes")]
    assert j3.judge("q", "4", "4", criterion_id="c1").value == 1
