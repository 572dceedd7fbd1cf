"""NeMo Gym's /verify shape (coevo.integrations.served.verify_request) without NeMo Gym, OpenEnv or a server:
the request echoed plus reward, the abstention masked and named, the rows in the ledger part; and the served
world's one-line errors. The server itself: tests/test_openenv.py (marker openenv)."""
import pytest

from coevo.integrations.ledger_writer import close_parts
from coevo.integrations.served import ServedWorld, response_text, verify_request


def resp(*texts, kind="message"):
    return {"id": "r", "object": "response", "output": [
        {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "\\boxed{7}"}]},
        *({"type": kind, "role": "assistant", "content": [{"type": "output_text", "text": t, "annotations": []}]}
          for t in texts)]}


def body(ref, *texts, **row):
    return {"question": "What is 3 + 4?", "expected_answer": ref, **row,
            "responses_create_params": {"input": [{"role": "user", "content": "What is 3 + 4?"}]},
            "response": resp(*texts)}


def test_response_text_reads_only_output_text_of_messages():
    assert response_text(resp("The sum is ", "\\boxed{7}.")) == "The sum is \\boxed{7}."
    assert response_text(resp("x", kind="function_call")) == ""
    with pytest.raises(ValueError, match="OpenAI Responses object"):
        response_text({"choices": []})


def test_verify_shape_rewards_and_abstention(tmp_path):
    sw = ServedWorld("math", verify_workers=0, ledger=str(tmp_path / "led"))
    right = verify_request(sw, body("7", "3 + 4 = \\boxed{7}", id="q1"))
    wrong = verify_request(sw, body("7", "\\boxed{8}", id="q1"))
    none = verify_request(sw, body("7", "seven", id="q1"))  # no \boxed{}: no answer, 0.0, not masked
    abst = verify_request(sw, body(None, "\\boxed{7}", id="q2"))  # no reference: the verifier abstains
    assert [(v["reward"], v["mask_sample"], v["failure_kind"], v["failure_reason"], v["extracted_answer"])
            for v in (right, wrong, none, abst)] == \
        [(1.0, False, None, None, "7"), (0.0, False, None, None, "8"), (0.0, False, None, None, None),
         (0.0, True, "coevo:abstained", "no-target", "7")]
    assert none["coevo_verdict"]["reason"] == "no-answer" and abst["coevo_verdict"]["value"] is None
    src = body("7", "\\boxed{7}", id="q1")
    out = verify_request(sw, src)
    assert {k: out[k] for k in src} == src  # the request echoed as sent (BaseVerifyResponse extends the request)
    close_parts()
    from coevo.ledger.store import Ledger

    (part,) = (tmp_path / "led" / "parts").iterdir()
    led = Ledger(part / "ledger.duckdb", read_only=True)
    rows = led.query("SELECT r.task_id, r.reward, v.value, v.reason FROM rewards r JOIN verdicts v ON v.rollout_id = r.item_id "
                     "ORDER BY r.task_id, r.reward NULLS LAST, v.reason")
    assert [(r["task_id"], r["reward"], r["value"], r["reason"]) for r in rows] == \
        [("q1", 0.0, 0, ""), ("q1", 0.0, 0, "no-answer"), ("q1", 1.0, 1, ""), ("q1", 1.0, 1, ""),
         ("q2", None, None, "no-target")]
    t = led.query("SELECT DISTINCT source, json_extract_string(meta_json, '$.protocol') AS p FROM tasks")
    assert t == [{"source": "nemo-gym", "p": "verify"}]
    led.close()


def test_verify_abstain_value_and_bad_bodies():
    sw = ServedWorld("math", verify_workers=0, abstain=-1.0)
    assert verify_request(sw, body(None, "\\boxed{7}"))["reward"] == -1.0
    with pytest.raises(ValueError, match="missing field\\(s\\) response"):
        verify_request(sw, {"expected_answer": "7", "responses_create_params": {}})
    with pytest.raises(ValueError, match="no reference field: one of expected_answer, answer"):
        verify_request(sw, {"responses_create_params": {}, "response": resp("x")})
    with pytest.raises(ValueError, match="JSON object"):
        verify_request(sw, [1])


def test_facts_world_extracts_the_answer_tag():
    sw = ServedWorld("facts", verify_workers=0)
    t = sw.tasks[0]
    assert sw.pick(seed=len(sw.tasks)) is t and sw.pick(task_id=t.task_id) is t
    assert sw.score(t, f"<answer>{t.reference}</answer>").reward == 1.0
    assert sw.score(t, t.reference).reward == 0.0  # no <answer> tag: no answer


@pytest.mark.parametrize("kw, msg", [
    ({"world": "chess"}, "world must be one of math, facts, got 'chess'"),
    ({"world": "facts", "tasks": "x.jsonl"}, "tasks= .* math world only"),
    ({"tasks": "/nonexistent.jsonl"}, "tasks file not found: /nonexistent.jsonl"),
    ({"extract": "boxed"}, "extract must be world or raw"),
])
def test_served_world_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        ServedWorld(verify_workers=0, **kw)
    with pytest.raises(ValueError, match="unknown task_id 'nope'"):
        ServedWorld(verify_workers=0).pick(task_id="nope")


def test_serve_env_without_openenv_is_one_line():
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("openenv") is not None:
        pytest.skip("openenv-core is installed here: tests/test_openenv.py serves it")
    p = subprocess.run([sys.executable, "-m", "coevo", "serve-env", "--port", "0"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error: `coevo serve-env` needs openenv-core"), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
