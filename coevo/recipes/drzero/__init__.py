"""The Dr. Zero family (Dr. Zero; False Frontiers: FF, MSV, CrossFit): recipes ``drzero``, ``crossfit`` and
``msv+crossfit`` on the facts world, one loop with three settings.

The folder: ``recipe.py`` (the loop and its three classes), ``steps.py`` (MSV labels, the scoring
group, solver updates, the round audit), ``posthoc.py`` (the post-hoc FF audit, one instrument for
every arm), ``crossfit.py`` (folds), ``rewards.py`` (Dr. Zero's
proposer reward, hop-bucket advantages, MSV acceptance: pure functions), ``config.py`` (sections
``drzero``, ``crossfit``, ``audit``), ``report.py`` (report section), ``experiments.py`` (``coevo
experiment crossfit-ablation`` on the experiment engine), ``arms.py`` (``coevo experiment drzero-arms``), ``presets/`` (``drzero``, ``crossfit``, ``msv+crossfit``).
"""
from coevo.core.registry import RecipeInfo, Ref, RoleSpec
from coevo.recipes.drzero.config import AuditConfig, CrossFitConfig, DrZeroConfig

_SOLVER = RoleSpec("solver", asset="facts_solver", seed_offset=0, lr="lr_solver")
_PROPOSER = RoleSpec("proposer", asset="facts_proposer", seed_offset=1, lr="lr_challenger")
_AUX = (RoleSpec("aux_a", asset="facts_solver", seed_offset=2, lr="lr_solver"),
        RoleSpec("aux_b", asset="facts_solver", seed_offset=3, lr="lr_solver"))
_COLS = ("false_agreement", "false_agreement_auditor", "pseudo_label_accuracy", "proposer_reward_mean",
         "accept_rate", "solver_reward_mean")
_OPTIONAL = ("false_agreement_by_hop", "agreement_by_truth", "post_hoc_audit")  # the round audit's counts; the post-hoc
# the names the round table and its caption use
COLUMN_NAMES = {"false_agreement": ("FF", "false-agreement mass of the scoring group vs the oracle (internal agreement)"),
                "false_agreement_auditor": ("FF aud", "false-agreement mass vs the auditor model"),
                "pseudo_label_accuracy": ("PL acc", "pseudo-label accuracy of the accepted questions"),
                "proposer_reward_mean": ("P reward", "proposer reward"),
                "accept_rate": ("accept", "accepted share of the valid proposals"),
                "solver_reward_mean": ("S reward", "main-solver reward (EM against the label)")}
_SECTIONS = (Ref("coevo.recipes.drzero.report", "section"),)
_DZ = {"drzero": DrZeroConfig, "audit": AuditConfig}
_CF = {"drzero": DrZeroConfig, "crossfit": CrossFitConfig, "audit": AuditConfig}


_EXPERIMENTS = {"crossfit-ablation": Ref("coevo.recipes.drzero.experiments", "ABLATION"),
                "drzero-arms": Ref("coevo.recipes.drzero.arms", "DRZERO_ARMS")}


def _info(name: str, cls: str, roles: tuple, sections: dict, description: str) -> RecipeInfo:
    return RecipeInfo(name=name, factory=Ref("coevo.recipes.drzero.recipe", cls), roles=roles, sections=sections,
                      worlds=("facts",), summary_columns=_COLS, optional_summary_columns=_OPTIONAL,
                      column_names=COLUMN_NAMES,
                      report_sections=_SECTIONS, description=description,
                      experiments=_EXPERIMENTS if name == "drzero" else {})


RECIPES = {
    "drzero": _info("drzero", "DrZeroRecipe", (_SOLVER, _PROPOSER), _DZ,
                    "Dr. Zero: proposer (passage + hop count, 0.5 format + difficulty over 5 solver answers, "
                    "hop-bucket advantages), search-agent solver trained on the drafts"),
    "crossfit": _info("crossfit", "CrossFitRecipe", (_SOLVER, _PROPOSER, *_AUX), _CF,
                      "CrossFit: the proposer is scored by the other fold's auxiliary solver, R_P = f(k)"),
    "msv+crossfit": _info("msv+crossfit", "MSVCrossFitRecipe", (_SOLVER, _PROPOSER, *_AUX), _CF,
                          "MSV + CrossFit: 3 source-aware + 3 source-blind answers gate and relabel each question"),
}
