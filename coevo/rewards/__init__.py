"""Reward parts that two or more recipes use: the BLEU-cluster repetition penalty and its pairwise BLEU
(``coevo/rewards/repetition.py``: R-Zero's Challenger penalty, RGBC's novelty). A formula of one recipe lives
in its folder (``coevo/recipes/<recipe>/rewards.py``); docs/formulas.md lists them all."""
