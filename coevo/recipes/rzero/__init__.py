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

# `coevo bench step --budget`: run sizes over the preset (docs/speed.md)
BENCH_BUDGETS = {
    "tiny": ("rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=1", "rzero.challenger_prompts=4",
             "rzero.challenger_group=2", "rzero.n_candidates=8", "rzero.m=4", "rzero.solver_prompts=4",
             "rzero.solver_group=2", "world.eval_per_level=2", "sampling.max_new_tokens=16"),
    "small": ("rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=2", "rzero.challenger_prompts=16",
              "rzero.n_candidates=64", "rzero.solver_prompts=16", "world.eval_per_level=20"),
    "round": ("rzero.rounds=1",),  # one round of the preset's own counts
}

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
    commands=(Ref("coevo.recipes.rzero.commands", "register"),), bench_budgets=BENCH_BUDGETS,
    description="R-Zero: Challenger (uncertainty - repetition) and Solver (majority-vote pseudo-labels)")}
