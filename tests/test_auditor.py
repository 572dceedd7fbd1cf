"""The auditor model (coevo.audit.auditor) against a fake OpenAI-compatible endpoint on 127.0.0.1:
scripted verdicts, abstentions with reasons, the key by reference, and agreement / Cohen's kappa
with the oracle checked by hand."""
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from coevo.audit.auditor import Auditor, audit_agreement, auditor_false_agreement
from coevo.audit.false_agreement import false_agreement_from_flags
from coevo.verify.judge import JudgeAuthError


@pytest.fixture()
def endpoint():
    """Replies by the proposed answer in the prompt: ``replies[answer]`` (text) or an int HTTP status."""
    state = {"replies": {}, "prompts": [], "auth": []}

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            prompt = body["messages"][0]["content"]
            state["prompts"].append(prompt)
            state["auth"].append(self.headers.get("Authorization"))
            ans = re.search(r"Proposed answer:\n(.*?)\n\n", prompt, re.S).group(1)
            reply = state["replies"].get(ans, 503)
            if isinstance(reply, int):
                out, code = b'{"error": "x"}', reply
            else:
                out, code = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode(), 200
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield state, f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


ORACLE = [1, 1, 1, 1, 1, 0, 0, 0, 0, 1]
REPLIES = ["Yes.", "yes", "**Yes**", "No, the source says otherwise", "unknown", "no", "No.", "yes", "Perhaps.", "YES"]


def test_auditor_verdicts_abstentions_and_agreement(endpoint, monkeypatch):
    state, url = endpoint
    monkeypatch.setenv("AUDITOR_TEST_KEY", "sk-test-0123456789")
    answers = [f"answer-{i}" for i in range(10)]
    state["replies"] = dict(zip(answers, REPLIES))
    aud = Auditor.from_options({"base_url": url, "model": "auditor-m", "api_key_env": "AUDITOR_TEST_KEY",
                                "timeout_s": 2.0, "retries": 0, "max_doc_chars": 40})
    docs = ["Source s1: Rufus founded Freedonia in 1901. " * 3, "Source s7: Freedonia's capital is Paris."]
    vs = aud.audit_many([(f"question {i}?", a, docs) for i, a in enumerate(answers)])
    assert [v.value for v in vs] == [1, 1, 1, 0, None, 0, 0, 1, None, 1]
    assert [v.reason for v in vs if v.value is None] == ["judge-unknown", "unparsable"]  # never a silent 0/1
    assert all(v.kind == "llm_auditor" and v.version.endswith("auditor-m:audit-v1") for v in vs)
    assert vs[0].detail["truncated"] is True and vs[0].detail["n_documents"] == 2
    p = state["prompts"][0]
    assert "Source s1: Rufus founded Freedonia" in p and "Source s7" in p and "question 0?" in p
    assert len(p.split("Source s1")[1].split("---")[0]) < 45  # cut to max_doc_chars
    assert set(state["auth"]) == {"Bearer sk-test-0123456789"}   # the key from the variable, per request
    assert "sk-test" not in json.dumps([v.detail for v in vs])
    # a missing answer is an abstention without a call
    n = len(state["prompts"])
    v = aud.audit("q?", "  ", docs)
    assert v.value is None and v.reason == "no-answer" and len(state["prompts"]) == n

    # agreement with the oracle on the 8 pairs both judged (2 abstentions):
    # confusion rows oracle 0/1, columns auditor 0/1: [[2, 1], [1, 4]]
    ag = audit_agreement(ORACLE, vs)
    assert ag["n"] == 8 and ag["n_unjudged"] == 2 and ag["confusion"] == [[2, 1], [1, 4]]
    assert ag["agreement"] == pytest.approx(6 / 8)
    # p_e = (3*3 + 5*5) / 64 = 34/64; kappa = (0.75 - 34/64) / (1 - 34/64) = 7/15
    assert ag["cohen_kappa"] == pytest.approx(7 / 15)
    assert ag["wrong_precision"] == pytest.approx(2 / 3) and ag["wrong_recall"] == pytest.approx(2 / 3)
    assert ag["agreement_se"] == pytest.approx((0.75 * 0.25 / 8) ** 0.5)

    # FF against the auditor and against the oracle, same definition; the solver agrees on all but the last
    agree = [1] * 9 + [0]
    ff_aud = auditor_false_agreement(agree, vs)
    assert ff_aud.n == 8 and ff_aud.value == pytest.approx(3 / 8)          # pairs 3, 5, 6
    assert ff_aud.extra["abstentions"] == {"judge-unknown": 1, "unparsable": 1}
    ff_or = false_agreement_from_flags(agree, ORACLE)
    assert ff_or.n == 10 and ff_or.value == pytest.approx(4 / 10)          # pairs 5, 6, 7, 8


def test_agreement_edge_cases():
    ag = audit_agreement([1, 1, None, 0], [1, 1, 1, None])
    assert ag["n"] == 2 and ag["agreement"] == 1.0 and ag["cohen_kappa"] is None  # one class only: p_e = 1
    assert ag["wrong_precision"] is None and ag["wrong_recall"] is None
    ag = audit_agreement([1, 0, 1, 0], [0, 1, 0, 1])                     # always disagree
    assert ag["agreement"] == 0.0 and ag["cohen_kappa"] == pytest.approx(-1.0)
    assert audit_agreement([], [])["agreement"] is None
    with pytest.raises(ValueError):
        audit_agreement([1], [])


def test_auth_failure_and_bad_options(endpoint, monkeypatch):
    state, url = endpoint
    monkeypatch.setenv("AUDITOR_TEST_KEY", "sk-wrong-0123456789")
    state["replies"] = {"a": 401}
    aud = Auditor(url, "m", api_key_env="AUDITOR_TEST_KEY", retries=0, timeout_s=2.0)
    with pytest.raises(JudgeAuthError, match="AUDITOR_TEST_KEY") as ei:
        aud.audit_many([("q?", "a", ["doc"])])
    assert "sk-wrong" not in str(ei.value)
    assert "audit.auditor.api_key_env" in str(ei.value)  # the setting that names the variable, not verify's
    with pytest.raises(ValueError, match="api_key_env"):
        Auditor.from_options({"base_url": url, "model": "m", "api_key": "sk-literal"})
    with pytest.raises(ValueError, match="unknown option"):
        Auditor.from_options({"base_url": url, "model": "m", "temperature": 0.5})
    with pytest.raises(ValueError, match="base_url and model"):
        Auditor()
    # an unreachable endpoint is an abstention with its reason
    v = Auditor("http://127.0.0.1:9/v1", "m", retries=0, timeout_s=0.3).audit("q?", "a", ["doc"])
    assert v.value is None and v.reason == "judge-unavailable"
