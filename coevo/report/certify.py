"""The zero-training certificate as a self-contained HTML page (``coevo certify --html``)."""
from __future__ import annotations

import html
import json

import numpy as np

from coevo.report.plots import figure_html, plt, png_data_uri, table_html


def _f(x, nd: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{nd}f}"


def _plot(cert: dict) -> str:
    mu = [t["mu_screen"] for t in cert.get("tasks", [])]
    kb = cert["kappa_bar"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    a.hist(mu, bins=np.linspace(-0.05, 1.05, cert["k"] + 2), color="#4c72b0")
    a.set_xlabel("screen mu_1 (share correct of K)")
    a.set_ylabel("tasks")
    lo, hi = kb.get("ci_low"), kb.get("ci_high")
    b.errorbar([0], [kb["value"]], yerr=[[kb["value"] - lo], [hi - kb["value"]]] if lo is not None and np.isfinite(lo)
               else None, fmt="o", color="k", capsize=6, label="kappa-bar (95% CI)")
    for y, txt, c in ((cert["decision_lines"]["p1_holds_max"], "P1 holds <= 0.45", "#2a9d8f"),
                      (cert["decision_lines"]["p1_terminates_min"], "terminates >= 0.70", "#e76f51")):
        b.axhline(y, ls="--", color=c, label=txt)
    if "truth" in cert:
        b.plot([0], [cert["truth"]["kappa_bar"]], "x", color="#e76f51", ms=10, label="truth")
    b.set_xlim(-1, 1)
    b.set_xticks([])
    b.set_ylim(0, 1)
    b.legend(fontsize=7, loc="lower right")
    return figure_html(png_data_uri(fig), "screen distribution and kappa-bar against P1's decision lines")


def certificate_html(cert: dict, title: str = "coevo certify") -> str:
    kb, nm, tr = cert["kappa_bar"], cert["null_model"], cert["screen_triple"]
    rows = [["kappa-bar", _f(kb["value"]), f"[{_f(kb['ci_low'])}, {_f(kb['ci_high'])}]", kb["n"],
             f"SE binomial {_f(kb.get('se_binomial'))}, task-clustered {_f(kb.get('se_task_clustered'))}"],
            ["screen (all-correct / bearing / all-wrong)", f"{_f(tr['all_correct'])} / {_f(tr['bearing'])} / "
             f"{_f(tr['all_wrong'])}", "", cert["n_tasks"], ""],
            ["null-model fit error", _f(nm["fit_error"], 4), "", "", json.dumps({k: round(v, 4) for k, v in
                                                                                   nm["best_fit"].items()})]]
    for key in ("nu_bar", "doubt_share"):
        if key in cert:
            e = cert[key]
            rows.append([key, _f(e["value"]), f"[{_f(e['ci_low'])}, {_f(e['ci_high'])}]", e["n"], ""])
    if "truth" in cert:
        rows.append(["truth kappa-bar (known p)", _f(cert["truth"]["kappa_bar"]), "", "",
                     f"in interval: {cert['truth']['kappa_in_interval']}"])
    p1 = cert["p1"]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}td,th{padding:2px 8px;"
            "border-bottom:1px solid #ddd}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>K = {cert['k']}, {cert['n_tasks']} tasks, world "
            f"{html.escape(str(cert.get('world', '')))}, verifier {html.escape(str(cert.get('verifier_kind', '')))}, "
            f"policy {html.escape(str(cert.get('policy_version', '')))}</p>"
            + table_html(rows, ["quantity", "value", "95% interval", "n", "notes"])
            + f"<h2>P1</h2><p><b>{html.escape(p1['verdict'])}</b>: {html.escape(p1['line'])}. "
              f"{html.escape(p1['resolution'])}.</p>" + _plot(cert) + "</body></html>")
