"""R-Zero's prompts for the math world (R-Zero §2.1; word for word from its code).  They are the math
world's default prompt style (``coevo/worlds/math_prompts.py``: a world's default prompts belong to the
world); this folder registers R-Zero's name ``rzero`` as an alias of it (``RecipeInfo.prompt_styles``)
and keeps the old names of the texts here."""
from coevo.worlds.math_prompts import (  # noqa: F401 (re-exported)
    CHALLENGER_SYSTEM, CHALLENGER_SYSTEM_TEMPLATE, CHALLENGER_USER, DIFFICULTY_LINE, DIFFICULTY_PHRASE,
    INSTRUCT_PROMPTS as MATH_PROMPTS, SOLVER_SUFFIX)
