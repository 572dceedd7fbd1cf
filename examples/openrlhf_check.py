"""A check of examples/openrlhf_reward.py without GPUs, run in .venv-openrlhf (docs/integrations.md, "OpenRLHF";
tests/test_openrlhf.py runs it). OpenRLHF 0.11.2's own ``SingleTurnAgentExecutor`` loads the reward file argv[1]
(the ``--reward.remote_url`` file; its loader, openrlhf/utils/agent.py:191-205) and runs its ``execute`` for
every (prompt, label, response) of the JSON file argv[2] (examples/openrlhf_samples.json), all at once
(``asyncio.gather``, as its vLLM engine actor does). The engine and tokenizer are stand-ins that return the
given response (characters as tokens). Prints, as JSON, per sample OpenRLHF's output fields (``reward``,
``scores``, ``extra_logs``) as the tensors its samples generator builds (``torch.tensor([reward])``,
samples_generator.py:284)."""
import asyncio
import json
import sys
from types import SimpleNamespace

import torch
from openrlhf.utils.agent import SingleTurnAgentExecutor


class CharTokenizer:
    def __call__(self, text, add_special_tokens=False, return_tensors="pt"):
        return {"input_ids": torch.tensor([[ord(c) for c in text]])}

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(i) for i in ids)


class Engine:
    """vLLM's ``generate`` for the executor: the next response listed for the prompt."""

    def __init__(self, samples):
        self.todo = {}
        for s in samples:
            self.todo.setdefault(s["prompt"], []).append(s["response"])

    async def generate(self, prompt_token_ids, params, multi_modal_data=None):
        text = self.todo["".join(chr(i) for i in prompt_token_ids)].pop(0)
        out = SimpleNamespace(token_ids=[ord(c) for c in text], finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[out])


async def main(path, samples):
    ex = SingleTurnAgentExecutor(path)
    eng, tok = Engine(samples), CharTokenizer()
    params = SimpleNamespace(max_tokens=512, logprobs=None)
    outs = await asyncio.gather(*[ex.execute(s["prompt"], s["label"], params, 1024, tok, eng) for s in samples])
    res = []
    for o in outs:
        r = o["reward"]
        res.append({"reward": None if r is None else torch.tensor([r]).flatten().tolist(),
                    "scores": None if o["scores"] is None else torch.tensor([o["scores"]]).flatten().tolist(),
                    "extra_logs": {k: torch.as_tensor(v).flatten().tolist() for k, v in o["extra_logs"].items()},
                    "loaded": type(ex.reward_func).__name__})
    return res


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], json.load(open(sys.argv[2]))))))
