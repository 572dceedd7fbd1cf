"""The tables of ``coevo experiment casa-arms`` beside its claims (``coevo.recipes.vgopd.experiments``).

- **Runs**: per run held-out accuracy, mean phi, A's r and B's r~ against the oracle (r where defined), the
  number of (rollout, axis) rows whose r is undefined (counted, never imputed) and, named as such, the bias of
  arm A's training reward (undefined r -> 0), reversals, rejected licences, licensed weight;
- per world **phi per axis** (pooled over the world's runs): mean phi, the share of rows with phi > 0 and with
  phi = 1 (r undefined): the phi-matched null world must read like the consequential one here;
- per world the abstention reasons' oracle failure rates, the two heterogeneity tests and CASA-P1..P4 of
  ``coevo audit --predictions``.
"""
from __future__ import annotations

from typing import Optional

from coevo.recipes.vgopd.casa.consequences import chi2_homogeneity, run_consequences

FAMILY = "cm-mm"  # the held-out family: never drawn for training


def heldout(s: dict) -> float:
    return s["rounds"][-1]["solver_eval_accuracy"]["overall"]


def family(s: dict) -> Optional[float]:
    return s["rounds"][-1]["solver_eval_accuracy"].get("by_difficulty", {}).get(FAMILY)

__all__ = ["tables"]


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _arm_rows(runs) -> list:

    rows = []
    for arm in runs.arms:
        for s in runs.seeds(arm):
            c, sm = run_consequences(runs.run_dir(arm, s)), runs.summary(arm, s)
            r, ab = c["reversals"], c["gates"].get("abstention", {})
            fa = c["gates"].get("failure", {})
            rows.append([arm, s, f"{heldout(sm):.3f}", _fmt(family(sm), ".3f"), _fmt(c["phi_mean"], ".3f"),
                         _fmt(c["bias_r"], "+.4f"), f"{c['r_undefined']} of {c['rows']}", _fmt(c["bias_r_trained"], "+.4f"),
                         _fmt(c["bias_r_tilde"], "+.4f"),
                         f"{r['exact']} of {r['pairs']} ({r.get('r_tilde', 0)} / {r.get('r', 0)} / {r.get('tie', 0)})",
                         f"{fa.get('rejected', 0)}/{fa.get('rechecked', 0)}", f"{ab.get('rejected', 0)}/{ab.get('rechecked', 0)}",
                         _fmt(c["w_licensed_mean"], ".3f")])
    return rows


def _world_runs(runs, w: str) -> list:
    return [(a, s) for a in runs.arms if a.startswith(f"{w}-") for s in runs.seeds(a)]


def _phi_rows(runs, w: str) -> list:
    """Per axis, pooled over the world's runs (weighted by rows): mean phi, P(phi > 0), P(phi = 1), undefined r."""
    acc: dict = {}
    for a, s in _world_runs(runs, w):
        for axis, v in run_consequences(runs.run_dir(a, s))["phi_by_axis"].items():
            x = acc.setdefault(axis, [0, 0.0, 0.0, 0.0])
            x[0] += v["rows"]
            x[1] += v["phi_mean"] * v["rows"]
            x[2] += v["phi_any"] * v["rows"]
            x[3] += v["phi_all"] * v["rows"]
    return [[axis, n, f"{m / n:.4f}", f"{any_ / n:.4f}", f"{all_ / n:.4f}", round(all_)]
            for axis, (n, m, any_, all_) in sorted(acc.items()) if n]


def _confound_rows(runs, w: str) -> tuple:
    """Per reason n and oracle failure rate (pooled over the world's runs), and the two heterogeneity
    tests (over its arm-A runs: the arms of one seed share their first step's rollouts)."""
    reason: dict = {}
    tb: dict = {}
    fm: dict = {}
    for arm, s in _world_runs(runs, w):
        c = run_consequences(runs.run_dir(arm, s))
        for k, v in c["by_reason"].items():
            x = reason.setdefault(k, [0, 0])
            x[0], x[1] = x[0] + v["n"], x[1] + v["bad"]
        if arm != f"{w}-A":
            continue
        for src, dst in ((c["timeouts_by_length"], tb), (c["unparsable_by_format"], fm)):
            for k, v in src.items():
                x = dst.setdefault(k, [0, 0])
                x[0], x[1] = x[0] + v["k"], x[1] + v["n"]
    total = sum(v[0] for v in reason.values())
    r_rows = [[k, v[0], f"{v[0] / total:.4f}" if total else "", f"{v[1] / v[0]:.3f}" if v[0] else ""]
              for k, v in sorted(reason.items())]
    het = []
    for name, d in (("timeout vs answer length", tb), ("unparsable vs output format", fm)):
        t = chi2_homogeneity({k: tuple(v) for k, v in d.items()})
        rates = "; ".join(f"{k}: {v[0]}/{v[1]}" + (f" = {v[0] / v[1]:.3f}" if v[1] else "") for k, v in d.items())
        het.append([name, rates, f"{t['chi2']:.1f}", t["df"], f"{t['p']:.2g}"])
    return r_rows, het


RUN_HEAD = ["arm", "seed", "held-out acc", "cm-mm acc", "mean phi", "r - oracle (r defined)", "r undefined (rows)",
            "A's training reward - oracle (undefined r -> 0)", "r~ - oracle", "reversals (oracle: r~ / r / tie)",
            "failure licences rejected", "abstention licences rejected", "licensed weight / row"]


def tables(runs) -> dict:
    from coevo.recipes.vgopd.experiment_worlds import WORLDS
    from coevo.recipes.vgopd.predictions import evaluate_casa_predictions

    out = {"Runs": {"head": RUN_HEAD, "rows": _arm_rows(runs)}}
    for w, (label, _, _) in WORLDS.items():
        if not _world_runs(runs, w):
            continue
        out[f"{label} world: phi per axis (pooled over arms and seeds)"] = {
            "head": ["axis", "rows", "mean phi", "share phi > 0", "share phi = 1 (r undefined)", "r undefined"],
            "rows": _phi_rows(runs, w)}
        r_rows, het = _confound_rows(runs, w)
        out[f"{label} world: criterion checks by abstention reason (pooled over arms and seeds)"] = {
            "head": ["reason", "n checks", "share of checks (phi per check)", "oracle failure rate"], "rows": r_rows}
        out[f"{label} world: heterogeneity (chi-square of homogeneity; arm A, distinct checks)"] = {
            "head": ["test", "rates per stratum", "chi2", "df", "p"], "rows": het}
        preds = evaluate_casa_predictions([runs.run_dir(a, s) for a, s in _world_runs(runs, w)])
        out[f"{label} world: coevo audit --predictions"] = {
            "head": ["P", "value [95 % interval]", "n", "verdict"],
            "rows": [[p["id"], _fmt_pred(p), p.get("n", ""), p.get("verdict", p.get("reason", ""))] for p in preds]}
    return out


def _fmt_pred(p: dict) -> str:
    if p.get("status") != "evaluated":
        return p.get("status", "")
    v, lo, hi = p.get("value"), p.get("ci_low"), p.get("ci_high")
    f = lambda x: "nan" if x is None else f"{x:.4g}"  # noqa: E731
    return f"{f(v)} [{f(lo)}, {f(hi)}]"
