"""R-Zero's tiny arithmetic assets (``coevo pretrain``; ``RecipeInfo.pretrain``): the Challenger
(``<propose>`` -> a question over all levels) and the one policy of R-Zero's "Single" ablation
(both roles in one set of parameters: solve 3/4 of the batch, propose 1/4), stopped when its greedy
L3 accuracy reaches 1/2.  The training loop and the tasks are ``coevo.pretrain``'s."""
from coevo.pretrain import PROPOSE, SOLVE
from coevo.recipes.rzero import CHALLENGER
from coevo.worlds.arithmetic import LEVELS

ASSETS = {
    CHALLENGER: {"task": PROPOSE, "mix": {lv: 0.2 for lv in LEVELS}, "steps": 400, "batch": 64, "lr": 2e-3,
                 "arch": {"n_embd": 128, "n_layer": 4, "n_head": 4, "block_size": 48}},
    # R-Zero's "Single" ablation: one set of parameters plays both roles
    "shared": {"task": SOLVE, "mix": {"L1": 0.25, "L2": 0.20, "L3": 0.25, "L4": 0.15, "L5": 0.15}, "steps": 3200,
               "stop_at": {"level": "L3", "accuracy": 0.5, "every": 100, "n": 200}, "batch": 64,
               "lr": 3e-3, "tasks": {SOLVE: 0.75, PROPOSE: 0.25}, "task_mix": {PROPOSE: {lv: 0.2 for lv in LEVELS}},
               "arch": {"n_embd": 96, "n_layer": 3, "n_head": 4, "block_size": 96}, "diagnostics": "levels"},
}
