"""`coevo audit --predictions` for CASA runs: the CASA proposal's predictions P1-P4 on run ledgers.

CASA proposal §predictions (with its reverse qualifications):

* P1  p95(phi) >= 0.10: the abstention channel is a main effect; < 0.02: falsified (the claim shrinks
      to the bank-construction and extension channels);
* P2  the 95% interval of the arms' difference on the zero-abstention subset covers 0;
* P3  (as corrected in the seed) C's discounted effective licensed weight is significantly below the
      undiscounted weight A's rule gives the same licences, plus the pass rate of C's newly licensed
      entries on deterministic recomputation;
* P4  break rates per verifier kind against ImpossibleRubrics' 8-26%; the bank-bottleneck claim fails
      if the deterministic kinds break 0% and llm_judge < 8%.  Reads the JSON written by
      ``coevo stress`` (``stress`` argument, else ``stress.json`` in a run directory).

Evaluated only when a run's ledger has ``criterion_scores`` rows.  Formats: docs/casa.md.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from coevo.audit.data import N_BOOT, AuditError, finite, float_array, open_ledger
from coevo.audit.predictions import judge
from coevo.audit.stats import Z95, bootstrap_stat, wilson_interval
from coevo.ledger import views
from coevo.recipes.vgopd.casa import views as casa_views
from coevo.recipes.vgopd.instruments import phi_by_axis

__all__ = ["CLAIMS", "DETERMINISTIC_KINDS", "JUDGE_KINDS", "load_casa_runs", "evaluate_casa_predictions",
           "stress_break_rates"]

CLAIMS = {
    "CASA-P1": "p95(phi) >= 0.10: the abstention channel is a main effect (CASA proposal)",
    "CASA-P2": "95% interval of the arms' reward difference on the zero-abstention subset covers 0",
    "CASA-P3": "arm C's discounted effective licensed weight is significantly below the undiscounted weight",
    "CASA-P4": "break rates per verifier kind vs ImpossibleRubrics' 8-26%",
}
DETERMINISTIC_KINDS = ("numeric_unit", "sympy_equiv", "sandbox_py", "rule", "integer")
JUDGE_KINDS = ("llm_judge", "sim_judge")
REFERENCE = (0.08, 0.26)


def _na(p: str, reason: str) -> Dict[str, Any]:
    return {"id": p, "claim": CLAIMS[p], "status": "not evaluable", "reason": reason}


def _clean(x):
    """JSON-safe: non-finite floats -> None, numpy scalars -> Python."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return finite(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def _res(p: str, value, lo, hi, n: int, unit: str, verdict: str, line: str, **extra) -> Dict[str, Any]:
    return {"id": p, "claim": CLAIMS[p], "status": "evaluated", "value": finite(value), "ci_low": finite(lo),
            "ci_high": finite(hi), "n": int(n), "unit": unit, "verdict": verdict, "line": line,
            "extra": _clean(extra)}


def load_casa_runs(run_dirs: Sequence[Path]) -> List[dict]:
    """Per run with criterion_scores rows: run_dir, arm, the scores and gates columns as arrays."""
    out = []
    for rd in run_dirs:
        led = open_ledger(Path(rd))
        try:
            run_id = views.run_info(led)["run_id"]
            sc = casa_views.criterion_score_columns(led, run_id)
            gt = casa_views.gate_columns(led, run_id)
        finally:
            led.close()
        if not sc["step"]:
            continue
        arms = sorted({a for a in sc["arm"] if a})
        out.append({"run_dir": str(rd), "arm": arms[0] if len(arms) == 1 else "/".join(arms), "scores": sc,
                    "gates": gt})
    return out


def _batches(runs, key: str) -> np.ndarray:
    return np.concatenate([np.array([f"{i}:{s}" for s in r[key]["step"]], dtype=object) for i, r in enumerate(runs)])


def _p1(runs) -> dict:
    phi = np.concatenate([float_array(r["scores"]["phi"]) for r in runs])
    batch = _batches(runs, "scores")
    ok = np.isfinite(phi)
    if not ok.any():
        return _na("CASA-P1", "no (rollout, axis) row with a defined phi")
    p95 = float(np.quantile(phi[ok], 0.95))
    bs = bootstrap_stat(phi[ok], batch[ok], lambda x: float(np.quantile(x, 0.95)), n_boot=N_BOOT)
    j = judge(p95, bs["ci_low"], bs["ci_high"], (">=", 0.10),
              [("<", 0.02, "falsified: the abstention channel has no real weight; the claim shrinks to the bank "
                "construction and extension channels")])
    cols = {k: np.concatenate([np.asarray(r["scores"][k], dtype=object if k == "axis" else float) for r in runs])
            for k in ("axis", "W_A", "W", "r_tilde", "r")}
    by_axis = phi_by_axis(cols["axis"], cols["W_A"], cols["W"], cols["r_tilde"], cols["r"])
    return _res("CASA-P1", p95, bs["ci_low"], bs["ci_high"], int(ok.sum()), "share", j["verdict"], j["line"],
                interval="batch bootstrap of p95 over (run, step)", mean_phi=float(phi[ok].mean()),
                share_inflated_11pct=float((phi[ok] >= 0.10).mean()),
                by_axis={a: {"p95": e.extra.get("phi_p95"), "mean": finite(e.value), "n": e.n,
                             "strata": e.extra.get("strata")} for a, e in by_axis.items()},
                note="per (rollout, axis) row; p95 >= 0.10 means >= 5% of rollouts' axis rewards are inflated by >= 11%")


def _zero_groups(sc: dict) -> Dict[tuple, float]:
    """Mean arm reward per (step, task, group, axis) over groups in which no rollout abstained."""
    acc: Dict[tuple, list] = {}
    for s, t, g, a, na, rw in zip(sc["step"], sc["task_id"], sc["group_idx"], sc["axis"], sc["n_abstained"],
                                  sc["reward"]):
        acc.setdefault((s, t, g, a), []).append((int(na or 0), float(rw)))
    return {k: float(np.mean([x for _, x in v])) for k, v in acc.items() if all(n == 0 for n, _ in v)}


def _within_run_p2(runs) -> dict:
    d, b = [], []
    for i, r in enumerate(runs):
        sc = r["scores"]
        for s, na, rr, rt in zip(sc["step"], sc["n_abstained"], sc["r"], sc["r_tilde"]):
            if int(na or 0) == 0:
                d.append((0.0 if rr is None or not np.isfinite(rr) else float(rr)) - float(rt))
                b.append(f"{i}:{s}")
    if not d:
        return _na("CASA-P2", "no (rollout, axis) row without abstention")
    x = np.asarray(d)
    bs = bootstrap_stat(x, np.asarray(b, dtype=object), lambda v: float(v.mean()), n_boot=N_BOOT)
    lo, hi = (bs["ci_low"], bs["ci_high"]) if np.isfinite(bs["ci_low"]) else (float(x.min()), float(x.max()))
    cov = lo <= 0.0 <= hi
    return _res("CASA-P2", float(x.mean()), lo, hi, x.size, "share (difference)",
                "holds" if cov else "fails: the interval excludes 0 (noise or a bug)",
                "A's reward r minus B/C's reward r~ on each zero-abstention row of each run",
                interval="batch bootstrap over (run, step)", max_abs_difference=float(np.abs(x).max()),
                note="one arm per run given: compares the arms' rewards recorded on the same rows; gates were "
                     "compared by the run-time self-check")


def _p2(runs) -> dict:
    arms = sorted({r["arm"] for r in runs})
    if len(arms) < 2:
        return _within_run_p2(runs)
    per_pair, all_ok, worst = {}, True, None
    for i, a in enumerate(arms):
        for b in arms[i + 1:]:
            ga = {k: v for r in runs if r["arm"] == a for k, v in _zero_groups(r["scores"]).items()}
            gb = {k: v for r in runs if r["arm"] == b for k, v in _zero_groups(r["scores"]).items()}
            keys = sorted(set(ga) & set(gb), key=str)
            if not keys:
                continue
            diff = np.array([ga[k] - gb[k] for k in keys])
            bs = bootstrap_stat(diff, np.array([str(k[0]) for k in keys], dtype=object), lambda v: float(v.mean()),
                                n_boot=N_BOOT)
            lo, hi = bs["ci_low"], bs["ci_high"]
            if not np.isfinite(lo):  # one step only: Wald over groups
                se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0
                lo, hi = float(diff.mean() - Z95 * se), float(diff.mean() + Z95 * se)
            per_pair[f"{a}-{b}"] = {"mean": float(diff.mean()), "ci_low": lo, "ci_high": hi, "n_groups": diff.size}
            all_ok &= lo <= 0.0 <= hi
            if worst is None or abs(diff.mean()) > abs(per_pair[worst]["mean"]):
                worst = f"{a}-{b}"
    if worst is None:  # no zero-abstention group shared by two arms' runs: compare within each run
        return _within_run_p2(runs)
    w = per_pair[worst]
    return _res("CASA-P2", w["mean"], w["ci_low"], w["ci_high"], w["n_groups"], "share (difference)",
                "holds" if all_ok else "fails: an interval excludes 0 (noise or a bug on the zero-abstention subset)",
                f"reported pair: {worst} (largest |mean|); every pair's interval must cover 0",
                per_pair=per_pair, interval="paired by (step, prompt, group, axis); batch bootstrap over steps")


def _entries_ratio(w: np.ndarray, raw: np.ndarray, batch: np.ndarray) -> tuple:
    idx = np.arange(w.size, dtype=float)
    stat = lambda v: float(w[v.astype(int)].sum() / raw[v.astype(int)].sum())  # noqa: E731
    bs = bootstrap_stat(idx, batch, stat, n_boot=N_BOOT)
    return float(w.sum() / raw.sum()), bs["ci_low"], bs["ci_high"]


def _p3(runs) -> dict:
    cr = [(i, r) for i, r in enumerate(runs) if r["arm"] == "C"]
    if not cr:
        return _na("CASA-P3", f"needs an arm-C run (casa.arm=C); arms given: {sorted({r['arm'] for r in runs})}")
    g = {k: np.concatenate([np.asarray(r["gates"][k], dtype=object) for _, r in cr]) for k in
         ("step", "channel", "weight", "raw_weight", "recheck")}
    batch = np.concatenate([np.array([f"{i}:{s}" for s in r["gates"]["step"]], dtype=object) for i, r in cr])
    w, raw = g["weight"].astype(float), g["raw_weight"].astype(float)
    if w.size == 0 or raw.sum() <= 0:
        return _na("CASA-P3", "the arm-C runs licensed no expert")
    ratio, lo, hi = _entries_ratio(w, raw, batch)
    j = judge(ratio, lo, hi, ("<", 1.0), [])
    new = g["channel"] == "abstention"
    rc = np.array([x for x in g["recheck"][new] if x is not None], dtype=float)
    p = float(rc.mean()) if rc.size else float("nan")
    plo, phi_ = wilson_interval(p, rc.size) if rc.size else (float("nan"), float("nan"))
    a_rows = [r["scores"] for r in runs if r["arm"] == "A"]
    a_w = np.concatenate([float_array(s["w_licensed_raw"]) for s in a_rows]) if a_rows else np.array([])
    c_w = np.concatenate([float_array(r["scores"]["w_licensed"]) for _, r in cr])
    return _res("CASA-P3", ratio, lo, hi, int(w.size), "share", j["verdict"], j["line"],
                interval="batch bootstrap over (run, step) of sum(effective) / sum(undiscounted)",
                n_new_entries=int(new.sum()), new_share_of_raw_weight=float(raw[new].sum() / raw.sum()),
                new_effective_over_raw=finite(w[new].sum() / raw[new].sum()) if new.any() else None,
                new_pass_rate=finite(p), new_pass_ci=[finite(plo), finite(phi_)], n_rechecked=int(rc.size),
                mean_licensed_weight_per_row={"C_effective": finite(c_w.mean()) if c_w.size else None,
                                              "A_undiscounted": finite(a_w.mean()) if a_w.size else None},
                note="counting rates cannot test P3 (C's gate set contains A's); value 1 = no discount effect")


def stress_break_rates(path: Path) -> Dict[str, Dict[str, Any]]:
    """Per verifier kind {n, broken, rate, ci_low, ci_high} from a ``coevo stress`` JSON: a mapping
    ``by_kind`` (or ``kinds``) kind -> {n, broken | n_broken | break_rate}, or a list of {kind, n, broken}."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise AuditError(f"cannot read stress results {path}: {e}") from None
    items = data.get("by_kind", data.get("kinds")) if isinstance(data, dict) else data
    if isinstance(items, list):
        items = {str(x.get("kind")): x for x in items if isinstance(x, dict)}
    if not isinstance(items, dict) or not items:
        raise AuditError(f"{path}: no per-kind break rates (expected 'by_kind': {{kind: {{n, broken}}}})")
    out = {}
    for kind, v in items.items():
        n = int(v.get("n", 0))
        k = v.get("broken", v.get("n_broken"))
        k = int(round(float(v["break_rate"]) * n)) if k is None and "break_rate" in v else int(k or 0)
        if n <= 0:
            continue
        lo, hi = wilson_interval(k / n, n)
        out[kind] = {"n": n, "broken": k, "rate": k / n, "ci_low": lo, "ci_high": hi,
                     "vs_reference": "below" if hi < REFERENCE[0] else "above" if lo > REFERENCE[1] else
                     "inside" if REFERENCE[0] <= k / n <= REFERENCE[1] else "overlaps"}
    return out


def _pooled(rates: dict, kinds) -> Optional[dict]:
    sel = [v for k, v in rates.items() if k in kinds]
    if not sel:
        return None
    n, k = sum(v["n"] for v in sel), sum(v["broken"] for v in sel)
    lo, hi = wilson_interval(k / n, n)
    return {"n": n, "broken": k, "rate": k / n, "ci_low": lo, "ci_high": hi}


def _p4(run_dirs: Sequence[Path], stress: Optional[Path]) -> dict:
    path = Path(stress) if stress else next((Path(d) / "stress.json" for d in run_dirs
                                             if (Path(d) / "stress.json").is_file()), None)
    if path is None:
        return _na("CASA-P4", "no stress results: run `coevo stress BANK` and pass its JSON (or put stress.json "
                   "in a run directory)")
    rates = stress_break_rates(path)
    det, jud = _pooled(rates, DETERMINISTIC_KINDS), _pooled(rates, JUDGE_KINDS)
    head = jud or det or _pooled(rates, tuple(rates))
    if det is not None and jud is not None and det["broken"] == 0 and jud["rate"] < REFERENCE[0]:
        firm = jud["ci_high"] < REFERENCE[0]
        verdict = "termination line crossed" + ("" if firm else " (point estimate only; interval reaches 8%)")
        line = "deterministic kinds break 0% and judge kinds < 8%: 'the criteria bank is the scaling bottleneck' fails"
    else:
        verdict = "bank-bottleneck claim stands" if det is not None and jud is not None else \
            "partial: needs both deterministic and judge kinds"
        line = "per kind vs the 8-26% reference: " + ", ".join(f"{k} {v['vs_reference']}" for k, v in sorted(rates.items()))
    return _res("CASA-P4", head["rate"], head["ci_low"], head["ci_high"], head["n"], "share", verdict, line,
                by_kind=rates, deterministic=det, judge=jud, source=str(path),
                interval="Wilson per kind", note="value: judge kinds pooled (deterministic when no judge kind)")


def evaluate_casa_predictions(run_dirs: Sequence[Path], stress: Optional[Path] = None) -> List[dict]:
    """P1-P4 of the CASA proposal (§predictions) on the CASA runs among ``run_dirs``; [] when no run has criterion_scores rows."""
    runs = load_casa_runs(run_dirs)
    if not runs:
        return []
    out = []
    for pid, f in (("CASA-P1", lambda: _p1(runs)), ("CASA-P2", lambda: _p2(runs)), ("CASA-P3", lambda: _p3(runs)),
                   ("CASA-P4", lambda: _p4(run_dirs, stress))):
        try:
            out.append(f())
        except Exception as e:  # a prediction that crashes is reported, not hidden
            out.append(_na(pid, f"evaluation failed: {e!r}"))
    return out
