"""The verl reward adapter (coevo/integrations/verl_reward.py), called exactly as verl calls it:
loaded from its file path like ``verl.utils.import_utils.load_module``, wrapped with the
``reward_kwargs`` like ``verl.trainer.ppo.reward.get_custom_reward_fn``, and called with the
keyword arguments of ``NaiveRewardManager`` (per sample) and ``BatchRewardManager`` (batched,
numpy object arrays from ``non_tensor_batch``). Rewards against hand-computed values; ledger rows."""
import importlib.util
import os
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import coevo.integrations.verl_reward as vr
from coevo.integrations.common import close_parts
from coevo.integrations.formats import Bad
from coevo.integrations.importers import import_parts
from coevo.ledger.store import Ledger


def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):  # verl/trainer/ppo/reward.py, verbatim logic
    merged_kwargs = {**kwargs, **extra_kwargs}
    return raw_fn(*args, **merged_kwargs)


def verl_load(name: str, reward_kwargs: dict):
    """custom_reward_function.path = the adapter's file, .name = name (load_module + get_custom_reward_fn)."""
    path = vr.__file__
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(path))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return partial(_call_with_kwargs, getattr(mod, name), dict(reward_kwargs))


def part_ledger(root: Path) -> Ledger:
    close_parts()
    parts = sorted((root / "parts").glob("*/ledger.duckdb"))
    assert len(parts) == 1
    return Ledger(parts[0], read_only=True)


def naive_extra(index, question):
    # verl's gsm8k preprocessing writes split/index/answer/question; NaiveRewardManager adds the last two
    return {"split": "train", "index": index, "answer": "...", "question": question, "num_turns": None,
            "rollout_reward_scores": {}}


def test_solver_per_sample(tmp_path):
    fn = verl_load("compute_score", {"ledger": str(tmp_path), "verify_workers": 0})
    outs = ["Step by step ... \\boxed{18}", "so #### 18", "#### 16", "I give up"]
    res = [fn(data_source="openai/gsm8k", solution_str=s, ground_truth="18", extra_info=naive_extra(7, "Janet?"))
           for s in outs]
    assert [r["score"] for r in res] == [1.0, 1.0, 0.0, 0.0]
    assert [r["coevo_verdict"] for r in res] == [1, 1, 0, 0]
    led = part_ledger(tmp_path)
    v = led.query("SELECT target, value, reason, verifier_kind FROM verdicts ORDER BY rollout_id")
    assert [x["value"] for x in v] == [1, 1, 0, 0] and {x["target"] for x in v} == {"oracle"}
    assert v[3]["reason"] == "no-answer" and v[0]["verifier_kind"] == "math"
    r = led.query("SELECT DISTINCT task_id, purpose, answer FROM rollouts ORDER BY answer NULLS LAST")
    assert {x["task_id"] for x in r} == {"openai/gsm8k:train:7"} and {x["purpose"] for x in r} == {"p_hat"}
    assert [x["answer"] for x in r] == ["16", "18", None]
    w = led.query("SELECT role, reward, advantage FROM rewards ORDER BY item_id")
    assert [x["reward"] for x in w] == [1.0, 1.0, 0.0, 0.0] and w[0]["advantage"] is None
    t = led.query("SELECT source, question, oracle_answer FROM tasks")
    assert len(t) == 4 and t[0] == {"source": "verl", "question": "Janet?", "oracle_answer": "18"}
    led.close()


def test_solver_pseudo_label_with_oracle(tmp_path):
    fn = verl_load("compute_score", {"ledger": str(tmp_path), "verify_workers": 0, "target": "pseudo_label"})
    ex = dict(naive_extra(1, "q"), oracle_answer="5")
    r = fn(data_source="rzero", solution_str="\\boxed{4}", ground_truth="4", extra_info=ex)
    assert r == {"score": 1.0, "acc": 1.0, "coevo_verdict": 1}  # rewarded for matching the (wrong) label
    led = part_ledger(tmp_path)
    v = led.query("SELECT target, value FROM verdicts ORDER BY target")
    assert v == [{"target": "oracle", "value": 0}, {"target": "pseudo_label", "value": 1}]
    assert led.query("SELECT purpose FROM rollouts") == [{"purpose": "train"}]
    led.close()


CH_OUT = ["<question>What is 2+2?</question> \\boxed{4}", "no tags here",
          "<question>What is 3+5 exactly?</question>"]
CH_EXTRA = [{"solver_answers": ["4", "4", "5", None]}, {}, {"solver_answers": ["8", "8", "8", "8"]}]


def batch_call(fn, outs, extras):
    n = len(outs)  # BatchRewardManager.verify: numpy object arrays from non_tensor_batch
    return fn(data_sources=np.array(["rzero"] * n, dtype=object), solution_strs=list(outs),
              ground_truths=[None] * n, extra_infos=np.array([dict(e) for e in extras], dtype=object))


def test_challenger_batch(tmp_path):
    fn = verl_load("compute_challenger_scores", {"ledger": str(tmp_path), "verify_workers": 0})
    res = batch_call(fn, CH_OUT, CH_EXTRA)
    # q0: p_hat = 2/4, r_unc = 1 - 2|.5 - .5| = 1; two valid questions in two BLEU clusters:
    # r_rep = 1 * (1/2) * (2 valid / B=3) = 1/3 -> r = 2/3. q1: no <question>: 0. q2: p_hat 1 -> max(0, 0 - 1/3) = 0
    assert [round(r["score"], 6) for r in res] == [round(2 / 3, 6), 0.0, 0.0]
    assert [r["p_hat"] for r in res] == [0.5, 0.0, 1.0] and [r["format_ok"] for r in res] == [1.0, 0.0, 1.0]
    assert res[0]["r_rep"] == pytest.approx(1 / 3)
    led = part_ledger(tmp_path)
    t = led.query("SELECT parse_ok, question, pseudo_label, p_hat, source FROM tasks ORDER BY task_id")
    assert [x["parse_ok"] for x in t] == [True, False, True] and t[0]["pseudo_label"] == "4"
    assert {x["source"] for x in t} == {"challenger"}
    assert led.count("rollouts") == 8 and led.count("verdicts") == 8
    v = led.query("SELECT value FROM verdicts WHERE task_id LIKE '%-q0' ORDER BY rollout_id")
    assert [x["value"] for x in v] == [1, 1, 0, 0]
    led.close()


def test_challenger_reference_variant_and_repeats(tmp_path):
    fn = verl_load("compute_challenger_scores", {"ledger": str(tmp_path), "verify_workers": 0,
                                                  "uncertainty_variant": "reference", "format_failure_reward": -1.0})
    res = batch_call(fn, CH_OUT, CH_EXTRA)
    # reference variant: r_unc = min(p, 1-p) = .5 -> .5 - 1/3 = 1/6; malformed -> -1 (R-Zero's code)
    assert [round(r["score"], 6) for r in res] == [round(1 / 6, 6), -1.0, 0.0]
    same = ["<question>What is 2+2?</question>"] * 2 + ["<question>Name the largest prime below twenty.</question>"]
    ex = [{"solver_answers": ["4", "5"]}, {"solver_answers": ["4", "5"]}, {"solver_answers": ["19", "17"]}]
    res = batch_call(fn, same, ex)
    # identical pair: one cluster, share 2/3; the third alone: 1/3 (B = 3 valid of 3)
    assert [r["r_rep"] for r in res] == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert [r["score"] for r in res] == pytest.approx([0.0, 0.0, 0.5 - 1 / 3])


TEACH_OUT = ["<question>What is 2+2?</question> \\boxed{4}", "<question>What is 3+5?</question> \\boxed{8}",
             "<question>No reference given?</question>"]
TEACH_EXTRA = [{"solver_answers": ["4", "4", "5", "6"], "confirm_answers": ["4", "4", "4", "4"]},
               {"solver_answers": ["8", "9", "9", "9"], "quality": 0.75}, {"solver_answers": ["1"]}]


@pytest.mark.parametrize("arm,expected", [
    # synco: G(q) G(r) T(mu_1): T(.5) = 1; G(.75) = .5, T(.25) = .5 -> .25; no reference -> 0
    ("synco", [1.0, 0.25, 0.0]),
    # full: mu~ = (.5 + 1) / 2 = .75, T = .5, kappa = 1[0 < 1 < 1] = 0 -> omega0 = .2 -> .1; no confirm: .5 * .5
    ("full", [0.1, 0.25, 0.0]),
])
def test_teachability_batch(tmp_path, arm, expected):
    fn = verl_load("compute_teachability_scores", {"ledger": str(tmp_path), "verify_workers": 0, "arm": arm})
    res = batch_call(fn, TEACH_OUT, TEACH_EXTRA)
    assert [r["score"] for r in res] == pytest.approx(expected)
    assert [r["mu"] for r in res] == [0.5, 0.25, 0.0]
    led = part_ledger(tmp_path)
    ts = led.query("SELECT arm, k_screen, mu_screen, k_confirm, mu_confirm, kappa, mu_tilde, reward FROM task_stats "
                   "ORDER BY task_id")
    assert ts[0] == {"arm": arm, "k_screen": 4, "mu_screen": 0.5, "k_confirm": 4, "mu_confirm": 1.0, "kappa": 0,
                     "mu_tilde": 0.75, "reward": pytest.approx(expected[0])}
    assert ts[1]["k_confirm"] is None and ts[1]["mu_tilde"] == 0.25
    assert led.count("verdicts") == 12 and led.count("rewards") == 3
    led.close()


def test_parts_merge_and_one_writer(tmp_path):
    fn = verl_load("compute_score", {"ledger": str(tmp_path / "led"), "verify_workers": 0, "step": 3})
    for k, s in enumerate(["\\boxed{18}", "#### 16", "\\boxed{18}", "#### 20"]):
        fn(data_source="gsm8k", solution_str=s, ground_truth="18", extra_info=naive_extra(0, "Janet?"))
    with pytest.raises(Bad, match="still being written"):  # this process still holds its part
        import_parts(tmp_path / "led", tmp_path / "run")
    close_parts()
    res = import_parts(tmp_path / "led", tmp_path / "run")
    assert res["counts"]["tasks"] == 1 and res["counts"]["rollouts"] == 4 and res["counts"]["steps"] == 1
    from coevo.audit.run_audit import audit_run

    a = audit_run(tmp_path / "run")["instruments"]
    assert a["bearing_rate"]["value"] == 1.0 and a["bearing_rate"]["n"] == 1  # mu = 2/4: bearing


def test_buffered_rows_written_at_exit(tmp_path):
    """A reward worker process buffers its rows (flush_rows) and writes them when it exits; its lock
    goes with it, so the part can then be merged."""
    import subprocess
    import sys

    code = ("from coevo.integrations.verl_reward import compute_score as f\n"
            "for i, s in enumerate(['#### 3', '#### 4', '#### 3']):\n"
            "    f(data_source='d', solution_str=s, ground_truth='3', extra_info={'index': 0}, verifier='integer',\n"
            "      verify_workers=0, flush_rows=10**6, flush_s=10**6)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, COEVO_LEDGER=str(tmp_path / "led"), COEVO_STEP="5"))
    assert p.returncode == 0, p.stderr
    res = import_parts(tmp_path / "led", tmp_path / "run")
    assert res["counts"]["rollouts"] == 3 and res["counts"]["steps"] == 1
    led = Ledger(tmp_path / "run" / "ledger.duckdb", read_only=True)
    assert led.query("SELECT step, count(*) AS n, sum(value) AS ok FROM verdicts GROUP BY step") == \
        [{"step": 5, "n": 3, "ok": 2}]
    led.close()
