"""Teachable-quality report of a SynCo / RGBC run (RGBC proposal §predictions; docs/rgbc.md walks through it).

Per training step: the instruments kappa-bar, nu-bar and l-bar with intervals (coevo.audit),
and beside each the oracle truth of the arithmetic world (audit-only: true pass rates from many
extra samples). Also the validator/consensus funnel, the rollout budget (screen, confirm,
instrument, audit) with the bearing rate beside the confirm overhead, and nu's precision and
recall as a detector of wrong reference answers. Numbers are recomputed from ``task_stats``
and ``tasks`` rows; ``teachable.json`` in the run directory holds the same numbers.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from coevo.audit.screen_confirm import finite_mean, screen_confirm_metrics, screen_confirm_truth
from coevo.ledger import views
from coevo.report.plots import figure_html, plt, png_data_uri, table_html


def _f(x, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    return f"{x:.{nd}f}" if isinstance(x, (float, np.floating)) else str(x)


def _ci(e: dict | None) -> str:
    if not e or e.get("n", 0) == 0:
        return "-"
    lo, hi = e.get("ci_low"), e.get("ci_high")
    s = _f(e["value"])
    if lo is not None and np.isfinite(lo):
        s += f" [{_f(lo, 2)}, {_f(hi, 2)}]"
    return s + f" n={e['n']}"


def _pr(flag: list[bool], wrong: list[bool]) -> dict:
    """Precision and recall of a flag as a detector of wrong references."""
    f, w = np.asarray(flag, dtype=bool), np.asarray(wrong, dtype=bool)
    tp = int((f & w).sum())
    return {"flagged": int(f.sum()), "wrong": int(w.sum()), "true_positives": tp,
            "precision": tp / int(f.sum()) if f.sum() else None, "recall": tp / int(w.sum()) if w.sum() else None}


def _rows(led, run_id: str) -> list[dict]:
    cols = views.task_stats_columns(led, run_id)
    meta = views.source_tasks(led, run_id, "synthesizer")
    n = len(cols.get("task_id", []))
    rows = []
    for i in range(n):
        r = {k: v[i] for k, v in cols.items()}
        m = meta.get(r["task_id"], {}).get("meta", {})
        r.update({"p_ref": m.get("p_ref"), "p_ref_post": m.get("p_ref_post"),
                  "confirm_timing": m.get("confirm_timing"), "consensus_support": (m.get("consensus") or {}).get("support"),
                  "consensus_n": (m.get("consensus") or {}).get("n")})
        rows.append(r)
    return rows


def _block(rows: list[dict], k: int, band: tuple[float, float], stable: float, batches: bool = False) -> dict:
    """Counts, instruments and truths over a set of task_stats rows (one step, or the whole run, with
    batch-bootstrap intervals). Instruments and truths: coevo.audit.screen_confirm."""
    acc = [r for r in rows if r["mu_screen"] is not None]
    out: dict = {"n_tasks": len(rows), "n_validated": sum(1 for r in rows if r["validator_ok"]),
                 "n_consensus_rejected": sum(1 for r in rows if r["consensus_ok"] is False), "n_accepted": len(acc)}
    out["consensus_agreement"] = finite_mean([r["consensus_support"] / r["consensus_n"] for r in rows
                                              if r["consensus_n"]])
    if not acc:
        return out
    out["confirm_overhead"] = sum(1 for r in acc if r["mu_confirm"] is not None) / len(acc)
    m = screen_confirm_metrics(rows, stable, batches=batches)
    out.update({key: v for key, v in m.items() if v is not None})
    t = screen_confirm_truth(rows, k, band)
    for mine, theirs in _TRUTH_KEYS:
        if theirs in t:
            out[mine] = t[theirs]
    return out


_TRUTH_KEYS = (("kappa_true", "kappa_bar"), ("nu_true", "nu_bar"), ("lag_true", "lag_bar"),
               ("mid_band_true", "mid_band_share"), ("true_p_mean", "true_p_mean"),
               ("wrong_ref_true_accepted", "wrong_reference_rate_accepted"),
               ("wrong_ref_true_validated", "wrong_reference_rate_validated"))


def teachable_numbers(led, run_id: str) -> dict:
    """All numbers of the teachable-quality report, per step and for the whole run."""
    info = views.run_info(led)
    import yaml

    cfg = yaml.safe_load(info["config_yaml"] or "{}")
    sc, rc = cfg.get("synco", {}), cfg.get("rgbc", {})
    k = int(sc.get("k", 4))
    band = tuple(sc.get("mid_band", [0.25, 0.75]))
    stable = float(rc.get("doubt_stable", 0.75))
    rows = _rows(led, run_id)
    steps = sorted({r["step"] for r in rows})
    per_step = [{"step": s, **_block([r for r in rows if r["step"] == s], k, band, stable)} for s in steps]
    overall = _block(rows, k, band, stable, batches=True)
    # nu as a detector of wrong references (oracle)
    acc = [r for r in rows if r["mu_screen"] is not None and r["reference_correct"] is not None]
    nu_rows = [r for r in acc if r["nu"] is not None]
    det = {"domain": "tasks where nu is defined (screen-bearing, 2K answers)", "n_defined": len(nu_rows),
           "nu_miss": _pr([r["nu"] == 0.0 for r in nu_rows], [not r["reference_correct"] for r in nu_rows]),
           "in_doubt": _pr([bool(r["in_doubt"]) for r in nu_rows], [not r["reference_correct"] for r in nu_rows]),
           "in_doubt_all_accepted": _pr([bool(r["in_doubt"]) for r in acc], [not r["reference_correct"] for r in acc]),
           "wrong_refs_accepted": sum(1 for r in acc if not r["reference_correct"]),
           "wrong_refs_in_nu_domain": sum(1 for r in nu_rows if not r["reference_correct"])}
    # consensus as a detector of wrong references (oracle)
    chk = [r for r in rows if r["consensus_ok"] is not None and r["reference_correct"] is not None]
    det_c = _pr([r["consensus_ok"] is False for r in chk], [not r["reference_correct"] for r in chk])
    mode_right = [r for r in nu_rows if r["in_doubt"]]
    metrics = {m["step"]: m["metrics"] for m in views.step_metrics(led, run_id) if m["phase"] == "train"}
    budget = {key: int(sum((m.get("rollouts") or {}).get(key, 0) for m in metrics.values()))
              for key in ("consensus", "screen", "confirm_train", "instrument", "audit_oracle", "train_total")}
    return {"recipe": info["recipe"], "arm": rows[0]["arm"] if rows else None, "k": k, "mid_band": list(band),
            "no_truth": no_truth_split(rows),
            "per_step": per_step, "overall": overall, "nu_detector": det, "consensus_detector": det_c,
            "in_doubt_n": len(mode_right), "budget": budget, "rollouts_by_purpose": views.rollout_counts(led, run_id),
            "n_extra_tasks": int(sum(m.get("n_extra_tasks", 0) for m in metrics.values()))}


def no_truth_split(rows: list[dict]) -> dict:
    """All-wrong tasks (mu_1 = 0: no screen answer matches the reference) as their own no-truth split, not
    pooled (RGBC proposal, the mode anchor is meaningless where all K answers are wrong): their count and
    share of the accepted tasks and, where the world has an oracle, the wrong-reference rate among them beside
    the rate among the other accepted tasks."""
    acc = [r for r in rows if r["mu_screen"] is not None]
    zero = [r for r in acc if r["mu_screen"] == 0]
    rest = [r for r in acc if r["mu_screen"] != 0]

    def wrong(rs):
        known = [r for r in rs if r.get("reference_correct") is not None]
        return sum(1 for r in known if not r["reference_correct"]), (
            sum(1 for r in known if not r["reference_correct"]) / len(known) if known else None)

    nw, rate = wrong(zero)
    return {"n_accepted": len(acc), "n": len(zero), "share": len(zero) / len(acc) if acc else None,
            "n_wrong_ref": nw, "wrong_ref_rate": rate, "wrong_ref_rate_rest": wrong(rest)[1]}


def _plot(nums: dict) -> str:
    ps = nums["per_step"]
    xs = [p["step"] for p in ps]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
    specs = [("kappa_bar", "kappa_true", "kappa-bar (replication rate)", axes[0, 0]),
             ("nu_bar", "nu_true", "nu-bar (mode != reference) vs true wrong-ref rate", axes[0, 1]),
             ("lag_bar", "lag_true", "l-bar = mu_pre - mu_post vs true lag", axes[1, 0])]
    for key, tkey, title, ax in specs:
        v = [p.get(key, {}).get("value") if p.get(key) else None for p in ps]
        lo = [p[key]["ci_low"] if p.get(key) else None for p in ps]
        hi = [p[key]["ci_high"] if p.get(key) else None for p in ps]
        xv = [x for x, y in zip(xs, v) if y is not None]
        yv = [y for y in v if y is not None]
        err = [[max(y - l, 0) if l is not None and np.isfinite(l) else 0 for y, l in zip(v, lo) if y is not None],
               [max(h - y, 0) if h is not None and np.isfinite(h) else 0 for y, h in zip(v, hi) if y is not None]]
        if yv:
            ax.errorbar(xv, yv, yerr=err, fmt="o-", capsize=3, label="instrument (95% CI)")
        tv = [(x, p.get(tkey)) for x, p in zip(xs, ps) if p.get(tkey) is not None]
        if tv:
            ax.plot([a for a, _ in tv], [b for _, b in tv], "s--", color="black", label="oracle truth (audit)")
        if key == "kappa_bar":
            ax.axhspan(0.68, 0.875, color="green", alpha=0.08, label="frontier band 0.68-0.875")
            ax.axhline(0.35, color="red", lw=0.8, ls=":", label="noise line 0.35")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    ax = axes[1, 1]
    br = [(p["step"], p["bearing_rate"]["value"]) for p in ps if p.get("bearing_rate")]
    co = [(p["step"], p["confirm_overhead"]) for p in ps if p.get("confirm_overhead") is not None]
    mb = [(p["step"], p["mid_band_true"]) for p in ps if p.get("mid_band_true") is not None]
    if br:
        ax.plot([a for a, _ in br], [b for _, b in br], "o-", label="screen bearing rate P[g1=1]")
    if co:
        ax.plot([a for a, _ in co], [b for _, b in co], "x--", label="confirm rollouts / screen rollouts")
    if mb:
        ax.plot([a for a, _ in mb], [b for _, b in mb], "s:", color="black", label="true mid-band share (oracle)")
    ax.set_title("bearing rate vs confirm overhead", fontsize=9)
    ax.set_xlabel("step")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return png_data_uri(fig)


def section(led, run_id: str, run_dir: Path) -> str:
    """The report section of a SynCo / RGBC run (registry: ``coevo.recipes.rgbc.report:section``); also
    writes ``teachable.json`` into the run directory. "" when the run has no task_stats rows."""
    nums = teachable_numbers(led, run_id)
    if not nums["per_step"]:
        return ""
    try:
        (Path(run_dir) / "teachable.json").write_text(json.dumps(nums, indent=2, default=float))
    except OSError:
        pass
    head = ["step", "accepted", "bearing rate", "confirm overhead", "kappa-bar", "true kappa", "nu-bar (miss)",
            "true wrong-ref | nu defined", "doubt share", "l-bar", "true lag", "true mid-band", "true wrong-ref | accepted"]
    body = []
    for p in nums["per_step"] + [{"step": "all (batch-bootstrap CI)", **nums["overall"]}]:
        body.append([p["step"], p.get("n_accepted", 0), _ci(p.get("bearing_rate")), _f(p.get("confirm_overhead")),
                     _ci(p.get("kappa_bar")), _f(p.get("kappa_true")), _ci(p.get("nu_bar")), _f(p.get("nu_true")),
                     _ci(p.get("doubt_share")), _ci(p.get("lag_bar")), _f(p.get("lag_true")),
                     _f(p.get("mid_band_true")), _f(p.get("wrong_ref_true_accepted"))])
    o = nums["overall"]
    funnel = table_html([[o["n_tasks"], o["n_validated"], o["n_consensus_rejected"], o["n_accepted"],
                      _f(o.get("consensus_agreement")), _f(o.get("wrong_ref_true_validated")),
                      _f(o.get("wrong_ref_true_accepted"))]],
                    ["proposed", "passed validator", "rejected by consensus", "reached the Reasoner",
                     "consensus agreement (reference vs independent solves)", "true wrong-ref | validated",
                     "true wrong-ref | accepted"])
    cd = nums["consensus_detector"]
    bud = nums["budget"]
    budget = table_html([[bud["consensus"], bud["screen"], bud["confirm_train"], bud["instrument"], bud["audit_oracle"],
                      nums["n_extra_tasks"], _f(o.get("confirm_overhead")),
                      _f((o.get("bearing_rate") or {}).get("value"))]],
                    ["consensus", "screen", "confirm (training)", "instrument (audit-only)",
                     "oracle audit (audit-only)", "extra tasks (budget match)", "confirm overhead", "bearing rate"])
    d = nums["nu_detector"]
    det = table_html([[name, x["flagged"], x["wrong"], x["true_positives"], _f(x["precision"]), _f(x["recall"])]
                  for name, x in (("nu = 0 (mode != reference) | nu defined", d["nu_miss"]),
                                  ("in doubt (nu = 0, mode stable) | nu defined", d["in_doubt"]),
                                  ("in doubt | all accepted tasks", d["in_doubt_all_accepted"]),
                                  ("consensus rejection | consensus-checked", cd))],
                 ["flag", "flagged", "wrong refs (oracle)", "both", "precision", "recall"])
    nt = nums["no_truth"]
    no_truth = table_html([[nt["n_accepted"], nt["n"], _f(nt["share"]), nt["n_wrong_ref"], _f(nt["wrong_ref_rate"]),
                            _f(nt["wrong_ref_rate_rest"])]],
                          ["accepted", "all-wrong (mu_1 = 0)", "share", "wrong refs among them (oracle)",
                           "wrong-ref rate | all-wrong", "wrong-ref rate | the rest"])
    arm = html.escape(str(nums["arm"]))
    lag_null = _lag_null_html(led, run_id)
    return f"""<h2>Teachable-quality report (RGBC proposal) · arm {arm}</h2>
<p class=note>Instruments come from the rollouts the run drew; the <b>true</b> columns come from the world's oracle
and from {html.escape(str(nums['budget']['audit_oracle']))} extra audit samples that no reward sees (an audit-only cost).
kappa-bar = share of screen-bearing tasks whose confirm group is mixed again (frontier 0.68-0.875, pure noise
&le; 0.35); nu-bar = share of nu-defined tasks whose 2K-answer mode differs from the reference; l-bar =
mu_pre - mu_post on the same tasks around the Reasoner update. See docs/rgbc.md.</p>
<h3>Validator and consensus funnel</h3>{funnel}
<h3>Rollout budget</h3>{budget}
<p class=note>The confirm group is drawn only for screen-bearing tasks, so confirm rollouts / screen rollouts equals
the screen bearing rate.</p>
<h3>Per step: instrument beside truth</h3>{table_html(body, head)}
{lag_null}
<h3>No-truth split: all-wrong tasks (mu_1 = 0)</h3>{no_truth}
<p class=note>No screen answer matches the reference, so neither the mode anchor nor nu says anything about these
tasks (the RGBC proposal puts them in their own no-truth split, not pooled); the oracle says how many of their
references are wrong.</p>
<h3>nu and consensus as detectors of wrong references (oracle)</h3>{det}
<p class=note>{d['wrong_refs_accepted']} accepted tasks had a wrong reference; {d['wrong_refs_in_nu_domain']} of them
lie where nu is defined (0 &lt; mu &lt; 1). Wrong references the Reasoner never matches (mu = 0) are outside
nu's domain by definition.</p>
{figure_html(_plot(nums), "Instrument (95% CI) against oracle truth per step", alt="instrument vs truth")}
"""


def _lag_null_html(led, run_id: str) -> str:
    """l = mu_pre - mu_post next to its zero-learning null l_null = mu_pre - mu_null (``lag_excess``)."""
    from coevo.audit.instruments import estimate_dict, lag_excess
    from coevo.recipes.rgbc.tables import lag_null_columns

    try:
        c = lag_null_columns(led, run_id)
    except Exception:  # noqa: BLE001 -- a ledger written before the null columns existed
        return ""
    if not c["mu_pre"]:
        return ""
    e = lag_excess(c["mu_pre"], c["mu_post"], c["mu_null"])
    ana = [x for x in c["lag_null_analytic"] if x is not None]
    row = [[e.n, _f(e.extra["lag_mean"]), _f(e.extra["lag_null_mean"]), _f(float(np.mean(ana))) if ana else "n/a",
            _ci(estimate_dict(e)), _f(e.extra["median_abs_lag"]),
            _f(e.extra["median_abs_lag_null"])]]
    return ("<h3>Lag against its zero-learning null</h3>" + table_html(
        row, ["tasks", "mean l", "mean l_null", "E[l | bearing] at true p (oracle)", "l - l_null (95% CI)",
              "median |l|", "median |l_null|"]) +
        "<p class=note>l_null uses an independent group of the same selected tasks with the pre-update weights: "
        "selecting on a mixed screen group biases l with no learning at all (K = 4: -0.11 at p = 0.75, -0.22 at "
        "p = 0.95) and binomial noise alone gives median |l| = 0.25, so only l - l_null measures the update.</p>")
