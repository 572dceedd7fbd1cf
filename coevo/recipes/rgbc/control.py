"""The instrument control of ``rgbc-arms`` (issue 30 item 3): do the RGBC proposal's P1 and P2 measure the
shape of the pool's pass-rate distribution?

Two arms run RGBC's full arm on ``coevo.worlds.arithmetic_law``, where every accepted task's true solve
probability is drawn from a known law and the Reasoner's answers are scripted from it (frozen Reasoner, no
consensus check, so the screened pool's pass rates follow the law):

- ``law_unimodal``: p = 0.25 + 0.5 Beta(2, 2), a frontier pool: kappa-bar 0.839, so P1 (kappa-bar <= 0.45,
  termination >= 0.70) must come out *refuted*;
- ``law_bimodal``: p = 0.1 Beta(2, 2) or 1 - 0.1 Beta(2, 2), the pool the proposal describes: kappa-bar 0.215,
  P1 must come out *supported*.

The same mean pass rate (0.5) in both: only the shape differs. A prediction *separates* the laws when it is
supported on the bimodal law and refuted on the unimodal one (both by the one rule, ``coevo.audit.verdicts``,
through ``coevo.recipes.rgbc.predictions``). The result that would mark it an artifact: the same verdict (or
no refutation on the unimodal law) -- it then does not measure the distribution. Expected before any run:
P1 separates (0.839 vs 0.215, far beyond its lines); P2 does not, since both laws' (all-correct, bearing,
all-wrong) triples are reproduced by a two-point pool within 0.02 points (the proposal's existence inversion:
every pool's triple is; §limitation 3 calls P2 necessary, not sufficient). Cheap: 1 round of 4 steps, 3 seeds.
"""
from __future__ import annotations

from typing import List

from coevo.experiments.spec import Arm

__all__ = ["LAW_ARMS", "CONTROL_SEEDS", "control_arms", "control_table", "EXPECTED"]

LAW_ARMS = {"law_unimodal": "unimodal", "law_bimodal": "bimodal"}
CONTROL_SEEDS = 3
WORLD_REF = "coevo.worlds.arithmetic_law:ArithmeticLawWorld"  # = coevo.worlds.arithmetic_law.WORLD_REF
CONTROL = ("recipe=rgbc", "rgbc.arm=full", f"world.name={WORLD_REF}", "synco.reasoner_updates=false",
           "synco.consensus=false", "synco.rounds=1", "synco.steps_per_round=4", "world.eval_per_level=2")
# the verdict each law must get if the prediction measures the pool's shape
EXPECTED = {"bimodal": "supported", "unimodal": "refuted"}


def control_arms() -> List[Arm]:
    return [Arm(arm, "cpu", CONTROL + (f"world.options.law={law}",), max_seeds=CONTROL_SEEDS)
            for arm, law in LAW_ARMS.items()]


def _f(x, nd=3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _truth(pid: str, law: str, k: int) -> float:
    """What the law fixes: P1's kappa-bar; P2's two-point fit error of the law's exact triple."""
    from coevo.audit.nullmodel import null_fit_error
    from coevo.worlds.arithmetic_law import law_truth

    t = law_truth(law, k)
    if pid == "P1":
        return t["kappa_bar"]
    return null_fit_error([t["all_correct"], t["bearing"], t["all_wrong"]], k)["error"]


def control_table(runs) -> dict:
    """P1 and P2 on each law's runs (pooled over its seeds): the law's true value, the measured one with its
    interval and verdict, the verdict it must get, and whether the prediction separates the laws."""
    from coevo.recipes.rgbc.predictions import evaluate_predictions

    res = {}
    for arm, law in LAW_ARMS.items():
        if arm in runs.arms:
            dirs = [runs.run_dir(arm, s) for s in runs.seeds(arm)]
            res[law] = {p["id"]: p for p in evaluate_predictions(dirs, only=("P1", "P2"))}
    rows = []
    for pid in ("P1", "P2"):
        verdict = {law: res.get(law, {}).get(pid, {}).get("verdict") for law in EXPECTED}
        sep = all(verdict[law] == want for law, want in EXPECTED.items())
        word = "yes" if sep else ("not run" if not res else "no: it does not measure the distribution")
        for law in ("unimodal", "bimodal"):
            p = res.get(law, {}).get(pid)
            if p is None:
                continue
            k = next((r["k"] for r in p.get("extra", {}).get("per_run", []) if isinstance(r, dict) and "k" in r), 4)
            cell = (f"{_f(p['value'])} [{_f(p['ci_low'])}, {_f(p['ci_high'])}]" if p["status"] == "evaluated"
                    else f"not evaluable: {p['reason']}")
            rows.append([pid, law, _f(_truth(pid, law, k)), cell, p.get("n", "-"), p.get("verdict", "-"),
                         EXPECTED[law], word])
    return {"head": ["P", "law", "true value", "measured [95%]", "n", "verdict", "must be", "separates the laws"],
            "rows": rows}
