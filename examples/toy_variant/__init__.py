"""A second example recipe, added as one folder: the toy recipe with another proposer reward.

Nothing outside this folder names it (``tests/test_toy_variant.py`` checks that): the folder
holds the recipe (``recipe.py``: the reward), its registration (``RECIPES`` below) and its
preset (``preset.yaml``).  Run it from the repository root:

    coevo run --preset examples/toy_variant/preset.yaml
"""
from coevo.core.registry import RecipeInfo, Ref, RoleSpec
from examples.toy_recipe import RECIPES as _TOY

_toy = _TOY["toy"]
RECIPES = {"toy-variant": RecipeInfo(
    name="toy-variant", factory=Ref(f"{__name__}.recipe", "VariantRecipe"),
    roles=(RoleSpec("solver", asset="solver"), RoleSpec("proposer", asset="challenger", seed_offset=1,
                                                         lr="lr_challenger")),
    sections=_toy.sections, worlds=_toy.worlds, summary_columns=_toy.summary_columns,
    column_names={"proposer_reward_mean": ("P reward", "proposer reward 1 - 2|p - 1/2|")},
    report_sections=_toy.report_sections,
    description="the toy recipe, two roles, proposer rewarded by the solver's uncertainty 1 - 2|p - 1/2|")}
