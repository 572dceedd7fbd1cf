"""Old path of the run verifier (it lives in ``coevo.verify.run``); kept so existing imports work."""
from coevo.verify.run import (  # noqa: F401
    RunVerifier, WorldEquivalence, WorldEquivalentVerifier, checker_for, make_run_verifier, pair_key,
    run_verifier_from_config,
)
