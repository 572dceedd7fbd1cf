"""Bridges to other frameworks (docs/verl.md).

* ``verl_reward``: reward functions verl loads through ``custom_reward_function.path`` / ``.name``;
  they compute coevo's rewards through the verifier pool and append rows to per-process ledger parts.
* ``importers``: ``coevo import verl|rzero|parts`` — other frameworks' rollout files (and the
  adapter's ledger parts) into a coevo run directory that ``coevo audit`` / ``coevo report`` read.
* ``common``: answer extraction, the verifier, the ledger-part writer shared by both.
* ``imported``: the registry entries (``RECIPES``) and report section of imported runs.
"""
