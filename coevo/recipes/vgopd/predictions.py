"""`coevo audit --predictions` for CASA runs: the CASA proposal's predictions P1-P4 on run ledgers.

CASA proposal §predictions (with its reverse qualifications):

* P1  p95(phi) >= 0.10: the abstention channel is a main effect; < 0.02: falsified (the claim shrinks
      to the bank-construction and extension channels);
* P2  the 95% interval of the arms' difference on the zero-abstention subset covers 0: runs of two arms
      at the same seed (same prompts), paired by (seed, step, prompt, group, axis); one arm: not evaluable
      (r - r~ is identically 0 on zero-abstention rows of one run);
* P3  (as corrected in the seed) C's discounted effective licensed weight is significantly below A's
      undiscounted weight (runs at the same seed), no drop on a held-out set (the family of
      ``world.options.train_exclude``, else the whole held-out set), plus the pass rate of C's newly
      licensed entries on deterministic recomputation;
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
from coevo.recipes.vgopd import tables as vg_tables
from coevo.recipes.vgopd.instruments import phi_by_axis

__all__ = ["CLAIMS", "DETERMINISTIC_KINDS", "JUDGE_KINDS", "load_casa_runs", "evaluate_casa_predictions",
           "stress_break_rates"]

CLAIMS = {
    "CASA-P1": "p95(phi) >= 0.10: the abstention channel is a main effect (CASA proposal)",
    "CASA-P2": "95% interval of the arms' reward difference on the zero-abstention subset covers 0 (same prompts)",
    "CASA-P3": "arm C's discounted effective licensed weight is significantly below arm A's undiscounted weight, "
               "with no drop on a held-out set",
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
    """Per run with criterion_scores rows: run_dir, arm, label (``C(1-p)`` / ``C(p)`` for C's two
    discounts), seed, the held-out accuracy (summary.json: overall and of the held-out family, the
    conversions of ``world.options.train_exclude``), the scores and gates columns as arrays."""
    from coevo.audit.data import read_config

    out = []
    for rd in run_dirs:
        led = open_ledger(Path(rd))
        try:
            info = views.run_info(led)
            run_id = info["run_id"]
            sc = vg_tables.criterion_score_columns(led, run_id)
            gt = vg_tables.gate_columns(led, run_id)
        finally:
            led.close()
        if not sc["step"]:
            continue
        arms = sorted({a for a in sc["arm"] if a})
        arm = arms[0] if len(arms) == 1 else "/".join(arms)
        cfg = read_config(Path(rd), info)
        disc = (cfg.get("casa") or {}).get("discount")
        label = {"one_minus_precision": "C(1-p)", "precision": "C(p)"}.get(disc, arm) if arm == "C" else arm
        out.append({"run_dir": str(rd), "arm": arm, "label": label, "seed": info.get("seed", cfg.get("seed")),
                    "heldout": _heldout(Path(rd), cfg), "scores": sc, "gates": gt})
    return out


def _heldout(rd: Path, cfg: dict) -> Dict[str, Any]:
    """{overall, family, family_name, n_family} of the run's last evaluation ({} without summary.json)."""
    try:
        s = json.loads((rd / "summary.json").read_text())
    except (OSError, ValueError):
        return {}
    acc = (s.get("rounds") or [{}])[-1].get("solver_eval_accuracy") or {}
    fam = list(((cfg.get("world") or {}).get("options") or {}).get("train_exclude") or [])
    by, n_by = acc.get("by_difficulty") or {}, s.get("eval_n_by_difficulty") or {}
    if not n_by and len(fam) == 1 and fam[0] in by:  # no initial evaluation (vgopd.initial_eval off): one family
        return {"overall": acc.get("overall"), "family": by[fam[0]], "family_name": fam[0], "n_family": None}
    n_f = sum(int(n_by.get(f, 0)) for f in fam)
    val = (sum(by[f] * int(n_by.get(f, 0)) for f in fam if f in by) / n_f) if fam and n_f else None
    return {"overall": acc.get("overall"), "family": val, "family_name": "+".join(fam) or None, "n_family": n_f}


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


def _p2_failure(first_ok: bool) -> str:
    """Why P2 fails: where the arms already differ at their first step (shared rollouts, no update yet) it is noise
    or a bug; where they agree exactly there, the difference comes from training: after the first update each arm's
    student answers the same prompt differently, also where nothing abstains."""
    if first_ok:
        return ("refuted after the first update: the arms' students diverge (their abstention handling spills over "
                "onto prompts with no abstention); at the first step the arms agree exactly (no bug)")
    return "refuted: an interval excludes 0 (noise or a bug on the zero-abstention subset)"


def _p2(runs) -> dict:
    """CASA-P2 across arms on the same prompts: runs of two arms at the same seed share their prompts and,
    on groups where no rollout abstained in either, must give the same rewards (CASA proposal: a difference
    there is noise or a bug).  Within one run r - r~ is identically 0 on such rows, so one arm is not a test."""
    labels = sorted({r["label"] for r in runs})
    if len(labels) < 2:
        return _na("CASA-P2", "needs runs of >= 2 arms at the same seed (same prompts); within one run r - r~ is "
                   f"identically 0 on zero-abstention rows; arms given: {labels}")
    per_pair, all_ok, first_ok, worst = {}, True, True, None
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            ga = {(r["seed"], *k): v for r in runs if r["label"] == a for k, v in _zero_groups(r["scores"]).items()}
            gb = {(r["seed"], *k): v for r in runs if r["label"] == b for k, v in _zero_groups(r["scores"]).items()}
            keys = sorted(set(ga) & set(gb), key=str)
            if not keys:
                continue
            diff = np.array([ga[k] - gb[k] for k in keys])
            bs = bootstrap_stat(diff, np.array([f"{k[0]}:{k[1]}" for k in keys], dtype=object),
                                lambda v: float(v.mean()), n_boot=N_BOOT)
            lo, hi = bs["ci_low"], bs["ci_high"]
            if not np.isfinite(lo):  # one (seed, step) only: Wald over groups
                se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0
                lo, hi = float(diff.mean() - Z95 * se), float(diff.mean() + Z95 * se)
            first = {}  # each seed's first step: both arms sample before any update, so rewards must agree exactly
            for k in keys:
                first[k[0]] = min(first.get(k[0], k[1]), k[1])
            d1 = np.array([ga[k] - gb[k] for k in keys if k[1] == first[k[0]]])
            m1 = float(np.abs(d1).max()) if d1.size else None
            per_pair[f"{a}-{b}"] = {"mean": float(diff.mean()), "ci_low": lo, "ci_high": hi, "n_groups": diff.size,
                                    "first_step_groups": int(d1.size), "first_step_max_abs": m1}
            all_ok &= lo <= 0.0 <= hi
            first_ok &= m1 is None or m1 < 1e-9
            if worst is None or abs(diff.mean()) > abs(per_pair[worst]["mean"]):
                worst = f"{a}-{b}"
    if worst is None:
        return _na("CASA-P2", "no zero-abstention group shared by two arms' runs at the same seed")
    w = per_pair[worst]
    return _res("CASA-P2", w["mean"], w["ci_low"], w["ci_high"], w["n_groups"], "share (difference)",
                "supported" if all_ok else _p2_failure(first_ok),
                f"reported pair: {worst} (largest |mean|); every pair's interval must cover 0",
                per_pair=per_pair, interval="paired by (seed, step, prompt, group, axis); batch bootstrap over "
                "(seed, step)")


def _entries_ratio(w: np.ndarray, raw: np.ndarray, batch: np.ndarray) -> tuple:
    idx = np.arange(w.size, dtype=float)
    stat = lambda v: float(w[v.astype(int)].sum() / raw[v.astype(int)].sum())  # noqa: E731
    bs = bootstrap_stat(idx, batch, stat, n_boot=N_BOOT)
    return float(w.sum() / raw.sum()), bs["ci_low"], bs["ci_high"]


def _within_c(cr) -> dict:
    """Over the arm-C runs' licences: effective / undiscounted weight (what A's rule would give the same
    licences; < 1 whenever C licenses through an abstention) and the new entries' oracle pass rate."""
    g = {k: np.concatenate([np.asarray(r["gates"][k], dtype=object) for r in cr]) for k in
         ("step", "channel", "weight", "raw_weight", "recheck")}
    batch = np.concatenate([np.array([f"{i}:{s}" for s in r["gates"]["step"]], dtype=object) for i, r in enumerate(cr)])
    w, raw = g["weight"].astype(float), g["raw_weight"].astype(float)
    if w.size == 0 or raw.sum() <= 0:
        return {"n_licences": 0}
    ratio, lo, hi = _entries_ratio(w, raw, batch)
    new = g["channel"] == "abstention"
    rc = np.array([x for x in g["recheck"][new] if x is not None], dtype=float)
    p = float(rc.mean()) if rc.size else float("nan")
    plo, phi_ = wilson_interval(p, rc.size) if rc.size else (float("nan"), float("nan"))
    return {"n_licences": int(w.size), "effective_over_undiscounted": ratio, "ratio_ci": [lo, hi],
            "n_new_entries": int(new.sum()), "new_share_of_raw_weight": float(raw[new].sum() / raw.sum()),
            "new_effective_over_raw": finite(w[new].sum() / raw[new].sum()) if new.any() else None,
            "new_pass_rate": finite(p), "new_pass_ci": [finite(plo), finite(phi_)], "n_rechecked": int(rc.size)}


def _step_means(sc: dict, col: str) -> Dict[int, float]:
    acc: Dict[int, list] = {}
    for s, v in zip(sc["step"], sc[col]):
        acc.setdefault(int(s), []).append(0.0 if v is None else float(v))
    return {s: float(np.mean(v)) for s, v in acc.items()}


def _no_drop(pairs) -> dict:
    """C - A held-out accuracy per seed (the held-out family where ``train_exclude`` names one, else
    the whole held-out set); a drop = the t interval over seeds lies wholly below 0."""
    from coevo.experiments.claims import seed_interval

    use = "family" if all(c["heldout"].get("family") is not None and a["heldout"].get("family") is not None
                          for c, a in pairs) else "overall"
    d = [c["heldout"][use] - a["heldout"][use] for c, a in pairs
         if c["heldout"].get(use) is not None and a["heldout"].get(use) is not None]
    if not d:
        return {"tested": False, "why": "no summary.json with held-out accuracy"}
    est = seed_interval(d)
    drop = bool(est.get("ci_high") is not None and np.isfinite(est.get("ci_high", np.nan)) and est["ci_high"] < 0)
    name = pairs[0][0]["heldout"].get("family_name") if use == "family" else "the whole held-out set"
    return {"tested": len(d) >= 2, "set": name, "n_prompts": pairs[0][0]["heldout"].get("n_family") if use == "family"
            else None, "differences": d, "mean": est["estimate"], "ci": [est.get("ci_low"), est.get("ci_high")],
            "drop": drop}


def _p3(runs) -> dict:
    """CASA-P3 as the CASA proposal states it: C's discounted effective licensed weight against A's
    undiscounted weight, on the same prompts (runs at the same seed), per (rollout, axis) row and step;
    plus "no drop" on a held-out set the student is not trained on, and the new entries' oracle pass rate.
    On identical rollouts C's weight is >= A's (C's gate set contains A's, its failure entries are not
    discounted), so the statistic falls below 0 only through what training did to the two students."""
    cr = [r for r in runs if r["arm"] == "C"]
    if not cr:
        return _na("CASA-P3", f"needs an arm-C run (casa.arm=C); arms given: {sorted({r['arm'] for r in runs})}")
    a_by_seed = {r["seed"]: r for r in runs if r["arm"] == "A"}
    pairs = [(c, a_by_seed[c["seed"]]) for c in cr if c["seed"] in a_by_seed]
    within = _within_c(cr)
    if not pairs:
        return _na("CASA-P3", "needs an arm-A run at the seed of an arm-C run (C's effective licensed weight is "
                   f"compared with A's undiscounted weight on the same prompts); within C: {_clean(within)}")
    d, cl = [], []
    for c, a in pairs:
        mc, ma = _step_means(c["scores"], "w_licensed"), _step_means(a["scores"], "w_licensed_raw")
        for s in sorted(set(mc) & set(ma)):
            d.append(mc[s] - ma[s])
            cl.append(f"{c['label']}:{c['seed']}:{s}")
    x = np.asarray(d)
    bs = bootstrap_stat(x, np.asarray(cl, dtype=object), lambda v: float(v.mean()), n_boot=N_BOOT)
    j = judge(float(x.mean()), bs["ci_low"], bs["ci_high"], ("<", 0.0),
              [(">=", 0.0, "C's discounted licences weigh at least as much as A's: the discount does not offset the "
                "entries C adds")])
    nd = _no_drop(pairs)
    verdict = j["verdict"]
    if nd.get("drop"):
        verdict = f"refuted: held-out accuracy drops ({nd['set']}: C - A {nd['mean']:+.3f}, interval below 0)"
    return _res("CASA-P3", float(x.mean()), bs["ci_low"], bs["ci_high"], x.size, "weight per (rollout, axis) row",
                verdict, j["line"], interval="batch bootstrap over (C run, seed, step) of mean(C effective) - "
                "mean(A undiscounted)", pairs=[f"{c['label']} vs A at seed {c['seed']}" for c, a in pairs],
                no_drop=nd, within_c=within,
                note="value < 0: C teaches less weight than A; the within-C ratio (what A's rule would give C's own "
                     "licences) is < 1 whenever C licenses through an abstention and is no test")


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
    if det is not None and jud is not None:
        # the one rule on the judge kinds' break rate against the 8 % line; refuted only with deterministic kinds at 0
        from coevo.audit.verdicts import decide

        verdict = decide(jud["rate"], jud["ci_low"], jud["ci_high"], 1, REFERENCE[0])
        if verdict == "refuted" and det["broken"] > 0:
            verdict = "inconclusive"
        line = ("failure: deterministic kinds break 0% and judge kinds < 8% ('the criteria bank is the scaling "
                "bottleneck' fails); supported: judge kinds' interval above 8%; ")
    else:
        verdict, line = "not evaluable: needs both deterministic and judge kinds", ""
    line += "per kind vs the 8-26% reference: " + ", ".join(f"{k} {v['vs_reference']}" for k, v in sorted(rates.items()))
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
