"""`coevo audit RUN_DIR...`: the instruments of coevo.audit.instruments over run ledgers.

Each instrument is computed from arrays that ledger views return (SQL stays in
coevo/ledger/views.py) by the pure functions of coevo.audit.instruments / stats / nullmodel.
An instrument the run's data cannot support is reported as ``unavailable`` with the reason,
never silently dropped. See docs/audit.md for definitions, source columns and intervals.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from coevo.audit.false_agreement import answers_equivalent, false_agreement_from_flags
from coevo.audit.instruments import (
    abstention_share, bearing_indicator, kappa_bar, kappa_indicator, lag_bar,
    lag_values, nu_indicators, pseudo_label_accuracy, seed_range, solver_majority, top_quartile_enrichment,
)
from coevo.audit.nullmodel import invert_null_model, null_fit_error, null_model_shares
from coevo.audit.stats import (
    Z95, Estimate, binomial_se, bootstrap_stat, clustered_se, interval_estimate, per_step_means, wilson_interval,
)
from coevo.audit.data import (
    AuditError, collect, finite, float_array, open_ledger, read_config, screen_groups,
)
from coevo.ledger import views
from coevo.ledger.store import Ledger

__all__ = ["AuditError", "audit_run", "audit_runs", "assemble_run", "HEADLINE"]

# headline numbers whose seed-to-seed range is reported when several seeds of one recipe/arm are given
HEADLINE = ("bearing_rate", "productive_rate_replicated", "kappa_bar", "nu_bar", "lag", "pseudo_label_accuracy",
            "false_agreement_mass", "eval_accuracy")


# ---------------------------------------------------------------------- small helpers
def _ok(label: str, est: Estimate, source: str, interval: str, note: str = "", **extra) -> Dict[str, Any]:
    ex = {k: v for k, v in est.extra.items()}
    interval = ex.pop("interval_method", interval)
    ex.update(extra)
    return {"label": label, "status": "ok", "value": finite(est.value), "se": finite(est.se), "ci_low": finite(est.ci_low),
            "ci_high": finite(est.ci_high), "n": int(est.n), "interval": interval, "source": source, "note": note,
            "extra": _jsonable(ex)}


def _na(label: str, reason: str, source: str = "") -> Dict[str, Any]:
    return {"label": label, "status": "unavailable", "reason": reason, "source": source}


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return finite(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


# ---------------------------------------------------------------------- instruments on one run
def instruments_for(d: dict, recipe: str, doubt_stable: float = 0.75) -> Dict[str, dict]:
    """All instruments of one run from ``collect``'s arrays."""
    out: Dict[str, dict] = {}
    sc = screen_groups(d)
    ts = d["task_stats"]
    # -- bearing rate
    if sc is None or sc["mu"].size == 0:
        out["bearing_rate"] = _na("bearing rate P[0<mu<1]", "no solver answer groups judged against an oracle and no "
                                  "task_stats screen groups in this ledger")
    else:
        g = bearing_indicator(sc["mu"]).astype(float)
        est = interval_estimate(g, sc["step"], sc["task"])
        est.extra["per_step"] = per_step_means(g, sc["step"])
        est.extra["k_values"] = sorted({int(x) for x in sc["k"]})
        out["bearing_rate"] = _ok("bearing rate P[0<mu<1]", est, sc["source"],
                                  "batch bootstrap (steps)")
        out["null_model"] = _null_model(sc)
    # -- kappa, nu, lag, productive rate (screen/confirm recipes only)
    why_ts = (f"recipe {recipe!r} writes no task_stats rows: it draws one group of answers per task, no confirm "
              "group, no reference answer and no before/after-update pair" if ts is None else "")
    out.update(_screen_confirm(ts, why_ts, doubt_stable))
    # -- pseudo-label accuracy
    out["pseudo_label_accuracy"] = _pseudo_label(d, ts)
    # -- false agreement mass
    out["false_agreement_mass"] = _ff(ts, recipe)
    # -- abstention share
    out["abstention_share"] = _phi(d)
    # -- enrichment
    out.update(_enrichment(d, sc, ts))
    # -- eval accuracy (headline for seed ranges)
    if d["eval_final"]:
        v = d["eval_final"]["overall"]
        n = d["eval_n"]
        se = binomial_se(v, n) if n else float("nan")
        out["eval_accuracy"] = _ok("solver eval accuracy (last round, greedy)", Estimate(v, se, v - Z95 * se, v + Z95 * se, n),
                                   "evals (held-out set, oracle)", "binomial Wald")
    else:
        out["eval_accuracy"] = _na("solver eval accuracy (last round, greedy)", "no completed round with an evaluation")
    return out


def _null_model(sc: dict) -> dict:
    label = "null-model fit (first / last bucket)"
    ks = sorted({int(x) for x in sc["k"]})
    if len(ks) != 1:
        return _na(label, f"groups have different sizes {ks}; the two-point null model needs one K")
    k = ks[0]
    steps = np.unique(sc["step"])
    if steps.size < 2:
        return _na(label, "needs at least two steps with answer groups (first and last bucket)")
    third = max(1, steps.size // 3)
    buckets = {"first": steps[:third], "last": steps[-third:]}
    res = {}
    for name, ss in buckets.items():
        sel = np.isin(sc["step"], ss)
        mu = sc["mu"][sel]
        tri = [float((mu == 1).mean()), float(bearing_indicator(mu).mean()), float((mu == 0).mean())]
        fit = null_fit_error(tri, k)
        inv = invert_null_model(*tri, k=k) if fit["error"] < 1e-3 else {"n_members": 0}
        res[name] = {"steps": [int(s) for s in ss], "n": int(sel.sum()), "observed": tri, "fit": fit,
                     "kappa_bar_range": [finite(inv.get("kappa_bar_min")), finite(inv.get("kappa_bar_max"))]
                     if inv.get("n_members") else None,
                     "predicted": list(null_model_shares(fit["w"], fit["p_hi"], fit["p_lo"], k))}
    err = max(res["first"]["fit"]["error"], res["last"]["fit"]["error"])
    est = Estimate(err, n=int(sc["mu"].size), extra={"k": k, "buckets": res})
    return _ok(label, est, "the bearing-rate groups: (all-correct, bearing, all-wrong) shares of the first and last "
               "third of steps", "none (P2 bootstraps it)",
               note="value = the larger max-abs error (share units) of the best two-point pool over the two buckets")


_SC_LABELS = {"kappa_bar": "kappa-bar (replication rate)", "productive_rate_replicated": "productive rate, "
              "replicated P[g1=1, g2=1]", "nu_bar": "nu-bar (reference-anchor miss rate)",
              "doubt_share": "reference-in-doubt share", "lag": "lag l-bar = mu_pre - mu_post"}


def _screen_confirm(ts: Optional[dict], why: str, stable: float = 0.75) -> Dict[str, dict]:
    """kappa-bar, the replicated productive rate, nu-bar, the doubt share and the lag over task_stats
    columns: the per-task indicators of coevo.audit.instruments with the audit's intervals."""
    if ts is None:
        return {k: _na(lab, why) for k, lab in _SC_LABELS.items()}
    step = float_array(ts["step"]).astype(int)
    task = np.asarray(ts["task_id"], dtype=object)
    out = _kappa(ts, step, task)
    out.update(_nu(ts, step, task, stable))
    out["lag"] = _lag(ts, step)
    return out


def _kappa(ts: dict, step: np.ndarray, task: np.ndarray) -> Dict[str, dict]:
    L, out = _SC_LABELS, {}
    s, c = float_array(ts["mu_screen"]), float_array(ts["mu_confirm"])
    sel, kap = kappa_indicator(s, c)
    g1 = bearing_indicator(s)
    if sel.sum() == 0:
        why_k = ("no task has both a mixed screen group and a confirm group (this arm draws no confirm group)"
                 if g1.any() else "no screen group was mixed (0 < mu_1 < 1)")
        out["kappa_bar"] = _na(L["kappa_bar"], why_k, "task_stats.mu_screen, mu_confirm")
        out["productive_rate_replicated"] = _na(L["productive_rate_replicated"], why_k, "task_stats")
        return out
    est = interval_estimate(kap, step[sel], task[sel])
    k_inst = kappa_bar(s, c)
    est.extra.update({"n_screened": k_inst.extra["n_screened"], "n_screen_bearing": k_inst.extra["n_screen_bearing"]})
    se_t = est.extra.get("se_task_clustered", float("nan"))
    se_t = se_t if np.isfinite(se_t) else est.extra["se_binomial"]
    v = est.value
    est.extra["ci_task_clustered"] = list(wilson_interval(v, v * (1 - v) / se_t ** 2 if 0 < v < 1 and se_t > 0
                                                          else float(est.n)))
    est.extra["per_step"] = per_step_means(kap, step[sel])
    out["kappa_bar"] = _ok(L["kappa_bar"], est, "task_stats.mu_screen, mu_confirm (only tasks with 0<mu_screen<1 "
                           "and a confirm group)", "batch bootstrap (steps)")
    scr = np.isfinite(s)
    drawn = np.where(g1, np.isfinite(c), True)
    if not drawn[scr].all():
        out["productive_rate_replicated"] = _na(L["productive_rate_replicated"],
                                                f"{int((~drawn[scr]).sum())} mixed screen groups have no confirm group")
        return out
    both = np.zeros(s.shape, dtype=float)  # P[g1 = 1 and g2 = 1]: kappa's indicator, 0 outside its domain
    both[sel] = kap
    pr = both[scr]
    e2 = interval_estimate(pr, step[scr], task[scr])
    e2.extra["per_step"] = per_step_means(pr, step[scr])
    out["productive_rate_replicated"] = _ok(L["productive_rate_replicated"], e2, "task_stats: 1[0<mu_screen<1 "
                                            "and 0<mu_confirm<1] over screened tasks", "batch bootstrap (steps)")
    return out


def _nu(ts: dict, step: np.ndarray, task: np.ndarray, stable: float) -> Dict[str, dict]:
    L = _SC_LABELS
    nu, s = float_array(ts["nu"]), float_array(ts["mu_screen"])
    mu = np.where(np.isfinite(float_array(ts["mu_tilde"])), float_array(ts["mu_tilde"]), s)
    dfn, miss, doubt = nu_indicators(nu, float_array(ts["mode_share"]), mu, stable)
    if dfn.sum() == 0:
        r = "no task with a nu value and 0 < mu < 1 (nu is defined only on mixed tasks with a reference answer)"
        return {"nu_bar": _na(L["nu_bar"], r, "task_stats.nu"),
                "doubt_share": _na(L["doubt_share"], r, "task_stats.nu, mode_share")}
    out = {}
    for key, x in (("nu_bar", miss), ("doubt_share", doubt)):
        est = interval_estimate(x, step[dfn], task[dfn], n_total=int(len(nu)))
        est.extra["per_step"] = per_step_means(x, step[dfn])
        if key == "doubt_share":
            rec = [v for v, ok in zip(ts["in_doubt"], dfn) if ok and v is not None]
            est.extra["recorded_in_doubt"] = int(sum(bool(v) for v in rec))
        out[key] = _ok(L[key], est, "task_stats.nu (1 = mode of the 2K answers equals the reference), mode_share, "
                       "mu_tilde (mu_screen if NULL); only 0 < mu < 1", "batch bootstrap (steps)")
    return out


def _lag(ts: dict, step: np.ndarray) -> dict:
    pre, post = float_array(ts["mu_pre"]), float_array(ts["mu_post"])
    ok, lag = lag_values(pre, post)
    if ok.sum() == 0:
        return _na(_SC_LABELS["lag"], "no task sampled both before and after the Reasoner update (mu_pre / mu_post "
                   "NULL)", "task_stats.mu_pre, mu_post")
    est = lag_bar(pre, post)
    bs = bootstrap_stat(lag, step[ok], lambda x: float(np.median(np.abs(x))))
    est.extra["median_abs_ci"] = [bs["ci_low"], bs["ci_high"]]
    est.extra["se_batch_clustered"] = clustered_se(lag, step[ok])
    est.extra["per_step"] = per_step_means(lag, step[ok])
    return _ok(_SC_LABELS["lag"], est, "task_stats.mu_pre, mu_post", "Wald (tasks); median: batch bootstrap")


def _pseudo_label(d: dict, ts: Optional[dict]) -> dict:
    """One definition (coevo.audit.instruments.pseudo_label_accuracy): the oracle verdict on each label.
    SynCo/RGBC: the Synthesizer's reference answer (task_stats.reference_correct); R-Zero: the kept
    majority-vote labels (the oracle verdict on a candidate rollout whose answer is the label)."""
    label = "pseudo-label accuracy vs oracle"
    if ts is not None and any(v is not None for v in ts["reference_correct"]):
        e = pseudo_label_accuracy(ts["reference_correct"], batches=float_array(ts["step"]).astype(int))
        return _ok("reference-answer accuracy vs oracle", e, "task_stats.reference_correct (the Synthesizer's reference "
                   "answer judged against the oracle)", "batch bootstrap (steps)")
    k = d["kept"]
    if not k["task_id"]:
        return _na(label, "no kept candidate tasks with a pseudo-label (the recipe writes no majority-vote labels)"
                   if ts is None else "task_stats.reference_correct is NULL everywhere (no oracle or judge)")
    v = k["label_verdict"]
    if all(x is None for x in v):
        return _na(label, "no oracle verdict for any kept pseudo-label (world without oracle; a judge would be needed)")
    e = pseudo_label_accuracy(v, batches=float_array(k["step"]).astype(int))
    rounds = np.asarray(k["round"], dtype=int)
    e.extra["per_round"] = []
    for r in np.unique(rounds):
        er = pseudo_label_accuracy([x for x, rr in zip(v, rounds) if rr == r])
        e.extra["per_round"].append({"round": int(r), "value": er.value, "n": er.n, "se": er.se,
                                     "n_unjudged": er.extra["n_unjudged"]})
    return _ok(label, e, "tasks source='candidate' AND kept: the oracle verdict on a candidate rollout whose answer "
               "is the pseudo-label (abstentions left out, counted in n_unjudged)", "batch bootstrap (steps)")


def _ff(ts: Optional[dict], recipe: str) -> dict:
    label = "false-agreement mass FF"
    if ts is None:
        return _na(label, f"recipe {recipe!r} has no proposer answer: the Challenger writes only a question, so "
                   "'proposer answer = solver majority != truth' is undefined (its label IS the solver majority)")
    pa, oracle, rc = ts["proposer_answer"], ts["oracle_answer"], ts["reference_correct"]
    if not any(p is not None for p in pa):
        return _na(label, "task_stats.proposer_answer is NULL everywhere (no proposer answer recorded)")
    n = len(pa)
    recorded = ts.get("solver_agrees") or [None] * n
    derived = [solver_majority(m, s, p) for m, s, p in zip(ts["mode_answer"], ts["mu_screen"], pa)]
    agree = [a if a is not None else (None if m is None else int(answers_equivalent(p, m)))
             for a, m, p in zip(recorded, derived, pa)]
    correct = [bool(r) if r is not None else (None if o is None or p is None else p == o)
               for r, o, p in zip(rc, oracle, pa)]
    if all(c is None for c in correct):
        return _na(label, "no truth for any task (no oracle answer, reference_correct NULL)")
    e = false_agreement_from_flags(agree, correct, batches=float_array(ts["step"]).astype(int),
                                   n_recorded_majority=sum(a is not None for a in recorded))
    return _ok(label, e, "task_stats: solver_agrees (the run verifier: solver majority over every screened task, "
               "mu_1 = 1 included, matches proposer_answer; ledgers without it: mode_answer, else mu_screen > 1/2 -> "
               "the reference, 0 -> not it, otherwise unknown) AND NOT reference_correct (else proposer_answer "
               "!= tasks.oracle_answer); coevo.audit.false_agreement", "batch bootstrap (steps)")


def _phi(d: dict) -> dict:
    label = "abstention share phi"
    vg = d["verdict_groups"]
    if not vg["n"]:
        return _na(label, "no verdicts in the ledger")
    keep = float_array(vg["n"]) > 0  # a group whose verdicts all failed at the endpoint has none to count
    n = float_array(vg["n"])[keep]
    na = float_array(vg["n_abstained"])[keep]
    r_t = float_array(vg["n_pass"])[keep] / n  # fixed-denominator score: abstentions count in W, not in the numerator
    est = abstention_share(na, n, r_t)
    est.extra["n_errors"] = int(float_array(vg["n_errors"]).sum())  # the judge's endpoint failed: not abstentions
    crit = any(c for c in vg["criterion_id"])
    est.extra["reasons"] = d["abstention_reasons"]
    est.extra["n_verdicts"] = int(n.sum())
    est.extra["n_abstained"] = int(na.sum())
    tg = np.array(vg["target"])[keep]
    est.extra["by_target"] = {t: float(na[tg == t].sum() / n[tg == t].sum()) for t in sorted(set(tg))}
    note = ("per (prompt, criterion) with unit weights" if crit else
            "no criteria in this run: groups are (task, verdict target, verifier kind), unit weights")
    return _ok(label, est, "verdicts: value NULL = abstention, grouped by (task, target, verifier_kind, criterion_id)",
               "Wald (groups)", note=note)


def _enrichment(d: dict, sc: Optional[dict], ts: Optional[dict]) -> Dict[str, dict]:
    label = "top-quartile enrichment"
    out = {}
    if ts is not None:
        rew, mu = float_array(ts["reward"]), float_array(ts["mu_screen"])
        c = float_array(ts["mu_confirm"])
        ok = np.isfinite(rew) & np.isfinite(mu) & np.isfinite(c)
        if ok.sum() >= 4 and bearing_indicator(c[ok]).any():
            est = top_quartile_enrichment(rew[ok], bearing_indicator(c[ok]).astype(float))
            out["enrichment_reward_vs_confirm"] = _ok(label + ": proposer reward vs confirm-group bearing", est,
                                                      "task_stats.reward, mu_confirm", "delta method")
        else:
            out["enrichment_reward_vs_confirm"] = _na(label + ": proposer reward vs confirm-group bearing",
                                                      "fewer than 4 tasks with reward and a confirm group, or none bearing")
        return out
    ch = d["proposals"]
    if sc is None or not ch["task_id"]:
        return {"enrichment": _na(label, "no scored proposer questions with oracle-judged answer groups")}
    mu_of = {t: m for t, m in zip(sc["task"], sc["mu"])}
    r_unc, rew, g = [], [], []
    for t, r, cj in zip(ch["task_id"], ch["reward"], ch["components_json"]):
        if t not in mu_of or r is None:
            continue
        comp = json.loads(cj) if cj else {}
        if "r_unc" not in comp:
            continue
        r_unc.append(comp["r_unc"]); rew.append(r); g.append(float(bearing_indicator(mu_of[t])))
    g_a = np.array(g)
    for key, name, s in (("enrichment_r_unc", "uncertainty reward r_unc", r_unc), ("enrichment_reward", "Challenger reward", rew)):
        lab = f"{label}: {name} vs oracle bearing"
        if len(g) < 4 or g_a.sum() == 0:
            out[key] = _na(lab, f"{len(g)} scored questions, {int(g_a.sum())} oracle-bearing: need >= 4 and >= 1")
            continue
        est = top_quartile_enrichment(np.array(s), g_a)
        if not np.isfinite(est.value):
            out[key] = _na(lab, "undefined (empty top quartile or no bearing task)")
            continue
        out[key] = _ok(lab, est, "rewards.components_json (role challenger) joined to the oracle groups of the same "
                       "question", "delta method",
                       note="ties broken by ledger order; the score is computed from self-consistency, g from the oracle")
    return out


# ---------------------------------------------------------------------- public API
def audit_run(run_dir: Path) -> dict:
    run_dir = Path(run_dir)
    led = open_ledger(run_dir)
    try:
        try:
            info = views.run_info(led)
        except Exception as e:
            raise AuditError(f"{run_dir}: {e}") from None
        run_id = info["run_id"]
        cfg = read_config(run_dir, info)
        d = collect(led, run_id)
    finally:
        led.close()
    return _assemble(run_dir, info, cfg, d)


def assemble_run(run_dir: Path, led: Ledger, run_id: str) -> dict:
    """The audit of one run from an already open ledger (the report uses this)."""
    info = views.run_info(led)
    return _assemble(Path(run_dir), info, read_config(Path(run_dir), info), collect(led, run_id))


def _assemble(run_dir: Path, info: dict, cfg: dict, d: dict) -> dict:
    recipe = info.get("recipe") or cfg.get("recipe") or "?"
    arms = sorted({a for a in d["task_stats"]["arm"] if a}) if d["task_stats"] is not None else []
    arm = ",".join(arms) if arms else recipe
    out = {"run_dir": str(run_dir), "run_id": info["run_id"], "recipe": recipe, "arm": arm,
           "seed": info.get("seed", cfg.get("seed")), "world": info.get("world"),
           "instruments": instruments_for(d, recipe, _doubt_stable(cfg))}
    if d.get("endpoint_errors"):  # calls to a model server or judge that failed: errors, never abstentions
        out["errors"] = d["endpoint_errors"]
    return out


def _doubt_stable(cfg: dict, default: float = 0.75) -> float:
    """The doubt bucket's stability threshold of whichever config section sets ``doubt_stable``."""
    return float(next((sec["doubt_stable"] for sec in cfg.values() if isinstance(sec, dict) and "doubt_stable" in sec),
                      default))


def _seed_ranges(runs: List[dict]) -> List[dict]:
    groups: Dict[tuple, List[dict]] = defaultdict(list)
    for r in runs:
        groups[(r["recipe"], r["arm"])].append(r)
    out = []
    for (recipe, arm), rs in groups.items():
        seeds = [r["seed"] for r in rs]
        entry = {"recipe": recipe, "arm": arm, "seeds": seeds, "runs": [r["run_dir"] for r in rs]}
        if len(set(seeds)) < 2:
            entry["status"] = "unavailable"
            entry["reason"] = (f"{len(rs)} run(s) of this recipe/arm with seed(s) {sorted(set(seeds))}: a seed-to-seed "
                               "range needs at least two different seeds")
        else:
            entry["status"] = "ok"
            entry["metrics"] = {}
            for key in HEADLINE:
                vals = [r["instruments"].get(key, {}) for r in rs]
                if all(v.get("status") == "ok" and v.get("value") is not None for v in vals):
                    est = seed_range([v["value"] for v in vals], labels=seeds)
                    entry["metrics"][key] = {"range": est.extra["range"], "min": est.extra["min"], "max": est.extra["max"],
                                             "mean": est.value, "se_across_seeds": finite(est.se),
                                             "per_seed": dict(zip([str(s) for s in seeds], est.extra["per_run"])),
                                             "per_seed_se": [v.get("se") for v in vals]}
        out.append(entry)
    return out


def audit_runs(run_dirs: Sequence[Path], predictions: bool = False, stress: Optional[Path] = None) -> dict:
    """Audit each run directory; seed-to-seed ranges per (recipe, arm); optionally the predictions each audited
    recipe declares (``RecipeInfo.predictions``, called with the run directories of the recipes that declare it
    and ``stress``: e.g. SynCo's / RGBC's P1-P6 of the RGBC proposal, VG-OPD's CASA-P1..P4, which read the JSON
    of ``coevo stress`` for CASA-P4, else a run directory's stress.json)."""
    if not run_dirs:
        raise AuditError("no run directory given")
    runs = [audit_run(Path(r)) for r in run_dirs]
    result = {"runs": runs, "seed_range": _seed_ranges(runs)}
    if predictions:
        result["predictions"] = recipe_predictions(run_dirs, runs, stress)
    return result


def recipe_predictions(run_dirs: Sequence[Path], runs: List[dict], stress: Optional[Path] = None) -> List[dict]:
    """The predictions of the audited runs' recipes (``runs.recipe``), one call per distinct
    ``RecipeInfo.predictions`` (recipes that share one, e.g. synco and rgbc, are evaluated together: P5 compares
    their arms), in the order they first appear; a recipe the registry does not know (an imported run) or that
    declares none adds nothing."""
    from coevo.core.registry import RecipeNotFound, get_recipe, load

    by_ref: Dict[object, List[Path]] = {}
    for d, r in zip(run_dirs, runs):
        try:
            ref = get_recipe(r["recipe"]).predictions
        except RecipeNotFound:
            continue
        if ref:
            by_ref.setdefault(ref, []).append(Path(d))
    out: List[dict] = []
    for ref, dirs in by_ref.items():
        out += load(ref)(dirs, stress)
    return out
