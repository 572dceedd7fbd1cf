"""The file OpenRLHF's ``--remote_rm_url`` points at (docs/integrations.md, "OpenRLHF"): OpenRLHF 0.11.2 executes
it as module ``reward_func`` and calls its ``reward_func(queries, prompts, labels)`` once per sample.

The role and settings come from the environment (OpenRLHF's loader passes no arguments), read once at load:
``COEVO_ROLE=solver`` (default) or ``challenger``, ``COEVO_LEDGER`` (the ledger root), ``COEVO_BATCH_SIZE``
(the samples one vLLM engine scores per step), ``COEVO_ABSTAIN`` (the reward of an abstention, 0.0), and for
the Challenger ``COEVO_SOLVER_FN=package.module:function`` (the Solver sampler); the full list is
``coevo.integrations.openrlhf.reward_func_from_env``.
"""
from coevo.integrations.openrlhf import reward_func_from_env

reward_func = reward_func_from_env()
