"""SynCo's tiny arithmetic asset (``coevo pretrain``; ``RecipeInfo.pretrain``): the Synthesizer
(``<synth>`` -> question, worked solution and final answer; 20 % of the training answers wrong by
a carry slip, off by one or a sign slip, so wrong references exist for the validators to catch).
The training loop and the tasks are ``coevo.pretrain``'s."""
from coevo.pretrain import SYNTHESIZE
from coevo.recipes.rgbc import SYNTHESIZER
from coevo.worlds.arithmetic import LEVELS

ASSETS = {
    SYNTHESIZER: {"task": SYNTHESIZE, "mix": {lv: 0.2 for lv in LEVELS}, "steps": 2400, "batch": 64, "lr": 3e-3,
                  "wrong_rate": 0.2, "arch": {"n_embd": 96, "n_layer": 3, "n_head": 4, "block_size": 128}},
}
