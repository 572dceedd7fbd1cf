"""R-Zero (R-Zero §2.1–§2.4, §3.1): a Challenger and a Solver co-evolve from zero data.

The folder: ``recipe.py`` (the steps), ``config.py`` (section ``rzero``), ``summary.py`` (round
columns and ledger views), ``report.py`` (report section), ``prompts.py`` (R-Zero's math prompts:
the math world's prompt style ``rzero``), ``importer.py`` and ``commands.py`` (``coevo import
rzero``), ``pretrain.py`` (its tiny assets), ``presets/`` (``cpu``, ``paper``).
The rewards are the shared formulas of ``coevo.rewards`` (uncertainty, repetition penalty).
"""
from coevo.core.registry import RecipeInfo, Ref, RoleSpec
from coevo.recipes.rzero.config import RZeroConfig

# the recipe's and its roles' names (other packages take them from here instead of spelling them)
NAME, SOLVER, CHALLENGER = "rzero", "solver", "challenger"

# the names the round table and the caption use
COLUMN_NAMES = {"pseudo_label_accuracy": ("PL acc", "pseudo-label accuracy of kept candidates"),
                "kept_fraction": ("kept", "kept fraction"),
                "challenger_reward_mean": ("C reward", "Challenger reward"),
                "format_failure_rate": ("C fmt fail", "Challenger format failures")}

RECIPES = {NAME: RecipeInfo(
    name=NAME, factory=Ref("coevo.recipes.rzero.recipe", "RZeroRecipe"),
    roles=(RoleSpec(SOLVER, asset=SOLVER, seed_offset=0, lr="lr_solver"),
           RoleSpec(CHALLENGER, asset=CHALLENGER, seed_offset=1, lr="lr_challenger")),
    sections={NAME: RZeroConfig}, worlds=("arithmetic", "math"),
    summary_columns=("pseudo_label_accuracy", "kept_fraction", "challenger_reward_mean", "format_failure_rate"),
    optional_summary_columns=("pseudo_label_accuracy_truth", "truth_oracle_agreement", "truth_oracle_kappa"),
    column_names=COLUMN_NAMES, round_columns=Ref("coevo.recipes.rzero.summary", "round_columns"),
    report_sections=(Ref("coevo.recipes.rzero.report", "section"),),
    experiments={"rzero-seeds": Ref("coevo.recipes.rzero.experiments", "EXPERIMENT")},
    prompt_styles={NAME: Ref("coevo.worlds.math_prompts", "INSTRUCT_PROMPTS")},  # an alias of the world's default,
    pretrain=Ref("coevo.recipes.rzero.pretrain", "ASSETS"),
    commands=(Ref("coevo.recipes.rzero.commands", "register"),),
    description="R-Zero: Challenger (uncertainty - repetition) and Solver (majority-vote pseudo-labels)")}
