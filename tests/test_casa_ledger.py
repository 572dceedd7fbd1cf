"""CASA on ledger data (CASA proposal): rows into a DuckDB ledger, the instruments, the report, P1-P4.

Synthetic groups only (verdict arrays drawn with numpy): three run directories, one per arm, with the
same verdicts, so the arms differ only in their accounting."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from coevo.ledger.store import Ledger
from coevo.recipes.vgopd import tables as vg_tables
from coevo.recipes.vgopd.casa.config import CasaConfig
from coevo.recipes.vgopd.casa.probes import ProbePrompt, probe_answers, probe_summary, run_probes
from coevo.recipes.vgopd.casa.rows import rollout_rows
from coevo.recipes.vgopd.casa.scoring import Check, score_answer
from coevo.recipes.vgopd.casa.selfcheck import self_check_group
from coevo.recipes.vgopd.instruments import inflation_ratios, licensing_rates, phi_by_axis, rank_reversals
from coevo.recipes.vgopd.predictions import evaluate_casa_predictions, stress_break_rates
from coevo.recipes.vgopd.tables import TABLES

WEIGHTS = {"mech": [1.0, 2.0, 1.0, -1.0], "evid": [1.0, 1.0, 3.0]}
PREC = {"mech": 0.877, "evid": 0.782}
KINDS = ["numeric_unit", "sim_judge", "rule", "rule"]


def _checks(rng, p_abstain: float, p_pass: float = 0.6):
    out = []
    for axis, ws in WEIGHTS.items():
        for j, w in enumerate(ws):
            v = int(rng.random() < (0.3 if w < 0 else p_pass))
            if rng.random() < p_abstain:
                out.append(Check(f"{axis}{j}", axis, w, None, ["timeout", "unparsable", "judge-unknown"][j % 3],
                                 KINDS[j]))
            else:
                out.append(Check(f"{axis}{j}", axis, w, v, "", KINDS[j]))
    return out


def write_run(run_dir, arm: str, p_abstain: float, steps: int = 6, seed: int = 0, discount="one_minus_precision",
              p_pass: float = 0.6):
    """A run directory whose ledger holds CASA rows of ``steps`` x 3 prompts x one group of 4."""
    rng = np.random.default_rng(seed)
    rc = np.random.default_rng(seed + 1)  # the recheck draws: the verdicts stay identical across arms
    cfg = CasaConfig(arm=arm, discount=discount if arm == "C" else None, precision=PREC)
    run_dir.mkdir(parents=True, exist_ok=True)
    led = Ledger(run_dir / "ledger.duckdb", tables=TABLES)  # the recipe's own tables (criterion_scores, ...)
    run_id = f"casa-{arm}"
    led.append("runs", [{"run_id": run_id, "created_at": 0.0, "recipe": "vgopd", "world": "criteria", "seed": seed,
                         "config_yaml": f"casa:\n  arm: {arm}\n"}])
    prompts = [ProbePrompt(f"t{i}", f"ref{i}") for i in range(3)]
    for step in range(steps):
        with led.step(run_id, step, 0, "student", step) as w:
            for t in range(3):
                experts = {"x": {f"{a}{j}": int(rng.random() < 0.7) for a, ws in WEIGHTS.items() for j in range(len(ws))},
                           "y": {f"{a}{j}": (None if rng.random() < 0.2 else int(rng.random() < 0.5))
                                 for a, ws in WEIGHTS.items() for j in range(len(ws))}}
                group = [_checks(rng, p_abstain, p_pass) for _ in range(4)]
                out = self_check_group(step, f"t{t}/g0", group, experts, cfg)
                for k, checks in enumerate(group):
                    gates = out[arm]["gates"][k]
                    rechecks = {(e.criterion_id, e.expert): int(rc.random() < 0.5) for e in gates}
                    w.extend(rollout_rows(run_id, step, f"s{step}t{t}k{k}", f"t{t}", 0, arm, score_answer(checks),
                                          checks, gates, rechecks))
            w.add("probes", run_probes(run_id, step, prompts, lambda tid, ans: [
                Check("c1", "mech", 1.0, int(ans == f"ref{tid[1:]}"), "", "numeric_unit"),
                Check("c2", "mech", 1.0, None if "vacuous" not in ans and step % 2 else 0, "timeout", "sim_judge")]))
    led.close()
    return run_dir


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    base = tmp_path_factory.mktemp("casa")
    return {a: write_run(base / a, a, 0.05) for a in ("A", "B", "C")}


def _cols(run_dir, arm):
    led = Ledger(run_dir / "ledger.duckdb", read_only=True)
    try:
        return vg_tables.criterion_score_columns(led, f"casa-{arm}"), vg_tables.gate_columns(led, f"casa-{arm}")
    finally:
        led.close()


def f(col):
    return np.array([np.nan if v is None else float(v) for v in col])


def test_inflation_identity_on_ledger_data(arms):
    sc, _ = _cols(arms["B"], "B")
    assert len(sc["step"]) == 6 * 3 * 4 * 2
    inf = inflation_ratios(f(sc["r_raw"]), f(sc["r_tilde_raw"]), f(sc["phi"]))
    assert inf["n"] > 50 and inf["n_zero"] > 0  # penalties / all-fail rows with r~ = 0 are excluded
    np.testing.assert_allclose(inf["measured"], inf["predicted"], rtol=1e-13, atol=0)
    # the clipped values too: wherever r~ > 0 and no clip applies, r / r~ = 1 / (1 - phi)
    r, rt, ph = f(sc["r"]), f(sc["r_tilde"]), f(sc["phi"])
    ok = (rt > 0) & (ph < 1)
    np.testing.assert_allclose(r[ok] / rt[ok], 1 / (1 - ph[ok]), rtol=1e-13)
    assert np.all(f(sc["r_raw"])[np.isfinite(f(sc["r_raw"]))] <= 1.0)  # the top clip never binds (docs/casa.md)
    ab = [json.loads(x) for x in sc["abstained_json"]]
    assert sum(len(a) for a in ab) == int(f(sc["n_abstained"]).sum()) > 0
    assert set().union(*[set(a.values()) for a in ab]) <= {"timeout", "unparsable", "judge-unknown"}


def test_phi_reversals_licensing_instruments(arms):
    sc, gt = _cols(arms["C"], "C")
    est = phi_by_axis(sc["axis"], f(sc["W_A"]), f(sc["W"]), f(sc["r_tilde"]), f(sc["r"]))
    assert set(est) == {"mech", "evid"} and all(0 < e.value < 0.5 for e in est.values())
    groups = list(zip(sc["step"], sc["task_id"], sc["group_idx"], sc["axis"]))
    rr = rank_reversals(groups, f(sc["r_tilde_raw"]), f(sc["phi"]))
    assert rr["n_pairs"] > 0 and rr["n_exact"] >= rr["n_approx"]  # the approximation never over-counts
    lr = licensing_rates(sc["axis"], f(sc["n_failed"]), f(sc["n_failed_licensed"]), f(sc["n_abstain_candidates"]),
                         f(sc["n_abstain_licensed"]))
    assert 0 < lr["mech"]["failure"]["rate"] <= 1 and lr["mech"]["abstention"]["licensed"] > 0
    assert {"failure", "abstention"} == set(gt["channel"])
    assert len(gt["step"]) == int(sum(1 for _ in gt["expert"]))


def test_probes_rows_and_summary(arms):
    assert [a[1] for a in probe_answers([ProbePrompt("t0", "r0"), ProbePrompt("t1", "r1")])][:3] == [
        "own_reference", "mismatched_reference", "vacuous"]
    assert [a[1] for a in probe_answers([ProbePrompt("t0", "r0")])] == ["own_reference", "vacuous"]
    rows = run_probes("r", 1, [ProbePrompt("t0", "ref0"), ProbePrompt("t1", "ref1")],
                      lambda tid, ans: [Check("c1", "m", 1.0, int(ans == f"ref{tid[1:]}"), "", "rule")])
    s = probe_summary(rows)
    assert s["own_reference"]["pass_rate"] == 1.0 and s["mismatched_reference"]["pass_rate"] == 0.0
    assert rows[1]["probe_id"] == "t0:ref_of:t1:c1"
    led = Ledger(arms["A"] / "ledger.duckdb", read_only=True)
    try:
        pr = vg_tables.probe_rates(led, "casa-A")
    finally:
        led.close()
    assert {r["kind"] for r in pr} == {"own_reference", "mismatched_reference", "vacuous"}
    own = [r for r in pr if r["kind"] == "own_reference"]
    assert [r["abstention_rate"] for r in own[:2]] == [0.0, 0.5]  # the drifting verifier shows up per step


def test_report_section(arms):
    from coevo.recipes.vgopd.report import section

    led = Ledger(arms["C"] / "ledger.duckdb", read_only=True)
    try:
        html = section(led, "casa-C", arms["C"])
    finally:
        led.close()
    assert html.count("<img") == 5 and "rank reversals" in html and "probes per step" in html


def test_predictions_three_arms(arms, tmp_path):
    stress = tmp_path / "stress.json"
    stress.write_text(json.dumps({"by_kind": {"numeric_unit": {"n": 50, "broken": 0}, "rule": {"n": 30, "broken": 0},
                                              "llm_judge": {"n": 40, "broken": 1}}}))
    P = {p["id"]: p for p in evaluate_casa_predictions([arms["A"], arms["B"], arms["C"]], stress)}
    assert set(P) == {"CASA-P1", "CASA-P2", "CASA-P3", "CASA-P4"}
    assert P["CASA-P1"]["status"] == "evaluated" and P["CASA-P1"]["value"] >= 0.10
    assert P["CASA-P1"]["verdict"] in ("supported", "degenerate")
    p2 = P["CASA-P2"]
    assert p2["verdict"] == "supported" and p2["value"] == 0.0 and set(p2["extra"]["per_pair"]) == {"A-B", "A-C", "B-C"}
    p3 = P["CASA-P3"]  # the same rollouts in A and C: C's set contains A's, so its weight is >= A's -> fails
    assert p3["value"] > 0 and p3["ci_low"] >= 0 and p3["verdict"] == "refuted"
    within = p3["extra"]["within_c"]  # the old, trivially holding statistic, kept as a detail
    assert within["effective_over_undiscounted"] < 1.0 and within["ratio_ci"][1] < 1.0
    assert within["new_effective_over_raw"] == pytest.approx(1 - 0.877, abs=0.1)
    assert within["n_rechecked"] == within["n_new_entries"] > 0
    p4 = P["CASA-P4"]
    # 1/40 below 8 %, but the Wilson upper end reaches past 8 %: inconclusive (was "crossed, point estimate only")
    assert p4["value"] == pytest.approx(1 / 40) and p4["ci_high"] > 0.08 and p4["verdict"] == "inconclusive"


def test_predictions_null_and_single_arm(tmp_path):
    run = write_run(tmp_path / "null", "A", 0.0, steps=3)
    P = {p["id"]: p for p in evaluate_casa_predictions([run])}
    assert P["CASA-P1"]["value"] == 0.0 and P["CASA-P1"]["verdict"] == "degenerate"  # phi 0 everywhere: no spread
    # one arm: r - r~ is identically 0 on its zero-abstention rows, so P2 is no test there
    assert P["CASA-P2"]["status"] == "not evaluable" and "same seed" in P["CASA-P2"]["reason"]
    assert P["CASA-P3"]["status"] == "not evaluable" and "arm-C" in P["CASA-P3"]["reason"]
    assert P["CASA-P4"]["status"] == "not evaluable"
    (run / "stress.json").write_text(json.dumps([{"kind": "sandbox_py", "n": 40, "broken": 2},
                                                 {"kind": "llm_judge", "n": 40, "broken": 8}]))
    p4 = {p["id"]: p for p in evaluate_casa_predictions([run])}["CASA-P4"]
    assert p4["verdict"] == "supported" and "llm_judge inside" in p4["line"]
    assert stress_break_rates(run / "stress.json")["sandbox_py"]["vs_reference"] == "overlaps"


def test_null_check_arms_identical(tmp_path):
    cols = [_cols(write_run(tmp_path / a, a, 0.0, steps=2), a)[0] for a in ("A", "B", "C")]
    assert all(np.all(f(c["phi"]) == 0) for c in cols)
    assert cols[0]["reward"] == cols[1]["reward"] == cols[2]["reward"]


def test_audit_runs_wires_casa_predictions(arms):
    from coevo.audit.run_audit import audit_runs

    res = audit_runs([arms["A"], arms["C"]], predictions=True)
    ids = [p["id"] for p in res["predictions"]]
    assert [i for i in ids if i.startswith("CASA-")] == ["CASA-P1", "CASA-P2", "CASA-P3", "CASA-P4"]
    assert not any(re.search("evaluation failed", p.get("reason", "")) for p in res["predictions"])


def test_cli_casa_predictions(arms, tmp_path):
    from typer.testing import CliRunner

    from coevo.cli import app

    stress = tmp_path / "s.json"
    stress.write_text(json.dumps({"kinds": {"rule": {"n": 10, "n_broken": 0}, "sim_judge": {"n": 10, "break_rate": 0.3}}}))
    r = CliRunner().invoke(app, ["casa", "predictions", str(arms["B"]), "--stress", str(stress), "--json"])
    assert r.exit_code == 0, r.output
    P = {p["id"]: p for p in json.loads(r.output)}
    assert P["CASA-P4"]["value"] == pytest.approx(0.3) and P["CASA-P4"]["extra"]["by_kind"]["sim_judge"]["broken"] == 3
    bad = CliRunner().invoke(app, ["casa", "predictions", str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "run directory not found" in bad.output


def test_p2_fails_when_arms_differ_on_zero_abstention_groups(arms, tmp_path):
    import shutil

    import duckdb

    b2 = tmp_path / "B-shifted"
    shutil.copytree(arms["B"], b2)
    con = duckdb.connect(str(b2 / "ledger.duckdb"))
    con.execute("UPDATE criterion_scores SET reward = reward + 0.1")  # a bug: B's rewards off by 0.1 everywhere
    con.close()
    p2 = {p["id"]: p for p in evaluate_casa_predictions([arms["A"], b2])}["CASA-P2"]
    assert p2["verdict"].startswith("refuted: an interval") and p2["value"] == pytest.approx(-0.1)
    assert p2["extra"]["per_pair"]["A-B"]["ci_high"] < 0 and p2["extra"]["per_pair"]["A-B"]["first_step_max_abs"] > 0


def test_p2_fails_after_the_first_update_only(arms, tmp_path):
    """The arms agree exactly at their first step (shared rollouts) and differ later (their students diverged):
    P2 fails, and says it is training, not a bug."""
    import shutil

    import duckdb

    b2 = tmp_path / "B-diverged"
    shutil.copytree(arms["B"], b2)
    con = duckdb.connect(str(b2 / "ledger.duckdb"))
    first = con.execute("SELECT min(step) FROM criterion_scores").fetchone()[0]
    con.execute("UPDATE criterion_scores SET reward = reward + 0.1 WHERE step > ?", [first])
    con.close()
    p2 = {p["id"]: p for p in evaluate_casa_predictions([arms["A"], b2])}["CASA-P2"]
    pair = p2["extra"]["per_pair"]["A-B"]
    assert pair["first_step_groups"] > 0 and pair["first_step_max_abs"] == 0.0 and pair["ci_high"] < 0
    assert p2["verdict"].startswith("refuted after the first update") and "no bug" in p2["verdict"]


def test_p3_holds_when_c_teaches_less_weight_than_a(tmp_path):
    # arm A's student fails more criteria (pass rate 0.3 against C's 0.6) on the same prompts: more licences
    a = write_run(tmp_path / "A", "A", 0.05, p_pass=0.3)
    c = write_run(tmp_path / "C", "C", 0.05)
    p3 = {p["id"]: p for p in evaluate_casa_predictions([a, c])}["CASA-P3"]
    assert p3["value"] < 0 and p3["ci_high"] < 0 and p3["verdict"] == "supported"
    assert p3["extra"]["pairs"] == ["C vs A at seed 0"] and p3["extra"]["no_drop"]["tested"] is False


def test_p3_no_drop_fails_on_a_held_out_drop(tmp_path):
    runs = []
    for seed, (acc_a, acc_c) in enumerate(((0.6, 0.3), (0.55, 0.25), (0.62, 0.3))):
        for arm, acc, pp in (("A", acc_a, 0.3), ("C", acc_c, 0.6)):
            d = write_run(tmp_path / f"{arm}{seed}", arm, 0.05, steps=2, seed=seed, p_pass=pp)
            (d / "summary.json").write_text(json.dumps({"rounds": [{"solver_eval_accuracy": {
                "overall": acc, "by_difficulty": {"cm-mm": acc}}}], "eval_n_by_difficulty": {"cm-mm": 20}}))
            runs.append(d)
    p3 = {p["id"]: p for p in evaluate_casa_predictions(runs)}["CASA-P3"]
    nd = p3["extra"]["no_drop"]
    assert nd["tested"] and nd["drop"] and nd["mean"] == pytest.approx(-0.92 / 3)
    assert p3["verdict"].startswith("refuted: held-out accuracy drops")
