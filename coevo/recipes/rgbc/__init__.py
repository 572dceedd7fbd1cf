"""SynCo and SynCo + RGBC (SynCo; RGBC proposal): a Synthesizer writes tasks with references, a
Reasoner answers each with K rollouts; RGBC replaces the single screen group by a screen–confirm
certificate (kappa discount, nu, lag) and its arms synco | mu_tilde | full.

The folder: ``recipe.py`` (the joint step), ``config.py`` (sections ``synco``, ``rgbc``),
``state.py`` (per-task state), ``validate.py`` (SynCo's validator rho and the consensus check),
``arms.py`` / ``k_arm.py`` (the Synthesizer reward per arm, the budget-matched arm),
``report.py`` (teachable-quality section), ``doubt.py`` (the reference-in-doubt export/import),
``predictions.py`` (the RGBC proposal's P1-P6 in ``coevo audit --predictions``), ``experiments.py``
(``coevo experiment rgbc-arms``).
The instruments (kappa-bar, nu-bar, lag) are the core's ``coevo.audit.screen_confirm``: imported
verl and R-Zero runs are audited with them too.
"""
from coevo.core.registry import RecipeInfo, Ref, RoleSpec
from coevo.recipes.rgbc.config import RGBCConfig, SynCoConfig

COLUMN_NAMES = {"synthesizer_reward_mean": ("S reward", "Synthesizer reward"),
                "solver_reward_mean": ("R reward", "solver (Reasoner) reward"),
                "bearing_rate": ("bearing", "screen bearing rate"), "kappa_bar": ("kappa", "kappa-bar (step mean)"),
                "nu_bar": ("nu", "nu-bar"), "lag_bar": ("lag", "lag l-bar")}

# the recipes' and the Synthesizer's names (other packages take them from here instead of spelling them)
SYNCO, RGBC, SYNTHESIZER = "synco", "rgbc", "synthesizer"
_ROLES = (RoleSpec("solver", asset="solver", seed_offset=0, lr="lr_solver"),
          RoleSpec(SYNTHESIZER, asset=SYNTHESIZER, seed_offset=1, lr="lr_challenger"))
_COLS = ("synthesizer_reward_mean", "solver_reward_mean", "bearing_rate", "kappa_bar", "nu_bar", "lag_bar")
_TRUTH_COLS = ("reference_accuracy_truth", "reference_accuracy_truth_accepted", "truth_oracle_agreement",
               "truth_oracle_kappa")
# the arithmetic world with a known pass-rate law (the P1 / P2 control of rgbc-arms; coevo.worlds.arithmetic_law)
_WORLDS = ("arithmetic", "math", "coevo.worlds.arithmetic_law:ArithmeticLawWorld")
_PREDICTIONS = Ref("coevo.recipes.rgbc.predictions", "evaluate_predictions")  # P1-P6 of the RGBC proposal
_FACTORY = Ref("coevo.recipes.rgbc.recipe", "RGBCRecipe")
_SECTIONS = (Ref("coevo.recipes.rgbc.report", "section"),)
RECIPES = {
    "synco": RecipeInfo(name="synco", factory=_FACTORY, roles=_ROLES,
                        sections={"synco": SynCoConfig, "rgbc": RGBCConfig}, worlds=_WORLDS,
                        summary_columns=_COLS, column_names=COLUMN_NAMES,
                        report_sections=_SECTIONS,
                        optional_summary_columns=_TRUTH_COLS,
                        commands=(Ref("coevo.recipes.rgbc.commands", "register"),),
                        pretrain=Ref("coevo.recipes.rgbc.pretrain", "ASSETS"),
                        predictions=_PREDICTIONS,
                        description="SynCo: Synthesizer + Reasoner, validator, consensus, T(mu_1)"),
    "rgbc": RecipeInfo(name="rgbc", factory=_FACTORY, roles=_ROLES,
                       sections={"synco": SynCoConfig, "rgbc": RGBCConfig}, worlds=_WORLDS,
                       summary_columns=_COLS, column_names=COLUMN_NAMES,
                        report_sections=_SECTIONS,
                       optional_summary_columns=_TRUTH_COLS, predictions=_PREDICTIONS,
                       experiments={"rgbc-arms": Ref("coevo.recipes.rgbc.experiments", "EXPERIMENT")},
                       description="SynCo + RGBC: screen/confirm, kappa discount, nu, lag; arms synco|mu_tilde|full"),
}
