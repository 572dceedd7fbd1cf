"""`coevo reanalyze synco`: re-derive the RGBC proposal's analysis from SynCo's published numbers.

The numbers live in coevo/data/synco_published.yaml; this module only does arithmetic on
them: null-model fits of the first and last buckets (RGBC proposal §background), the existence
inversion family with the kappa-bar range it implies, binomial SEs of Table 3 and the
difference in SE units, top-quartile enrichment with its SE (Figure 3), the Table 7 tier
arithmetic, and the Figure 5 / Table 1 / Table 2 ratios. Every check that fails to
reproduce a number stated in the RGBC proposal or the paper is listed under ``discrepancies``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from coevo.audit.instruments import enrichment_se
from coevo.audit.nullmodel import (
    bearing_probability, expected_kappa, expected_teachability, invert_null_model,
    null_model_shares,
)
from coevo.audit.stats import binomial_se, difference_se

__all__ = ["load_published", "reanalyze_synco", "print_reanalysis"]

K = 4


DATA_FILE = Path(__file__).resolve().parents[2] / "data" / "synco_published.yaml"  # shared with coevo simulate


def load_published(path: Optional[Path] = None) -> Dict[str, Any]:
    """Load the published SynCo numbers (default: coevo/data/synco_published.yaml)."""
    return yaml.safe_load(Path(path or DATA_FILE).read_text(encoding="utf-8"))


def _r(x: float, nd: int = 4) -> float:
    return float(round(float(x), nd))


def _pp(x: float) -> float:
    """fraction -> percentage points rounded to 0.1, the precision the paper prints."""
    return float(round(100 * float(x) + 1e-9, 1))


def _triple(d: Dict[str, float]) -> List[float]:
    return [d["all_correct"], d["bearing"], d["all_wrong"]]


def _fit(params: Dict[str, float], observed: List[float]) -> Dict[str, Any]:
    pred = null_model_shares(params["w"], params["p_hi"], params["p_lo"], K)
    err = [p - o for p, o in zip(pred, observed)]
    return {
        "params": params,
        "predicted": [_r(x, 5) for x in pred],
        "predicted_pct": [_pp(x) for x in pred],
        "max_abs_error_pp": _r(100 * max(abs(e) for e in err), 3),
        "reproduces_to_0.1pp": [_pp(x) for x in pred] == [_pp(x) for x in observed],
        "kappa_bar": _r(expected_kappa([params["w"], 1 - params["w"]], [params["p_hi"], params["p_lo"]], K)),
    }


def _family_summary(observed: List[float]) -> Dict[str, Any]:
    inv = invert_null_model(*observed, k=K)
    fam = inv["family"]
    if not fam:
        return {"n_members": 0}
    ws = [f["w"] for f in fam]
    los = [f["p_lo"] for f in fam]
    his = [f["p_hi"] for f in fam]
    b = observed[1]
    mids = [(f["w"] * 6 * f["p_hi"] ** 2 * (1 - f["p_hi"]) ** 2
             + (1 - f["w"]) * 6 * f["p_lo"] ** 2 * (1 - f["p_lo"]) ** 2) / b for f in fam]
    teach = [f["w"] * expected_teachability(f["p_hi"], K) + (1 - f["w"]) * expected_teachability(f["p_lo"], K)
             for f in fam]
    return {
        "n_members": len(fam),
        "p_hi_range": [_r(min(his)), _r(max(his))],
        "p_lo_range": [_r(min(los)), _r(max(los))],
        "w_range": [_r(min(ws)), _r(max(ws))],
        "kappa_bar_range": [_r(inv["kappa_bar_min"]), _r(inv["kappa_bar_max"])],
        "mid_share_given_bearing_range": [_r(min(mids)), _r(max(mids))],
        "mean_teachability_range": [_r(min(teach)), _r(max(teach))],
        "frontier_possible": bool(inv["kappa_bar_max"] >= bearing_probability(0.75, K)),
        "note": "one-parameter family of two-point pools (3 parameters, 2 constraints); "
                "kappa-bar range is over two-point pools only",
    }


def _null_models(d: Dict[str, Any], disc: List[str], findings: List[str]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    buckets = d["buckets_fig2"]
    fits = d["seed000_fits"]
    for name in ("first", "last"):
        obs = _triple(buckets[name])
        fit = _fit(fits[name], obs)
        orig = _fit(fits["original_rounded"][name], obs)
        fam = _family_summary(obs)
        t_rep = buckets["teachability_mean"][name]
        b = obs[1]
        implied_mid = 2 * t_rep / b - 1  # mean T = b (1/2 + s/2) at K = 4
        fw = fits[name]
        pred_t = fw["w"] * expected_teachability(fw["p_hi"], K) + (1 - fw["w"]) * expected_teachability(fw["p_lo"], K)
        out[name] = {
            "observed": obs,
            "seed_fit": fit,
            "original_rounded_fit": orig,
            "family": fam,
            "teachability_check": {
                "reported_mean_T": t_rep,
                "seed_fit_mean_T": _r(pred_t),
                "family_mean_T_range": fam.get("mean_teachability_range"),
                "implied_mid_share_given_bearing": _r(implied_mid),
                "family_mid_share_given_bearing_range": fam.get("mid_share_given_bearing_range"),
                "note": "third constraint not used by the RGBC proposal; assumes Fig. 2(b)'s teachability is the "
                        "mean of T(mu) over the same bucket (gates G <= 1 would only raise the implied share)",
            },
        }
        if not fit["reproduces_to_0.1pp"]:
            disc.append(f"null model, {name} bucket: seed parameters give {fit['predicted_pct']} not "
                        f"{[_pp(x) for x in obs]}")
        fmin, fmax = fam["mean_teachability_range"]
        if not (fmin - 0.0005 <= t_rep <= fmax + 0.0005):
            findings.append(
                f"null model, {name} bucket: two-point pools reproducing the triple predict mean T "
                f"{fmin:.3f}-{fmax:.3f}, not the reported {t_rep:.3f} (P[mu=1/2|g=1] implied "
                f"{implied_mid:.3f} vs {fam['mid_share_given_bearing_range'][0]:.3f}-"
                f"{fam['mid_share_given_bearing_range'][1]:.3f}); if Fig. 2(b) is mean T(mu) over the "
                f"same bucket, the pure bimodal null does not fit all three published numbers")
    # the RGBC proposal's own correction note: "0.033 / 0.079 reproduce as 30.7 / 31.4"
    o_last = out["last"]["original_rounded_fit"]["predicted_pct"][2]
    o_first = out["first"]["original_rounded_fit"]["predicted_pct"][1]
    out["seed_correction_note"] = {
        "claimed": {"last_all_wrong_with_0.033": 30.7, "first_bearing_with_0.079": 31.4},
        "recomputed": {"last_all_wrong_with_0.033": o_last, "first_bearing_with_0.079": o_first},
        "first_bearing_with_0.079_and_p_hi_0.90": _pp(null_model_shares(0.524, 0.90, 0.079, K)[1]),
    }
    if o_first != 31.4:
        disc.append(
            f"the RGBC proposal's correction note says p_lo = 0.079 reproduces the first bucket's bearing as 31.4%; "
            f"with p_hi = 0.9001 it gives {o_first}% (exact {100 * null_model_shares(0.524, 0.9001, 0.079, K)[1]:.3f}%), "
            f"so the first-bucket correction was not needed; 31.4% only appears if p_hi is also rounded to 0.90")
    if o_last != 30.7:
        disc.append(f"the RGBC proposal's note: p_lo = 0.033 gives all-wrong {o_last}%, not 30.7%")
    pool = d["pool_table5"]
    pobs = [pool["all_correct"]["count"] / pool["n"], pool["bearing"]["count"] / pool["n"],
            pool["all_wrong"]["count"] / pool["n"]]
    out["pool_table5"] = {"observed": [_r(x, 5) for x in pobs], "family": _family_summary(pobs)}
    tiers = d["table7_tiers"]
    out["table7_tiers"] = {t: {"observed": _triple(tiers[t]), "family": _family_summary(_triple(tiers[t]))}
                           for t in ("learnable", "hard")}
    return out


def _table3(d: Dict[str, Any], disc: List[str]) -> Dict[str, Any]:
    t = d["table3"]
    n = t["n_per_arm"]
    steps = t["steps"][1] - t["steps"][0] + 1
    p0, p1 = t["baseline"]["productive"], t["synco"]["productive"]
    se0, se1 = binomial_se(p0, n), binomial_se(p1, n)
    sed = difference_se(p0, n, p1, n)
    out = {
        "n_per_arm": n,
        "n_check": {"steps": steps, "steps_x_32": steps * d["setup"]["tasks_per_round"]},
        "se_baseline_pp": _r(100 * se0, 3), "se_synco_pp": _r(100 * se1, 3),
        "diff_pp": _r(100 * (p1 - p0), 3), "se_diff_pp": _r(100 * sed, 3),
        "diff_in_se_units": _r((p1 - p0) / sed, 3),
        "per_batch": {"baseline": _r(32 * p0, 3), "synco": _r(32 * p1, 3),
                      "reported": [t["baseline"]["per_batch"], t["synco"]["per_batch"]]},
        "subitems_sum": {"baseline": _r(t["baseline"]["learnable"] + t["baseline"]["mid_band"], 4),
                         "synco": _r(t["synco"]["learnable"] + t["synco"]["mid_band"], 4)},
        "ci95_diff_pp": [_r(100 * (p1 - p0 - 1.959964 * sed), 2), _r(100 * (p1 - p0 + 1.959964 * sed), 2)],
        "note": "independent-binomial SEs; tasks in one batch share the Synthesizer, so these are lower bounds",
    }
    if steps * d["setup"]["tasks_per_round"] != n:
        disc.append(f"Table 3: {steps} steps x 32 = {steps * 32}, not {n}")
    for arm, p in (("baseline", p0), ("synco", p1)):
        if round(32 * p, 2) != t[arm]["per_batch"]:
            disc.append(f"Table 3 {arm}: 32 x {p} = {32 * p:.3f}, reported {t[arm]['per_batch']}")
    return out


def _enrichment(d: Dict[str, Any], disc: List[str]) -> Dict[str, Any]:
    e = d["fig3_enrichment"]
    pool = d["pool_table5"]
    n = pool["n"]
    prev_count = pool["bearing"]["count"]
    prev = prev_count / n
    n_top = int(round(0.25 * n))
    out: Dict[str, Any] = {"n_pool": n, "n_top": n_top, "pool_prevalence": _r(prev, 5),
                           "ceiling_fold": _r(min(4.0, 1 / prev), 3), "scores": {}}
    for name, row in e["top_quartile"].items():
        rate = row["rate"]
        bearing_top = rate * n_top
        p_rest = max(prev_count - bearing_top, 0.0) / (n - n_top)
        fold = rate / prev
        fold_reported_prev = rate / e["pool_prevalence"]
        r = {
            "rate": rate, "se_rate_pp": _r(100 * binomial_se(rate, n_top), 3),
            "fold": _r(fold, 3), "fold_vs_16.2": _r(fold_reported_prev, 3),
            "se_fold_nested": _r(enrichment_se(rate, n_top, p_rest, n - n_top), 4),
            "se_fold_pool_fixed": _r(binomial_se(rate, n_top) / prev, 4),
            "bearing_tasks_in_top": _r(bearing_top, 1), "recall": _r(bearing_top / prev_count, 4),
            "implied_rest_rate": _r(p_rest, 5),
            "below_prevalence": bool(rate < prev),
        }
        if "reported_fold" in row:
            r["reported_fold"] = row["reported_fold"]
            if round(fold, 1) != row["reported_fold"]:
                disc.append(f"Figure 3 {name}: {rate}/{prev:.4f} = {fold:.2f}, reported {row['reported_fold']}x")
            elif round(fold_reported_prev, 1) != row["reported_fold"]:
                r["fold_note"] = (f"{rate}/{e['pool_prevalence']} = {fold_reported_prev:.3f} rounds to "
                                  f"{round(fold_reported_prev, 1)}; the reported {row['reported_fold']}x uses the "
                                  f"unrounded prevalence {prev_count}/{n} ({fold:.3f})")
        out["scores"][name] = r
    t_only = out["scores"].get("teachability_only")
    if t_only:
        out["teachability_at_ceiling"] = bool(abs(t_only["bearing_tasks_in_top"] - prev_count) < 1.0)
        out["note"] = ("T(mu) > 0 iff 0 < mu < 1, so ranking by teachability puts every bearing task first: "
                       f"with prevalence {prev:.3f} < 0.25 the top quartile holds all {prev_count} "
                       f"({prev_count}/{n_top} = {prev_count / n_top:.4f}); 4.0x is the ceiling, by construction")
    return out


def _table7(d: Dict[str, Any], disc: List[str]) -> Dict[str, Any]:
    t = d["table7_tiers"]
    pool = d["pool_table5"]
    n_tiers = sum(t[k]["n"] for k in ("learnable", "middle", "hard"))
    weighted = sum(t[k]["n"] * t[k]["bearing"] for k in ("learnable", "middle", "hard")) / n_tiers
    L = t["learnable"]
    tp = L["n"] * L["bearing"]
    n = pool["n"]
    pos = pool["bearing"]["count"]
    prec = L["bearing"]
    recall = tp / pos
    phi = (n * tp - L["n"] * pos) / math.sqrt(L["n"] * (n - L["n"]) * pos * (n - pos))
    out: Dict[str, Any] = {
        "n_tiers": n_tiers, "n_pool": n, "untiered": n - n_tiers,
        "weighted_bearing": _r(weighted, 4), "pool_bearing": _r(pos / n, 4),
        "shares_sum": {k: _r(sum(_triple(t[k])), 4) for k in ("learnable", "hard")},
        "bearing_se_pp": {k: _r(100 * binomial_se(t[k]["bearing"], t[k]["n"]), 3)
                          for k in ("learnable", "middle", "hard")},
        "learnable_vs_hard_bearing_diff_se_units": _r(
            (L["bearing"] - t["hard"]["bearing"]) / difference_se(L["bearing"], L["n"], t["hard"]["bearing"], t["hard"]["n"]), 3),
        "implied_mean_mu_given_bearing": {
            k: _r((t[k]["mean_sr"] - t[k]["all_correct"]) / t[k]["bearing"], 4) for k in ("learnable", "hard")},
        "learnable_as_predictor": {
            "precision": _r(prec, 4), "recall": _r(recall, 4), "phi_r": _r(phi, 4),
            "reported": t["learnable_as_predictor"],
        },
    }
    rep = t["learnable_as_predictor"]
    if round(recall, 3) != rep["recall"]:
        disc.append(f"Table 7: recall {recall:.4f}, reported {rep['recall']}")
    if round(phi, 3) != rep["r"]:
        disc.append(f"Table 7: phi coefficient {phi:.4f}, reported r = {rep['r']}")
    for k in ("learnable", "hard"):
        m = out["implied_mean_mu_given_bearing"][k]
        if not 0.25 <= m <= 0.75:
            disc.append(f"Table 7 {k}: implied mean mu among bearing tasks {m} outside [0.25, 0.75]")
    return out


def _ratios(d: Dict[str, Any], disc: List[str]) -> Dict[str, Any]:
    f5 = d["fig5_sources"]
    ratios = {k: _r(f5["synco"] / f5[k], 3) for k in ("metamathqa", "scalequest_math", "openmathinstruct2")}
    lo, hi = min(ratios.values()), max(ratios.values())
    rep = f5["reported_fold_range"]
    if round(lo, 1) != rep[0] or round(hi, 1) != rep[1]:
        disc.append(f"Figure 5: fold range is {lo:.2f}-{hi:.2f} (rounds to {round(lo, 1)}-{round(hi, 1)}x), "
                    f"reported {rep[0]}-{rep[1]}x (22.8/4.1 = {f5['synco'] / f5['metamathqa']:.3f}: truncated, not rounded)")
    t1 = d["table1"]
    deltas = {k: _r(t1["synco"] - t1[k], 2) for k in t1["reported_deltas"]}
    for k, v in deltas.items():
        if abs(v - t1["reported_deltas"][k]) > 1e-9:
            disc.append(f"Table 1: {k} delta {v}, reported {t1['reported_deltas'][k]}")
    t2 = d["table2_learn_retain"]
    t2c = {k: {"learn_plus_retain": v["learn"] + v["retain"], "net": v["net"],
               "learn_share_of_net": _r(v["learn"] / v["net"], 3)} for k, v in t2.items()}
    for k, v in t2c.items():
        if v["learn_plus_retain"] != v["net"]:
            disc.append(f"Table 2 {k}: learn + retain = {v['learn_plus_retain']}, net {v['net']}")
    return {"fig5_folds": ratios, "fig5_fold_range": [lo, hi], "fig5_reported": rep,
            "fig5_note": "observed-rate ratios; under the bimodal limit they overstate true-bearing ratios "
                         "(RGBC proposal §method step 4): report per-source kappa-bar ratios instead",
            "table1_deltas": deltas, "table2": t2c}


def reanalyze_synco(path: Optional[Path] = None) -> Dict[str, Any]:
    """Re-derive the RGBC proposal's analysis of SynCo's published numbers; returns a JSON-able dict."""
    d = load_published(path)
    disc: List[str] = []
    findings: List[str] = []
    pool = d["pool_table5"]
    result: Dict[str, Any] = {
        "source": d["source"],
        "k": K,
        "decision_lines": {
            "m4_at_0.5": bearing_probability(0.5, K),
            "m4_at_0.95": _r(bearing_probability(0.95, K), 5),
            "frontier_kappa_min_m4_at_0.75": _r(bearing_probability(0.75, K), 4),
            "noise_kappa_max_m4_at_0.9": _r(bearing_probability(0.9, K), 4),
            "note": "kappa-bar >= 0.68 if every p lies in [.25, .75]; <= 0.344 if every p lies outside (.1, .9)",
        },
        "null_model": _null_models(d, disc, findings),
        "table3": _table3(d, disc),
        "p1_resolution": {
            "n_bearing": pool["bearing"]["count"],
            "se_pp_at_0.5": _r(100 * binomial_se(0.5, pool["bearing"]["count"]), 3),
            "se_pp_at_0.45": _r(100 * binomial_se(0.45, pool["bearing"]["count"]), 3),
            "se_pp_at_0.70": _r(100 * binomial_se(0.70, pool["bearing"]["count"]), 3),
            "budget_increment": _r(pool["bearing"]["count"] / pool["n"], 4),
        },
        "enrichment": _enrichment(d, disc),
        "table7": _table7(d, disc),
        "ratios": _ratios(d, disc),
    }
    t5 = pool
    for key in ("bearing", "all_wrong", "all_correct"):
        if round(t5[key]["count"] / t5["n"], 3) != t5[key]["share"]:
            disc.append(f"Table 5 {key}: {t5[key]['count']}/{t5['n']} = {t5[key]['count'] / t5['n']:.4f}, "
                        f"reported {t5[key]['share']}")
    en = result["enrichment"]
    if en.get("teachability_at_ceiling"):
        findings.append("Figure 3: teachability-only top quartile = 475/735 = 64.6%, i.e. every bearing task; "
                        "4.0x is the ceiling min(1/q, 1/prevalence), forced by construction (T > 0 iff 0 < mu < 1)")
    for name, r in en["scores"].items():
        if r["below_prevalence"]:
            findings.append(f"Figure 3: {name} top quartile ({100 * r['rate']:.1f}%) is below the pool prevalence "
                            f"({r['fold']:.2f}x, {(1 - r['fold']) / r['se_fold_nested']:.1f} SE below 1)")
    t3 = result["table3"]
    findings.append(f"Table 3: +{t3['diff_pp']:.1f} pp = {t3['diff_in_se_units']:.2f} SE "
                    f"(SE of difference {t3['se_diff_pp']:.2f} pp, a lower bound under batch clustering)")
    result["discrepancies"] = disc
    result["findings"] = findings
    return result


def print_reanalysis(result: Dict[str, Any]) -> None:
    """Rich tables of :func:`reanalyze_synco` to stdout."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console()
    nm = result["null_model"]
    t = Table(title="Bimodal null model (RGBC proposal §background), K = 4")
    for c in ("bucket", "observed %", "seed fit (w, p_hi, p_lo)", "predicted %", "max err pp",
              "kappa-bar", "family kappa-bar range", "mean T: reported / family"):
        t.add_column(c)
    for name in ("first", "last"):
        b = nm[name]
        f = b["seed_fit"]
        p = f["params"]
        t.add_row(name, " / ".join(f"{100 * x:.1f}" for x in b["observed"]),
                  f"{p['w']}, {p['p_hi']}, {p['p_lo']}", " / ".join(f"{x:.1f}" for x in f["predicted_pct"]),
                  f"{f['max_abs_error_pp']:.3f}", f"{f['kappa_bar']:.3f}",
                  "{:.3f}–{:.3f}".format(*b["family"]["kappa_bar_range"]),
                  "{:.3f} / {:.3f}–{:.3f}".format(b["teachability_check"]["reported_mean_T"],
                                                  *b["teachability_check"]["family_mean_T_range"]))
    for name, b in [("pool (T5)", nm["pool_table5"])] + [(f"tier {k}", v) for k, v in nm["table7_tiers"].items()]:
        fam = b["family"]
        t.add_row(name, " / ".join(f"{100 * x:.1f}" for x in b["observed"]), "—", "—", "—", "—",
                  "{:.3f}–{:.3f}".format(*fam["kappa_bar_range"]), "—")
    con.print(t)

    t3 = result["table3"]
    t = Table(title="Table 3 productive rate (n = %d per arm)" % t3["n_per_arm"])
    for c in ("SE baseline pp", "SE SynCo pp", "diff pp", "SE diff pp", "diff / SE", "95% CI pp"):
        t.add_column(c)
    t.add_row(f"{t3['se_baseline_pp']:.2f}", f"{t3['se_synco_pp']:.2f}", f"{t3['diff_pp']:.2f}",
              f"{t3['se_diff_pp']:.2f}", f"{t3['diff_in_se_units']:.2f}",
              "{:.2f} .. {:.2f}".format(*t3["ci95_diff_pp"]))
    con.print(t)

    en = result["enrichment"]
    t = Table(title=f"Figure 3 top-quartile enrichment (n_top = {en['n_top']}, prevalence "
                    f"{100 * en['pool_prevalence']:.1f}%, ceiling {en['ceiling_fold']:.2f}x)")
    for c in ("score", "rate %", "SE pp", "fold", "reported", "SE fold (nested / pool fixed)", "recall"):
        t.add_column(c)
    for name, r in en["scores"].items():
        t.add_row(name, f"{100 * r['rate']:.1f}", f"{r['se_rate_pp']:.2f}", f"{r['fold_vs_16.2']:.2f}",
                  str(r.get("reported_fold", "—")), f"{r['se_fold_nested']:.3f} / {r['se_fold_pool_fixed']:.3f}",
                  f"{r['recall']:.3f}")
    con.print(t)

    t7 = result["table7"]
    lp = t7["learnable_as_predictor"]
    con.print(f"Table 7: tiers cover {t7['n_tiers']} of {t7['n_pool']} tasks; weighted bearing "
              f"{100 * t7['weighted_bearing']:.2f}% vs pool {100 * t7['pool_bearing']:.2f}%; learnable vs hard "
              f"bearing differ by {t7['learnable_vs_hard_bearing_diff_se_units']:.2f} SE; learnable as predictor: "
              f"precision {lp['precision']:.3f}, recall {lp['recall']:.3f}, r {lp['phi_r']:.4f}")
    r = result["ratios"]
    con.print("Figure 5 folds: " + ", ".join(f"{k} {v:.2f}x" for k, v in r["fig5_folds"].items()))
    con.print(f"P1 resolution: SE on n = {result['p1_resolution']['n_bearing']} at kappa 0.5 = "
              f"{result['p1_resolution']['se_pp_at_0.5']:.2f} pp; budget increment "
              f"{100 * result['p1_resolution']['budget_increment']:.1f}%")
    if result["findings"]:
        con.print("[bold]Findings:[/]")
        for s in result["findings"]:
            con.print(f"  • {escape(s)}", highlight=False)
    if result["discrepancies"]:
        con.print("[bold]Does not reproduce:[/]")
        for s in result["discrepancies"]:
            con.print(f"  • {escape(s)}", highlight=False)
