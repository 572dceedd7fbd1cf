"""Old path of the contract types (they live in ``coevo.core.world``); kept so existing imports work."""
from coevo.core.world import (  # noqa: F401
    Task, ParseResult, last_question, ResponseFormat, role_sampling, World,
)
