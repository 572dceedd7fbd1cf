"""Old path of the recipe registry (moved to ``coevo.core.registry``); kept for outside code
that imports it (``examples/`` recipes written before the move)."""
from coevo.core.registry import *  # noqa: F401,F403
from coevo.core.registry import BUILTIN, RecipeInfo, RecipeNotFound, RoleSpec, get_recipe, resolve  # noqa: F401
