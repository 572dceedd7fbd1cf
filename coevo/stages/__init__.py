"""The stages of a step (``step``: propose, sample -> extract -> verify, draw a group, update a role, all given one
``StepContext``), multi-turn rollouts, the held-out evaluation and the certificate's groups."""
