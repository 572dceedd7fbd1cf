"""Bridges to other frameworks (docs/integrations.md, docs/verl.md).

* ``scoring`` and ``ledger_writer``: the shared core (rewards, tri-state verdicts, buffered ledger parts) that
  names no framework; ``trl``, ``openrlhf``, ``verifiers``, ``openenv`` (+ ``served``: the served tasks and the
  NeMo Gym-shaped ``/verify``) hold only each framework's calling convention; ``solver_client``: the shipped
  ``solver_fn`` (an OpenAI-compatible server's samples) for the R-Zero Challenger reward.

* ``verl_reward``: reward functions verl loads through ``custom_reward_function.path`` / ``.name``;
  they compute coevo's rewards through the verifier pool and append rows to per-process ledger parts.
* ``importers``: ``coevo import verl|rzero|parts`` — other frameworks' rollout files (and the
  adapter's ledger parts) into a coevo run directory that ``coevo audit`` / ``coevo report`` read.
* ``common``: answer extraction, the verifier, the ledger-part writer shared by both.
* ``imported``: the registry entries (``RECIPES``) and report section of imported runs.
"""
