"""Old path of the Verdict type (moved to ``coevo.core.verdict``)."""
from coevo.core.verdict import *  # noqa: F401,F403
from coevo.core.verdict import REASONS, TRANSIENT_REASONS, Verdict, abstain, guarded  # noqa: F401
