"""VG-OPD (CASA proposal §background): verifier-gated multi-expert on-policy distillation under
CASA's arms A / B / C, on the criteria world.

The folder: ``recipe.py`` (the steps), ``steps.py`` (its helpers), ``config.py`` (section
``vgopd``), ``casa/`` (CASA: scoring, gating, self-check, probes, rows, stress test and the
``casa`` section), ``tables.py`` (the ledger tables it adds and their views), ``summary.py`` (round-table
columns), ``instruments.py`` (pure CASA instruments), ``predictions.py`` (CASA-P1..P4 in
``coevo audit --predictions``), ``report.py`` (report section), ``commands.py`` (``coevo casa predictions``,
``coevo stress``), ``presets/`` (``vgopd``).
The criteria bank and world it trains on stay in the core (``coevo.criteria``,
``coevo.worlds.criteria``).  Docs: docs/vgopd.md, docs/casa.md.
"""
from pathlib import Path

from coevo.core.registry import RecipeInfo, Ref, RoleSpec
from coevo.recipes.vgopd.casa.config import CasaConfig
from coevo.recipes.vgopd.config import VgopdConfig
from coevo.recipes.vgopd.summary import COLUMN_NAMES, OPTIONAL_COLUMNS, SUMMARY_COLUMNS
from coevo.recipes.vgopd.tables import TABLES

ASSETS = Path(__file__).resolve().parents[2] / "assets"
EXPERT_PREFIX = "criteria_expert_"


def expert_roles() -> tuple[RoleSpec, ...]:
    """One frozen teacher role per shipped expert asset (``criteria_expert_<name>.pt`` -> ``expert_<name>``)."""
    names = sorted(p.name[len(EXPERT_PREFIX):-3] for p in ASSETS.glob(f"{EXPERT_PREFIX}*.pt"))
    return tuple(RoleSpec(f"expert_{n}", trainable=False, asset=f"{EXPERT_PREFIX}{n}", seed_offset=i + 1)
                 for i, n in enumerate(names))


RECIPES = {"vgopd": RecipeInfo(
    name="vgopd", factory=Ref("coevo.recipes.vgopd.recipe", "VgopdRecipe"),
    roles=(RoleSpec("student", asset="criteria_student", seed_offset=0, lr="lr_solver"), *expert_roles()),
    solver_role="student",
    sections={"vgopd": VgopdConfig, "casa": CasaConfig}, worlds=("criteria",),
    summary_columns=SUMMARY_COLUMNS, optional_summary_columns=OPTIONAL_COLUMNS, column_names=COLUMN_NAMES,
    tables=TABLES, report_sections=(Ref("coevo.recipes.vgopd.report", "section"),),
    predictions=Ref("coevo.recipes.vgopd.predictions", "evaluate_casa_predictions"),
    experiments={"casa-arms": Ref("coevo.recipes.vgopd.experiments", "EXPERIMENT")},
    commands=(Ref("coevo.recipes.vgopd.commands", "register"),),  # coevo casa predictions, coevo stress
    description="VG-OPD: verifier-gated multi-expert distillation under CASA's arms A / B / C")}
