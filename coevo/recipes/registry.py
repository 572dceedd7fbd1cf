"""Old path of the recipe registry (moved to ``coevo.core.registry``); kept for outside code
that imports it (``examples/`` recipes written before the move)."""
from coevo.core.registry import *  # noqa: F401,F403
from coevo.core.registry import RecipeInfo, RecipeNotFound, Ref, RoleSpec, get_recipe, load  # noqa: F401
