"""Registry entries of imported runs (``runs.recipe = "coevo.integrations.imported:<source>"``) so
``coevo report`` finds their report sections and summary columns; and the import section itself
(what was read, and every malformed line). An imported run cannot be run or resumed.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from coevo.core.registry import RecipeInfo, Ref, RoleSpec
from coevo.recipes.rzero import CHALLENGER as _RZ_CHALLENGER, NAME as _RZ
from coevo.report.plots import table_html

__all__ = ["RECIPES", "ImportedRun", "section"]

_SOLVER = RoleSpec("solver", trainable=False)
_FACTORY = Ref("coevo.integrations.imported", "ImportedRun")
_SECTION = Ref("coevo.integrations.imported", "section")
RECIPES = {
    "verl": RecipeInfo(name="verl", factory=_FACTORY, roles=(_SOLVER,), report_sections=(_SECTION,),
                       description="a verl rollout dump (coevo import verl)"),
    _RZ: RecipeInfo(name=_RZ, factory=_FACTORY, roles=(_SOLVER, RoleSpec(_RZ_CHALLENGER, trainable=False)),
                        summary_columns=("pseudo_label_accuracy", "kept_fraction"),
                        report_sections=(_SECTION, Ref("coevo.recipes.rzero.report", "section")),
                        description="R-Zero question-evaluation files (coevo import rzero)"),
    "adapter": RecipeInfo(name="adapter", factory=_FACTORY, roles=(_SOLVER,), report_sections=(_SECTION,),
                          description="a framework adapter's ledger parts: verl, TRL (coevo import parts)"),
}


class ImportedRun:
    def __init__(self, *a, **k) -> None:
        raise RuntimeError("an imported run holds another framework's rollouts: it cannot be run or resumed")


def section(led, run_id: str, run_dir: Path) -> str:
    """What the import read: files, records, the malformed lines (file:line reason), per-step counts."""
    try:
        info = json.loads((Path(run_dir) / "import.json").read_text())
    except (OSError, ValueError):
        return "<p class=note>no import.json in this run directory</p>"
    head = (f"<h2>Imported from {html.escape(str(info.get('source')))}</h2><p>{html.escape(str(info.get('path')))}: "
            f"{info.get('n_records')} records from {len(info.get('files', []))} file(s); "
            f"<b>{info.get('n_malformed')} malformed</b> (not imported, listed below).</p>")
    bad = info.get("malformed") or []
    rows = [[Path(b["file"]).name, b.get("line") if b.get("line") is not None else "-", b["reason"]]
            for b in bad[:200]]
    table = table_html(rows, ["file", "line", "reason"]) if rows else ""
    more = f"<p class=note>{len(bad) - 200} more in import.json</p>" if len(bad) > 200 else ""
    from coevo.ledger import views

    srows = []
    for s in views.step_metrics(led, run_id):
        m = s["metrics"]
        srows.append([s["step"], s["phase"]] +
                     [f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(m.items())][:6])
    width = max((len(r) for r in srows), default=2)
    srows = [r + [""] * (width - len(r)) for r in srows]
    stable = table_html(srows, ["step", "phase"] + ["metric"] * (width - 2)) if srows else ""
    return head + table + more + stable
