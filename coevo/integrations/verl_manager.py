"""coevo's reward manager for verl 0.9.1's reward loop (``verl.experimental.reward_loop``), so the
batch rewards run from a config alone (docs/verl.md)::

    reward.reward_manager.source=importlib
    reward.reward_manager.module.path=pkg://coevo.integrations.verl_manager
    reward.reward_manager.name=CoevoRewardManager
    +reward.reward_kwargs.coevo_reward=challenger      # or teachability, solver
    +reward.reward_kwargs.ledger=/shared/coevo_ledger  # and any kwarg of coevo.integrations.verl_reward

verl 0.9.1 resolves a manager from its registry (``reward.reward_manager.source=register``: naive,
dapo, gdpo, limited, remote; ``get_reward_manager_cls``) or, with ``source=importlib``, loads the
class named ``reward.reward_manager.name`` from ``module.path`` (``resolve_reward_manager_cls`` in
``verl/trainer/ppo/reward.py``). Importing this module also registers the class as ``coevo``, for
code that imports coevo before verl builds its workers.

verl's reward loop calls ``run_single`` once per sample (``RewardLoopWorker.compute_score_batch``;
in training, the agent loop calls each sample's reward as soon as it is generated), never with the
batch. The teachability and Solver rewards need only the sample. The R-Zero Challenger's
repetition penalty needs the whole batch (B = every question of the step), so each call joins a
batch held by one collector per Ray cluster (a named actor; in-process without Ray) and waits
until the batch is complete — ``batch_size`` samples (default ``data.train_batch_size x
actor_rollout_ref.rollout.n``) or ``batch_wait_s`` seconds after its first sample (validation
batches, short last batches) — then ``compute_challenger_scores`` runs once over it and every
sample gets its reward. The B used is written on every reward row (``components.batch_size``).
"""
from __future__ import annotations

import asyncio
from typing import Any, Optional

from verl import DataProto
from verl.experimental.reward_loop.reward_manager import register
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from coevo.integrations import verl_reward as vr
from coevo.recipes.rzero import CHALLENGER

__all__ = ["CoevoRewardManager", "BatchCollector", "COLLECTOR_NAME"]

COLLECTOR_NAME = "coevo_batch_collector"
TEACHABILITY = "teachability"  # SynCo / RGBC Synthesizer's reward
REWARDS = (CHALLENGER, TEACHABILITY, "solver")  # reward.reward_kwargs.coevo_reward


class BatchCollector:
    """Gathers the Challenger's samples of one step into a batch and scores it once (see the module
    docstring). Used as a Ray async actor (``ray.remote``) or in process."""

    def __init__(self) -> None:
        self.open: dict[Any, dict] = {}

    async def join(self, key: Any, item: dict, expected: int, wait_s: float, kwargs: dict) -> dict:
        b = self.open.get(key)
        if b is None:
            b = self.open[key] = {"items": [], "done": asyncio.Event(), "out": None}
            asyncio.get_running_loop().call_later(wait_s, self._close, key, b, kwargs)
        i = len(b["items"])
        b["items"].append(item)
        if len(b["items"]) >= expected:
            self._close(key, b, kwargs)
        await b["done"].wait()
        return b["out"][i]

    def _close(self, key: Any, b: dict, kwargs: dict) -> None:
        if b["done"].is_set():
            return
        if self.open.get(key) is b:
            del self.open[key]
        items = b["items"]
        out = vr.compute_challenger_scores([it["data_source"] for it in items], [it["text"] for it in items],
                                           [it["ground_truth"] for it in items], [it["extra_info"] for it in items],
                                           **kwargs)
        for o in out:
            o["batch_size"] = float(len(items))
        b["out"] = out
        b["done"].set()


_LOCAL: dict = {}


def _collector():
    """The cluster's named collector actor when Ray is up (every reward worker joins the same one),
    else one in this process."""
    try:
        import ray
    except ImportError:  # pragma: no cover - verl requires ray
        ray = None
    if ray is not None and ray.is_initialized():
        # the handle is kept for this process's life (per Ray job): a named actor that is not detached dies when
        # its creator drops its last handle, which a handle local to this call did while the batch still filled
        # (ActorDiedError "all references to the actor were removed", seen in CI 2026-12-05)
        job = ray.get_runtime_context().get_job_id()
        h = _LOCAL.get(("actor", job))
        if h is None:
            actor = ray.remote(BatchCollector).options(name=COLLECTOR_NAME, get_if_exists=True, max_concurrency=100000)
            h = _LOCAL[("actor", job)] = actor.remote()
        return lambda *a: h.join.remote(*a)
    loc = _LOCAL.setdefault("c", BatchCollector())
    return lambda *a: loc.join(*a)


@register("coevo")
class CoevoRewardManager(RewardManagerBase):
    """``run_single`` decodes the sample as verl's ``NaiveRewardManager`` does and scores it with the
    coevo reward named by ``reward.reward_kwargs.coevo_reward`` (the other ``reward_kwargs`` go to
    it: ``ledger``, ``verifier``, ``uncertainty_variant``, ``arm`` ...)."""

    def __init__(self, config, tokenizer, compute_score=None, reward_router_address=None,
                 reward_model_tokenizer=None):
        super().__init__(config, tokenizer, compute_score)
        kw = dict(config.reward.get("reward_kwargs") or {})
        self.reward = str(kw.pop("coevo_reward", CHALLENGER))
        if self.reward not in REWARDS:
            raise ValueError(f"reward.reward_kwargs.coevo_reward must be one of {REWARDS}, got {self.reward!r}")
        n = int(config.actor_rollout_ref.rollout.get("n", 1) or 1)
        self.batch_size = int(kw.pop("batch_size", 0) or int(config.data.get("train_batch_size") or 1) * n)
        self.batch_wait_s = float(kw.pop("batch_wait_s", 60.0))
        self.kwargs = kw

    def _item(self, data: DataProto) -> dict:
        item = data[-1:][0]  # multi-sequence outputs: the last sequence, as the naive manager
        ids = item.batch["responses"]
        valid = ids[: item.batch["attention_mask"][-ids.shape[-1]:].sum()]
        nt = item.non_tensor_batch
        extra = dict(nt.get("extra_info") or {})
        if nt.get("tool_extra_fields") is not None:
            extra.update(nt["tool_extra_fields"].items())
        if nt.get("global_steps") is not None:  # verl's v1 agent loop passes the batch's step with every sample
            extra.setdefault("global_steps", int(nt["global_steps"]))
        return {"data_source": nt.get("data_source"), "ground_truth": (nt.get("reward_model") or {}).get("ground_truth"),
                "extra_info": extra, "ids": valid}

    async def run_single(self, data: DataProto) -> dict:
        it = self._item(data)
        it["text"] = await self.loop.run_in_executor(
            None, lambda: self.tokenizer.decode(it.pop("ids"), skip_special_tokens=True))
        if self.reward == CHALLENGER:
            key = it["extra_info"].get("global_steps")
            res = await _collector()(key, it, self.batch_size, self.batch_wait_s, self.kwargs)
        elif self.reward == TEACHABILITY:  # needs only the sample's own solver groups
            res = (await self._run(vr.compute_teachability_scores, [it["data_source"]], [it["text"]],
                                   [it["ground_truth"]], [it["extra_info"]]))[0]
        else:
            res = await self._run(vr.compute_score, it["data_source"], it["text"], it["ground_truth"],
                                  it["extra_info"])
        return {"reward_score": float(res["score"]), "reward_extra_info": dict(res)}

    async def _run(self, fn, *args) -> Any:
        kw = self.kwargs
        return await self.loop.run_in_executor(None, lambda: fn(*args, **kw))


