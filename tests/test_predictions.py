"""The RGBC proposal's predictions P1-P6 on hand-written ledgers (hand-computed values) and the verdict rule."""
import json
from pathlib import Path

import pytest

from coevo.audit.predictions import judge, print_predictions
from coevo.recipes.rgbc.predictions import arm_role
from coevo.audit.run_audit import audit_runs
from coevo.ledger.store import Ledger

K = 4


def ledger(run_dir: Path, rows, arm, seed, recipe="rgbc") -> Path:
    """rows: (task, step, mu_screen, mu_confirm, nu, mode_share, mu_pre, mu_post)."""
    run_dir.mkdir(parents=True)
    led = Ledger(run_dir / "ledger.duckdb")
    led.append("runs", [{"run_id": run_dir.name, "recipe": recipe, "world": "arithmetic", "seed": seed}])
    led.append("task_stats", [{
        "run_id": run_dir.name, "task_id": t, "round": 1, "step": s, "arm": arm, "k_screen": K, "mu_screen": ms,
        "k_confirm": None if mc is None else K, "mu_confirm": mc, "mu_tilde": ms if mc is None else (ms + mc) / 2,
        "nu": nu, "mode_share": share, "mu_pre": pre, "mu_post": post} for t, s, ms, mc, nu, share, pre, post in rows])
    led.close()
    return run_dir


BASE0 = [("t1", 1, .50, .25, 1, .50, .50, .25), ("t2", 1, .75, 1.0, 0, .75, .75, 1.0),
         ("t3", 1, 1.0, None, None, 1.0, 1.0, 1.0), ("t4", 1, 0.0, None, None, None, 0.0, 0.0),
         ("t5", 2, .25, .50, 1, .50, .25, .50), ("t6", 2, .50, 0.0, 0, .50, .50, .75)]
BASE1 = [r if r[0] != "t3" else ("t3", 1, .50, .50, None, .50, 1.0, 1.0) for r in BASE0]
FULL = [("u1", 1, .50, .50, None, None, None, None), ("u2", 1, .25, .75, None, None, None, None),
        ("u3", 2, .50, .25, None, None, None, None), ("u4", 2, 0.0, None, None, None, None, None)]


@pytest.fixture
def three_runs(tmp_path):
    return [ledger(tmp_path / "b0", BASE0, "synco", 0, "synco"), ledger(tmp_path / "b1", BASE1, "synco", 1, "synco"),
            ledger(tmp_path / "f0", FULL, "full", 0)]


def test_judge_lines():
    """judge() is the one rule (coevo.audit.verdicts.decide) in the predictions' words: P1 shape, predicted
    <= 0.45 (success line), termination >= 0.70 (failure line)."""
    term = [(">=", 0.70, "frontier")]
    assert judge(0.30, 0.20, 0.40, ("<=", 0.45), term)["verdict"] == "supported"
    j = judge(0.40, 0.30, 0.50, ("<=", 0.45), term)  # wholly below 0.70, estimate <= 0.45: supported
    assert j["verdict"] == "supported" and j["line"].startswith("success <= 0.45; failure > 0.7: frontier")
    assert judge(0.80, 0.72, 0.88, ("<=", 0.45), term)["verdict"] == "refuted"
    j = judge(0.72, 0.60, 0.84, ("<=", 0.45), term)
    assert j["verdict"] == "inconclusive" and "straddles the failure line 0.7" in j["line"]
    j = judge(0.60, 0.50, 0.69, ("<=", 0.45), term)
    assert j["verdict"] == "inconclusive" and "between the lines" in j["line"]
    assert judge(0.30, None, None, ("<=", 0.45), term)["verdict"] == "inconclusive"  # no interval: no verdict
    assert judge(0.30, 0.30, 0.30, ("<=", 0.45), term)["verdict"] == "degenerate"  # zero width: no evidence
    # P3 shape: failure < 0.01 on the far side, a further consequence > 0.20 on the predicted side
    lines = [("<", 0.01, "tight"), (">", 0.20, "re-estimate")]
    j = judge(0.005, 0.001, 0.009, (">=", 0.05), lines)
    assert j["verdict"] == "refuted" and "failure < 0.01: tight" in j["line"]
    j = judge(0.30, 0.25, 0.35, (">=", 0.05), lines)
    assert j["verdict"] == "supported" and j["line"].endswith("also past > 0.2: re-estimate")
    # a prediction with one line only (CASA-P3: < 0): the success line is the failure line
    assert judge(-0.02, -0.03, -0.01, ("<", 0.0), [(">=", 0.0, "no")])["verdict"] == "supported"
    assert judge(0.02, 0.01, 0.03, ("<", 0.0), [(">=", 0.0, "no")])["verdict"] == "refuted"


def test_arm_roles():
    assert arm_role("synco", "synco") == "baseline" and arm_role("a", "rgbc") == "baseline"
    assert arm_role("full", "rgbc") == "full" and arm_role("c", "rgbc") == "full"
    assert arm_role("rzero", "rzero") is None and arm_role("b", "rgbc") is None


def test_predictions_hand_computed(three_runs, capsys):
    res = audit_runs(three_runs, predictions=True)
    P = {p["id"]: p for p in res["predictions"]}
    # P1: screen-bearing tasks with a mixed confirm group: b0 2/4, b1 3/5, f0 3/3 -> 8/12
    assert P["P1"]["value"] == pytest.approx(8 / 12)
    # 0.45 < 8/12 < 0.70 and the interval reaches past 0.70: inconclusive
    assert P["P1"]["verdict"] == "inconclusive" and "failure > 0.7" in P["P1"]["line"]
    # P3: nu defined on b0 t1 t2 t5 t6 and b1 t1 t2 t5 t6 (b1's t3 has no nu): misses t2, t6 -> 4/8 > 20%
    assert P["P3"]["value"] == pytest.approx(0.5)
    assert "> 0.2" in P["P3"]["line"]
    # P4: |lag| = .25 .25 0 0 .25 .25 in b0; b1 the same but t3 (1.0 -> 1.0) -> median .25
    assert P["P4"]["value"] == pytest.approx(0.25)
    assert P["P4"]["verdict"] != "refuted"
    # P5: full 3/4 both mixed; baseline (2 + 3) / 12 -> gain 1/3
    assert P["P5"]["value"] == pytest.approx(3 / 4 - 5 / 12)
    assert P["P5"]["extra"]["baseline"] == pytest.approx(5 / 12)
    # P6: single-shot bearing rate of the baseline seeds 4/6 and 5/6 -> range 1/6
    assert P["P6"]["value"] == pytest.approx(1 / 6)
    assert P["P6"]["extra"]["per_seed"] == {"0": pytest.approx(4 / 6), "1": pytest.approx(5 / 6)}
    assert P["P6"]["ci_low"] <= P["P6"]["value"] <= P["P6"]["ci_high"]
    # P2: K = 4 groups in two steps per run. b0's and b1's last bucket (t5 .25, t6 .50) and f0's first
    # (u1 .50, u2 .25) are all mixed: triple (0, 1, 0). A K=4 group is mixed with probability
    # 1 - p^4 - (1-p)^4 <= 1 - 2 (1/2)^4 = 7/8 for every p, so no two-point pool gets within 1/8 of
    # the bearing share; p = 1/2 reaches it (all-correct / all-wrong errors 1/16). Every bootstrap draw
    # keeps such a bucket, so the interval is [1/8, 1/8]: zero width, degenerate (no verdict) by the rule.
    assert P["P2"]["status"] == "evaluated"
    assert P["P2"]["value"] == pytest.approx(1 / 8)
    assert P["P2"]["ci_low"] == pytest.approx(1 / 8) and P["P2"]["ci_high"] == pytest.approx(1 / 8)
    assert P["P2"]["verdict"] == "degenerate" and "failure > 0.05" in P["P2"]["line"]
    assert [(p["first_error"] == pytest.approx(1 / 8), p["last_error"] == pytest.approx(1 / 8))
            for p in P["P2"]["extra"]["per_run"]] == [(False, True), (False, True), (True, False)]
    print_predictions(res["predictions"])
    out = capsys.readouterr().out
    assert "P6" in out and "failure" in out


def test_predictions_not_evaluable_without_screen_confirm(tmp_path):
    led = Ledger(tmp_path / "r" / "ledger.duckdb") if (tmp_path / "r").mkdir() is None else None
    led.append("runs", [{"run_id": "r", "recipe": "rgbc", "world": "arithmetic", "seed": 0}])  # no task_stats
    led.close()
    P = {p["id"]: p for p in audit_runs([tmp_path / "r"], predictions=True)["predictions"]}
    for pid in P:
        assert P[pid]["status"] == "not evaluable" and P[pid]["reason"], pid
    assert "kappa-bar needs a SynCo/RGBC run" in P["P1"]["reason"]
    assert "baseline arm" in P["P5"]["reason"] and ">= 2 seeds" in P["P6"]["reason"]


def test_p5_needs_confirm_groups_in_both_arms(tmp_path):
    no_confirm = [(t, s, ms, None, None, None, None, None) for t, s, ms, *_ in BASE0]
    runs = [ledger(tmp_path / "b0", no_confirm, "a", 0), ledger(tmp_path / "f0", FULL, "c", 0)]
    P = {p["id"]: p for p in audit_runs(runs, predictions=True)["predictions"]}
    assert P["P5"]["status"] == "not evaluable" and "baseline arm has mixed screen groups" in P["P5"]["reason"]


def _log_budget(run_dir: Path, per_step: list[int]) -> None:
    led = Ledger(run_dir / "ledger.duckdb")
    led.append("steps", [{"run_id": run_dir.name, "step": s, "round": 1, "phase": "train", "phase_step": s,
                          "seconds": 0.0, "metrics_json": json.dumps({"rollouts": {"screen": n - 20, "confirm_train": 20,
                                                                       "consensus": 999, "train_total": n + 999}})}
                         for s, n in enumerate(per_step, 1)])
    led.close()


def test_p5_needs_matched_budgets(three_runs):
    """P5 compares arms that spent the same training rollouts (±10 %); otherwise it says why not."""
    b0, b1, f0 = three_runs
    for rd in (b0, b1):
        _log_budget(rd, [100, 100])
    _log_budget(f0, [150, 150])  # 300 vs 200 per run
    P = {p["id"]: p for p in audit_runs(three_runs, predictions=True)["predictions"]}
    assert P["P5"]["status"] == "not evaluable"
    assert "300 screen + confirm rollouts per full-arm run vs 200" in P["P5"]["reason"] and "+33.3 pt" in P["P5"]["reason"]


def test_p5_matched_budgets_are_reported(three_runs):
    b0, b1, f0 = three_runs
    for rd, steps in ((b0, [100, 100]), (b1, [110, 100]), (f0, [95, 110])):
        _log_budget(rd, steps)
    P = {p["id"]: p for p in audit_runs(three_runs, predictions=True)["predictions"]}
    assert P["P5"]["status"] == "evaluated" and P["P5"]["value"] == pytest.approx(3 / 4 - 5 / 12)
    assert P["P5"]["extra"]["train_rollouts_per_run"] == {"baseline": 205.0, "full": 205.0}
    assert "matched" in P["P5"]["extra"]["note"]
