"""`coevo audit RUN_DIR... --predictions`: the verdict rule and the table of the design proposals' falsifiable
predictions.  The predictions themselves belong to the recipes (``RecipeInfo.predictions``: the RGBC proposal's
P1-P6 in ``coevo/recipes/rgbc/predictions.py``, the CASA proposal's in the vgopd folder); this module names no
recipe and no arm.

A prediction row: ``id``, ``claim``, ``status`` (evaluated | not evaluable), and either ``reason`` or
``value`` / ``ci_low`` / ``ci_high`` / ``n`` / ``unit`` / ``verdict`` / ``line`` (``judge``).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["judge", "print_predictions"]


def judge(value: float, lo: Optional[float], hi: Optional[float], holds: Tuple[str, float],
          lines: Sequence[Tuple[str, float, str]]) -> Dict[str, str]:
    """Verdict of one prediction by the one rule (``coevo.audit.verdicts.decide``). ``holds`` = (op, x): the
    predicted side and its success line; ``lines`` = the source's termination lines (op, x, consequence). The
    line on the far side of ``holds`` is the failure line (none: the success line is also the failure line);
    a line on the predicted side beyond the success line (RGBC P3's > 20 %) is a further consequence, named
    in ``line`` when the interval lies wholly past it. ``op`` is one of <=, <, >=, >. A zero-width interval
    is ``degenerate``; no interval, ``inconclusive``."""
    from coevo.audit.verdicts import DEGENERATE, decide, explain

    op, success = holds
    direction = 1 if op in (">=", ">") else -1
    far = [(o, x, c) for o, x, c in lines if (o in (">=", ">")) != (direction > 0)]
    near = [(o, x, c) for o, x, c in lines if (o in (">=", ">")) == (direction > 0)]
    failure, consequence = (far[0][1], far[0][2]) if far else (success, "the predicted side is not reached")
    has_ci = lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi)
    lo_, hi_ = (float(lo), float(hi)) if has_ci else (float("nan"), float("nan"))
    v = decide(value, lo_, hi_, direction, failure, success, degenerate=has_ci and lo_ == hi_)
    why = explain(v, value, lo_, hi_, direction, failure, success, fmt=lambda x: f"{x:g}")
    line = f"success {op} {success:g}; failure {'<' if direction > 0 else '>'} {failure:g}: {consequence}; {why}"
    for o, x, c in near:
        if has_ci and v != DEGENERATE and direction * (min(lo_, hi_) if direction > 0 else max(lo_, hi_)) > direction * x:
            line += f"; also past {o} {x:g}: {c}"
    return {"verdict": v, "line": line}


def _pct(x, unit: str) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if unit.startswith("|mu|") else f"{100 * x:.1f}%" if "difference" not in unit and "range" not in unit \
        and "max" not in unit else f"{100 * x:.2f} pt"


def print_predictions(preds: List[dict], console=None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from coevo.termwidth import out_console

    c = console or out_console()
    t = Table(title="predictions on the runs given (each audited recipe's design proposal)")
    for col in ("P", "claim", "measured [95% interval]", "n", "verdict", "lines, and why / why not evaluable"):
        t.add_column(col, overflow="fold")
    for p in preds:
        if p["status"] != "evaluated":
            t.add_row(p["id"], escape(p["claim"]), "-", "-", "not evaluable", escape(p["reason"]))
            continue
        u = p["unit"]
        m = f"{_pct(p['value'], u)} [{_pct(p['ci_low'], u)}, {_pct(p['ci_high'], u)}]"
        t.add_row(p["id"], escape(p["claim"]), m, str(p["n"]), escape(p["verdict"]), escape(p["line"]))
    c.print(t)
