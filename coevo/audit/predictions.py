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
    """Verdict of one prediction. ``holds`` = (op, x): the predicted side; ``lines`` = termination
    lines (op, x, consequence). ``op`` is one of <=, <, >=, >. A side is *firm* when the whole 95%
    interval lies on it, *leaning* when only the point estimate does."""
    ops = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}
    has_ci = lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi)

    def side(op, x):
        if not ops[op](value, x):
            return None
        if not has_ci:
            return "point"
        return "firm" if (ops[op](lo, x) and ops[op](hi, x)) else "leaning"

    for op, x, consequence in lines:
        s = side(op, x)
        if s is not None:
            v = "termination line crossed" if s == "firm" else (
                "termination line crossed (point estimate only)" if s == "point" else
                "leans to the termination line (interval straddles it)")
            return {"verdict": v, "line": f"{op} {x:g}: {consequence}"}
    s = side(*holds)
    if s is not None:
        v = {"firm": "holds", "point": "holds (point estimate only)",
             "leaning": "leans to holding (interval straddles the line)"}[s]
        return {"verdict": v, "line": f"predicted side {holds[0]} {holds[1]:g}; no termination line applies"}
    return {"verdict": "between the lines (neither holds nor terminates)",
            "line": "no termination line applies; " + "; ".join(f"{op} {x:g}" for op, x, _ in lines) + " not reached"}


def _pct(x, unit: str) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if unit.startswith("|mu|") else f"{100 * x:.1f}%" if "difference" not in unit and "range" not in unit \
        and "max" not in unit else f"{100 * x:.2f} pt"


def print_predictions(preds: List[dict], console=None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    c = console or Console()
    if console is None and not c.is_terminal:
        c = Console(width=160)
    t = Table(title="predictions on the runs given (each audited recipe's design proposal)")
    for col in ("P", "claim", "measured [95% interval]", "n", "verdict", "termination line / why not evaluable"):
        t.add_column(col, overflow="fold")
    for p in preds:
        if p["status"] != "evaluated":
            t.add_row(p["id"], escape(p["claim"]), "-", "-", "not evaluable", escape(p["reason"]))
            continue
        u = p["unit"]
        m = f"{_pct(p['value'], u)} [{_pct(p['ci_low'], u)}, {_pct(p['ci_high'], u)}]"
        t.add_row(p["id"], escape(p["claim"]), m, str(p["n"]), escape(p["verdict"]), escape(p["line"]))
    c.print(t)
