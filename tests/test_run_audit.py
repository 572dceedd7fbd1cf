"""coevo.audit.run_audit: instruments over hand-written ledgers (hand-computed numbers) and an
end-to-end `coevo run` + `coevo audit` on tiny checkpoints."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coevo.audit.nullmodel import null_fit_error
from coevo.report.audit import audit_section_html
from coevo.audit.run_audit import AuditError, audit_runs
from coevo.ledger.store import Ledger

K = 4
# (task, step, mu_screen, mu_confirm, nu, mode_share, mu_pre, mu_post, proposer, mode, oracle, reference_correct)
TS = [
    ("t1", 1, .50, .25, 1, .50, .50, .25, "3", "3", "3", True),
    ("t2", 1, .75, 1.0, 0, .75, .75, 1.0, "5", "5", "6", False),
    ("t3", 1, 1.0, None, None, 1.0, 1.0, 1.0, "7", "8", "8", False),
    ("t4", 1, 0.0, None, None, None, 0.0, 0.0, "1", None, "2", False),
    ("t5", 2, .25, .50, 1, .50, .25, .50, "4", "4", "9", False),
    ("t6", 2, .50, 0.0, 0, .50, .50, .75, "2", "3", "2", True),
    ("t7", 2, None, None, None, None, None, None, "0", None, "0", True),  # rejected by the validator
]


def write_ts_ledger(run_dir: Path, rows=TS, arm="synco", seed=0, recipe="synco", abstain=True) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    led = Ledger(run_dir / "ledger.duckdb")
    rid = run_dir.name
    led.append("runs", [{"run_id": rid, "recipe": recipe, "world": "arithmetic", "seed": seed}])
    ts, tasks = [], []
    for (t, s, ms, mc, nu, share, pre, post, pa, mode, orc, rc) in rows:
        mt = None if ms is None else (ms if mc is None else (ms + mc) / 2)
        ts.append({"run_id": rid, "task_id": t, "round": 1, "step": s, "arm": arm, "validator_ok": ms is not None,
                   "k_screen": None if ms is None else K, "mu_screen": ms, "k_confirm": None if mc is None else K,
                   "mu_confirm": mc, "mu_tilde": mt, "mode_answer": mode, "mode_share": share, "nu": nu,
                   "mu_pre": pre, "mu_post": post, "reward": None if ms is None else 1 - abs(2 * ms - 1),
                   "reference_correct": rc, "proposer_answer": pa})
        tasks.append({"run_id": rid, "task_id": t, "round": 1, "step": s, "source": "synthesizer", "parse_ok": True,
                      "oracle_answer": orc})
    led.append("task_stats", ts)
    led.append("tasks", tasks)
    if abstain:  # t1: one abstention out of four verdicts, t2: none -> phi = (1/4 + 0) / 2
        v = [{"run_id": rid, "rollout_id": f"t1-{k}", "task_id": "t1", "step": 1, "target": "reference",
              "verifier_kind": "math", "value": None if k == 0 else 1, "reason": "timeout" if k == 0 else ""}
             for k in range(4)]
        v += [{"run_id": rid, "rollout_id": f"t2-{k}", "task_id": "t2", "step": 1, "target": "reference",
               "verifier_kind": "math", "value": k % 2, "reason": ""} for k in range(4)]
        led.append("verdicts", v)
    led.close()
    return run_dir


def write_rzero_ledger(run_dir: Path, seed=0) -> Path:
    """Groups of m = 10 oracle-judged answers: a 5/10, b 10/10 (step 1, p_hat); c 3/10, d 0/10 (step 2, candidate).
    Kept candidates c (label '7' = the correct answer) and d (label '2', wrong)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    led = Ledger(run_dir / "ledger.duckdb")
    rid = run_dir.name
    led.append("runs", [{"run_id": rid, "recipe": "rzero", "world": "arithmetic", "seed": seed}])
    spec = [("a", 1, "p_hat", 5, "1"), ("b", 1, "p_hat", 10, "4"), ("c", 2, "candidate", 3, "7"), ("d", 2, "candidate", 0, "9")]
    ro, ve = [], []
    for t, s, purpose, n_ok, right in spec:
        for k in range(10):
            ans = right if k < n_ok else "2"
            r = f"{t}-{purpose}-{k}"
            ro.append({"run_id": rid, "rollout_id": r, "task_id": t, "round": 1, "step": s, "role": "solver",
                       "purpose": purpose, "group_idx": k, "answer": ans})
            ve.append({"run_id": rid, "rollout_id": r, "task_id": t, "step": s, "target": "oracle",
                       "verifier_kind": "world-equivalent", "value": int(k < n_ok), "reason": ""})
    led.append("rollouts", ro)
    led.append("verdicts", ve)
    led.append("tasks", [{"run_id": rid, "task_id": "c", "round": 1, "step": 2, "source": "candidate", "parse_ok": True,
                          "pseudo_label": "7", "oracle_answer": "7", "kept": True},
                         {"run_id": rid, "task_id": "d", "round": 1, "step": 2, "source": "candidate", "parse_ok": True,
                          "pseudo_label": "2", "oracle_answer": "9", "kept": True}])
    led.close()
    return run_dir


def test_null_fit_error_reproduces_seed_bucket_and_bounds_unreachable():
    # RGBC proposal §background: w = .6494, p = .98/.0334 -> 59.9 / 9.5 / 30.6 % (reproduced to the 0.1 point)
    assert null_fit_error([0.599, 0.095, 0.306], 4)["error"] < 0.001
    # bearing 96% exceeds the two-point maximum m_4(1/2) = 0.875: best error is 0.96 - 0.875 = 0.085
    assert null_fit_error([0.02, 0.96, 0.02], 4)["error"] == pytest.approx(0.085, abs=1e-3)


def test_screen_confirm_instruments_hand_computed(tmp_path):
    run = audit_runs([write_ts_ledger(tmp_path / "s0")])["runs"][0]
    ins = run["instruments"]
    assert run["arm"] == "synco"
    assert ins["bearing_rate"]["value"] == pytest.approx(4 / 6)           # t1 t2 t5 t6 mixed of 6 screened
    assert ins["kappa_bar"]["value"] == pytest.approx(2 / 4)              # confirm mixed for t1, t5
    assert ins["kappa_bar"]["extra"]["n_screen_bearing"] == 4
    lo, hi = ins["kappa_bar"]["extra"]["ci_task_clustered"]
    assert lo < 0.5 < hi
    assert ins["productive_rate_replicated"]["value"] == pytest.approx(2 / 6)
    assert ins["nu_bar"]["value"] == pytest.approx(2 / 4)                 # t2, t6 modes miss the reference
    assert ins["doubt_share"]["value"] == pytest.approx(1 / 4)            # t2: miss with mode share 3/4
    assert ins["lag"]["value"] == pytest.approx(-0.5 / 6)                 # lags .25 -.25 0 0 -.25 -.25
    assert ins["lag"]["extra"]["median_abs"] == pytest.approx(0.25)
    # t2, t5: proposer = mode != oracle; t4 (mu 0): majority is not the proposer's; t7 never solved: not audited
    assert ins["false_agreement_mass"]["value"] == pytest.approx(2 / 6)
    assert ins["false_agreement_mass"]["extra"]["n_unaudited"] == 1
    assert ins["pseudo_label_accuracy"]["value"] == pytest.approx(3 / 7)  # reference_correct
    assert ins["abstention_share"]["value"] == pytest.approx(0.125)
    assert ins["abstention_share"]["extra"]["reasons"] == {"timeout": 1}
    assert ins["eval_accuracy"]["status"] == "unavailable"
    # two steps: too few batches for a bootstrap, so a Wilson interval and it says so
    assert ins["kappa_bar"]["interval"].startswith("Wilson") and "2 batches < 5" in ins["kappa_bar"]["interval"]
    assert 0 <= ins["kappa_bar"]["ci_low"] < 0.5 < ins["kappa_bar"]["ci_high"] <= 1


def test_wilson_interval_hand_computed():
    from coevo.audit.stats import wilson_interval

    # p = 0, n = 3: upper = z^2/n / (1 + z^2/n) = 1.2805 / 2.2805
    lo, hi = wilson_interval(0.0, 3)
    assert lo == pytest.approx(0.0, abs=1e-12) and hi == pytest.approx(1.959964 ** 2 / 3 / (1 + 1.959964 ** 2 / 3), rel=1e-6)
    lo, hi = wilson_interval(0.5, 100)
    assert (lo + hi) / 2 == pytest.approx(0.5) and hi - lo == pytest.approx(0.19234, abs=1e-4)


def test_rzero_like_ledger_and_what_cannot_be_computed(tmp_path):
    run = audit_runs([write_rzero_ledger(tmp_path / "r0")])["runs"][0]
    ins = run["instruments"]
    assert ins["bearing_rate"]["value"] == pytest.approx(2 / 4)
    assert ins["bearing_rate"]["extra"]["k_values"] == [10]
    assert ins["pseudo_label_accuracy"]["value"] == pytest.approx(1 / 2)
    assert ins["pseudo_label_accuracy"]["extra"]["n_unjudged"] == 0          # c: verdict 1 on '7', d: 0 on '2'
    assert ins["pseudo_label_accuracy"]["extra"]["per_round"] == [
        {"round": 1, "value": 0.5, "n": 2, "se": pytest.approx(0.5 ** 1.5), "n_unjudged": 0}]  # sqrt(.25 / 2)
    assert ins["abstention_share"]["value"] == 0.0 and ins["abstention_share"]["n"] == 4
    assert "no criteria" in ins["abstention_share"]["note"]
    for k in ("kappa_bar", "nu_bar", "lag", "doubt_share", "productive_rate_replicated"):
        assert ins[k]["status"] == "unavailable" and "task_stats" in ins[k]["reason"]
    assert "no proposer answer" in ins["false_agreement_mass"]["reason"]
    # steps 1 and 2 are the first and last bucket: (1/2 all-correct... ) any two-point pool fits exactly
    assert ins["null_model"]["status"] == "ok" and ins["null_model"]["value"] < 0.002


def test_seed_range_and_errors(tmp_path):
    a = write_ts_ledger(tmp_path / "s0", seed=0)
    rows = [r if r[0] != "t3" else ("t3", 1, .5, .5, None, .5, 1.0, 1.0, "7", "8", "8", False) for r in TS]
    b = write_ts_ledger(tmp_path / "s1", rows=rows, seed=1)
    res = audit_runs([a, b])
    sr = res["seed_range"][0]
    assert sr["status"] == "ok" and sr["seeds"] == [0, 1]
    assert sr["metrics"]["bearing_rate"]["range"] == pytest.approx(5 / 6 - 4 / 6)
    assert sr["metrics"]["kappa_bar"]["range"] == pytest.approx(3 / 5 - 2 / 4)
    single = audit_runs([a])["seed_range"][0]
    assert single["status"] == "unavailable" and "two different seeds" in single["reason"]
    with pytest.raises(AuditError):
        audit_runs([tmp_path / "nothing"])
    json.dumps(res)  # --json must serialise


def test_audit_section_html(tmp_path):
    d = write_ts_ledger(tmp_path / "s0")
    led = Ledger(d / "ledger.duckdb", read_only=True)
    try:
        h = audit_section_html(d, led, "s0")
    finally:
        led.close()
    assert "<h2>Audit</h2>" in h and "data:image/png;base64," in h and "kappa-bar" in h


def _coevo(*args, cwd):
    exe = Path(sys.executable).parent / "coevo"
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


def test_end_to_end_rzero_run_and_audit(tmp_path, capsys, monkeypatch):
    from coevo.audit.render import print_audit

    # the shipped tiny checkpoints (tracked in git): one deterministic run, so one outcome to assert
    ck = Path(__file__).resolve().parent.parent / "coevo" / "assets"
    assert (ck / "solver.pt" / "model.safetensors").is_file() and (ck / "challenger.pt" / "model.safetensors").is_file()
    run = tmp_path / "run"
    p = _coevo("run", "--out", str(run), "-q", "--set", "rzero.rounds=1", "--set", "rzero.challenger_steps=1",
               "--set", "rzero.solver_steps=1", "--set", "rzero.challenger_prompts=2", "--set", "rzero.n_candidates=8",
               "--set", "rzero.solver_prompts=4", "--set", "world.eval_per_level=2", "--set", "verify.workers=0",
               "--set", f"backend.solver_checkpoint={ck / 'solver.pt'}",
               "--set", f"backend.challenger_checkpoint={ck / 'challenger.pt'}", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "<h2>Audit</h2>" in (run / "report.html").read_text()
    p = _coevo("audit", str(run), "--json", "--predictions", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    ins = res["runs"][0]["instruments"]
    # R-Zero writes answer groups, pseudo-labels and eval rows but no task_stats and no proposer answer
    OK = {"bearing_rate", "null_model", "pseudo_label_accuracy", "abstention_share", "enrichment_r_unc",
          "enrichment_reward", "eval_accuracy"}
    NO_TASK_STATS = {"kappa_bar", "productive_rate_replicated", "nu_bar", "doubt_share", "lag"}
    assert {k: v["status"] for k, v in ins.items()} == {**{k: "ok" for k in OK},
                                                        **{k: "unavailable" for k in NO_TASK_STATS | {"false_agreement_mass"}}}
    for k in NO_TASK_STATS:
        assert "writes no task_stats rows" in ins[k]["reason"], k
    led = Ledger(run / "ledger.duckdb", read_only=True)
    n_tasks, n_parsed = (led.query("SELECT count(*) AS n, count(*) FILTER (WHERE parse_ok) AS p FROM tasks")[0][c]
                         for c in ("n", "p"))
    led.close()
    # 2 Challenger prompts x 8 candidates, every one a parseable question; 8 of the 16 answer groups are mixed
    assert (n_tasks, n_parsed) == (16, 16)
    assert ins["bearing_rate"]["value"] == pytest.approx(0.5)
    assert ins["eval_accuracy"]["value"] == pytest.approx(0.7)
    assert ins["kappa_bar"]["status"] == "unavailable" and "task_stats" in ins["kappa_bar"]["reason"]
    assert "no proposer answer" in ins["false_agreement_mass"]["reason"]
    assert res["predictions"] == []  # R-Zero declares no predictions (P1-P6 belong to synco / rgbc)
    monkeypatch.setenv("COLUMNS", "200")  # the table folds to the terminal's width (tests/test_run_conventions.py
    print_audit(audit_runs([run]))        # checks COLUMNS=80); here its words are read whole, whatever COLUMNS is
    out = capsys.readouterr().out
    assert "cannot compute" in out and "solver eval accuracy" in out
