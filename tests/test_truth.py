"""Pseudo-label accuracy without an oracle (issue #13 item 5): an LLM judge over a real HTTP
server on 127.0.0.1 (scripted: it knows arithmetic, says "unknown" on some questions and is
wrong on others), and a references file; on the arithmetic world the judge's agreement with the
oracle is reported."""
from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import duckdb
import pytest

from conftest import TINY_RUN, run_coevo
from coevo.audit.truth import TRUTH_PROMPT_VERSION, ReferenceTruth, TruthError
from coevo.core.verdict import Verdict
from coevo.worlds.arithmetic import evaluate


def scripted_reply(question: str, answer: str) -> str:
    """A judge that is right except: 1 in 8 questions 'unknown', 1 in 8 answered backwards."""
    h = int(hashlib.sha1(question.encode()).hexdigest(), 16) % 8
    if h == 0:
        return "unknown"
    try:
        right = int(answer.strip()) == evaluate(question.strip())
    except Exception:  # noqa: BLE001 - an unparsable answer is wrong
        right = False
    if h == 1:
        right = not right
    return "Yes." if right else "No."


@pytest.fixture()
def judge_url():
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            text = body["messages"][0]["content"]
            m = re.search(r"Problem:\n(.*?)\n\nProposed final answer:\n(.*?)\n\n", text, re.S)
            out = json.dumps({"choices": [{"message": {"role": "assistant",
                                                       "content": scripted_reply(m.group(1), m.group(2))}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_rzero_pseudo_label_accuracy_by_judge_and_agreement_with_oracle(judge_url, tmp_path):
    out = tmp_path / "run"
    run_coevo("run", "--out", str(out), *TINY_RUN, "--set", "rzero.challenger_steps=0", "--set", "rzero.solver_steps=1",
              "--set", f"truth.judge.base_url={judge_url}", "--set", "truth.judge.model=scripted",
              "--set", "truth.judge.api_key_env=COEVO_TEST_JUDGE_KEY", env={"COEVO_TEST_JUDGE_KEY": "k"})
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    rows = con.execute("select v.task_id, v.value, v.reason, t.question, t.pseudo_label, t.oracle_answer from verdicts v "
                       "join tasks t using (run_id, task_id) where v.target = 'truth:llm_truth' and t.kept").fetchall()
    assert rows
    for _, value, reason, q, label, oracle in rows:  # every verdict is the scripted judge's
        reply = scripted_reply(q, label)
        assert value == {"Yes.": 1, "No.": 0}.get(reply) and (reason == "judge-unknown") == (reply == "unknown")
    judged = [(v, int(lab) == int(orc)) for _, v, _, _, lab, orc in rows if v is not None]
    metrics = json.loads(con.execute("select metrics_json from steps where phase = 'dataset'").fetchone()[0])
    assert metrics["pseudo_label_accuracy_truth"] == pytest.approx(sum(v for v, _ in judged) / len(judged))
    assert metrics["truth_unjudged"] == sum(v is None for _, v, *_ in rows)
    assert metrics["truth_oracle_n"] == len(judged)
    assert metrics["truth_oracle_agreement"] == pytest.approx(sum((v == 1) == o for v, o in judged) / len(judged))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rounds"][0]["pseudo_label_accuracy_truth"] == pytest.approx(metrics["pseudo_label_accuracy_truth"])
    assert "truth_oracle_kappa" in summary["rounds"][0]


class StubVerifier:
    def match_many(self, pairs):
        return [Verdict(1 if a is not None and a.strip() == r.strip() else 0) for a, r in pairs]


def test_reference_file_truth(tmp_path):
    f = tmp_path / "refs.jsonl"
    f.write_text('{"question": "What is  2+2?", "answer": "4"}\n{"question": "Name one even prime", "answers": ["2", "two"]}\n')
    t = ReferenceTruth(f, StubVerifier())
    vs = t.verdicts(["What is 2+2?", "Name one even prime", "unknown question", "What is 2+2?"], ["4", "two", "1", None])
    assert [v.value for v in vs] == [1, 1, None, 0]
    assert vs[2].reason == "no-reference"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "x"}\n')
    with pytest.raises(TruthError, match="bad.jsonl:1"):
        ReferenceTruth(bad, StubVerifier())
    assert TRUTH_PROMPT_VERSION == "truth-v1"


def test_both_truth_sources_is_one_line_error():
    p = run_coevo("run", "--set", "truth.references=x.jsonl", "--set", "truth.judge.base_url=http://127.0.0.1:1/v1",
                  "--set", "truth.judge.model=m", check=False)
    assert p.returncode == 2 and "truth" in p.stderr and "not both" in p.stderr


def test_rgbc_reference_accuracy_by_judge_and_agreement_with_oracle(judge_url, tmp_path):
    """SynCo/RGBC: every validated task's reference answer judged by the truth source (issue #13
    item 5); over the validated and the accepted tasks; agreement with the arithmetic oracle."""
    out = tmp_path / "rgbc"
    run_coevo("run", "--out", str(out), "-q", "--recipe", "rgbc", "--set", "rgbc.arm=full", "--set", "synco.rounds=1",
              "--set", "synco.steps_per_round=1", "--set", "synco.tasks_per_step=16", "--set", "world.eval_per_level=6",
              "--set", f"truth.judge.base_url={judge_url}", "--set", "truth.judge.model=scripted",
              "--set", "truth.judge.api_key_env=COEVO_TEST_JUDGE_KEY", env={"COEVO_TEST_JUDGE_KEY": "k"})
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    rows = con.execute("select v.task_id, v.value, v.reason, t.question, t.reference, t.oracle_answer, t.kept "
                       "from verdicts v join tasks t using (run_id, task_id) "
                       "where v.target = 'truth:llm_truth' order by v.task_id").fetchall()
    n_valid = con.execute("select count(distinct task_id) from verdicts where target = 'validator:schema' "
                          "and task_id in (select task_id from verdicts where target like 'validator:%' "
                          "group by task_id having min(value) = 1)").fetchone()[0]
    assert rows and len(rows) == n_valid
    for _, value, reason, q, ref, *_ in rows:
        reply = scripted_reply(q, ref)
        assert value == {"Yes.": 1, "No.": 0}.get(reply) and (reason == "judge-unknown") == (reply == "unknown")
    judged = [(v, int(ref) == int(orc), kept) for _, v, _, _, ref, orc, kept in rows if v is not None]
    m = json.loads(con.execute("select metrics_json from steps where phase = 'train'").fetchone()[0])
    assert m["reference_accuracy_truth"] == pytest.approx(sum(v for v, *_ in judged) / len(judged))
    acc = [v for v, _, kept in judged if kept]
    assert m["reference_accuracy_truth_accepted"] == (pytest.approx(sum(acc) / len(acc)) if acc else None)
    assert m["truth_oracle_n"] == len(judged)
    assert m["truth_oracle_agreement"] == pytest.approx(sum((v == 1) == o for v, o, _ in judged) / len(judged))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rounds"][0]["reference_accuracy_truth"] == pytest.approx(m["reference_accuracy_truth"])
