"""coevo's math and facts worlds as a ``verifiers`` environment (docs/integrations.md, "verifiers (prime-rl)";
tested against verifiers 0.4.0, whose whole stack is ``verifiers.v1``).

verifiers 0.4.0 has no ``SingleTurnEnv``/``Rubric`` any more: an environment is a *taskset* (``vf.Taskset``
loading ``vf.Task`` objects whose ``@vf.reward`` / ``@vf.metric`` methods score a ``vf.Trace``) played by an
*agent* (a harness program in a runtime) inside a ``vf.Env`` (``SingleAgentEnv`` for a plain taskset).
``vf-eval`` and prime-rl find a taskset by a plain module name that exports exactly one ``Taskset``
subclass (and optionally one ``Harness``) in ``__all__``; this module registers itself as
``coevo_verifiers`` for that (a dotted name is not accepted there), and
``python -m coevo.integrations.verifiers ARGS`` is ``vf-eval ARGS`` with that name importable.

* ``CoevoTaskset``: config ``world = "math" | "facts"``. Math: the world's eval set (``tasks_path``: a JSONL
  of ``{"id", "question", "answer"}``), the world's Solver prompt, the last ``\\boxed{}``. Facts (search-QA):
  **single turn with the passages**: verifiers 0.4.0 serves tools as MCP servers to the harness program; the
  prompt holds instead the passages a search per hop returns along the chain (the top hit's object feeding
  the next hop, as a reader of Search-R1 would go), then the world's Solver prompt; the answer is the last
  ``<answer>…</answer>``, judged by the world's ``em`` verifier.
* ``CoevoTask.coevo_reward``: the rubric, coevo's verifier through the killable verifier pool, its
  timeouts kept. verifiers' rewards are floats (``Trace.record_reward`` calls ``float()``): an
  abstention (timeout, no target, ...) is returned as ``task.abstain`` (default 0.0, what a float rubric
  would have given) **and counted**: the metric ``coevo_abstained`` is 1.0 on that trace, and its ledger
  reward row holds NULL with ``abstained = true`` and the reason.
* ``CoevoChatHarness``: verifiers' own tool-less chat program (the ``null`` harness's, verifiers'
  bundled source) run with this Python instead of a ``uv``-provisioned one, which would download its
  packages at run time; the model calls still go through verifiers' interception server.

Rows go to ``task.ledger`` (or ``$COEVO_LEDGER``) through ``coevo.integrations.ledger_writer``, tagged
``verifiers`` with the installed version and ``task.role``; the step is ``task.step`` (an eval has none).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

import verifiers.v1 as vf
from verifiers.v1.harnesses.null import NullHarness, NullHarnessConfig
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

from coevo.integrations.common import LEDGER_ENV, build_verifier, extract_answer, part_writer
from coevo.integrations.scoring import Framework, SolverItem, installed_version, solver_rows

__all__ = ["CoevoTaskset", "CoevoChatHarness", "load_environment", "ENV_ID", "WORLDS"]

ENV_ID = "coevo_verifiers"  # the plain module name vf-eval / prime-rl import this taskset by
WORLDS = ("math", "facts")
_CACHE: dict = {}


def framework() -> Framework:
    if "fw" not in _CACHE:
        _CACHE["fw"] = Framework("verifiers", installed_version("verifiers"))
    return _CACHE["fw"]


# ---------------------------------------------------------------------- the task
class CoevoData(vf.TaskData):
    """One coevo task: the world, its task id and reference (None: no target, the verifier abstains)."""
    world: str = "math"
    task_id: str = ""
    question: str = ""
    answer: Optional[str] = None


class CoevoTaskConfig(vf.TaskConfig):
    """The rubric's settings (``--env.taskset.task.*``)."""
    ledger: Optional[str] = None
    verifier: Optional[str] = None  # a coevo verifier kind; default: the world's (math: math, facts: em)
    verifier_options: dict = {}
    verify_workers: Optional[int] = None  # None: the process's verifier pool; 0: in-process (no timeouts)
    timeout_s: Optional[float] = None  # per item, enforced by the pool; None: the pool's (5 s)
    abstain: float = 0.0  # the float verifiers gets for an abstention (counted apart: coevo_abstained)
    step: int = 0
    role: str = "solver"
    flush_rows: int = 4096
    flush_s: float = 5.0


class CoevoTask(vf.Task[CoevoData, vf.State, CoevoTaskConfig]):
    """A coevo task scored by coevo's verifier (see the module docstring)."""

    @vf.reward(weight=1.0)
    async def coevo_reward(self, trace: vf.Trace) -> float:
        d, c = self.data, self.config
        text = trace.last_reply
        answer = _answer_of(d.world, text)
        rv = build_verifier(c.verifier or _world_kind(d.world), dict(c.verifier_options) or None, c.verify_workers,
                            c.timeout_s)
        verdict = (await asyncio.to_thread(rv.match_many, [(answer, d.answer)]))[0]
        abstained = verdict.value is None
        trace.record_metric("coevo_abstained", 1.0 if abstained else 0.0)
        _write_rows(c, d, text, answer, verdict, str(trace.id))
        return float(c.abstain) if abstained else float(verdict.value)


def _answer_of(world: str, text: Optional[str]) -> Optional[str]:
    if world == "facts":
        from coevo.worlds.facts import FactsWorld

        return FactsWorld.extract_answer(None, text or "")  # the last <answer>…</answer>; no world state
    return extract_answer(text, "boxed")


def _world_kind(world: str) -> str:
    return "em" if world == "facts" else "math"


def _write_rows(c: CoevoTaskConfig, d: CoevoData, text, answer, verdict, trace_id: str) -> None:
    root = c.ledger or os.environ.get(LEDGER_ENV)
    if not root:
        return
    fw = framework()
    w = part_writer(Path(root), fw.name, fw.version, c.flush_rows, c.flush_s)
    groups = _CACHE.setdefault("groups", {})
    key = (root, c.step, d.task_id)
    g = groups[key] = groups.get(key, -1) + 1  # the k-th rollout of this task at this step (this process)
    it = SolverItem(d.task_id, text, d.answer, d.question)
    it.answer, it.verdicts = answer, [verdict]
    it.meta = {"step_from": "task.step", "world": d.world, "trace_id": trace_id,
               "abstain_value": float(c.abstain)}
    score = None if verdict.value is None else float(verdict.value)  # NULL = abstained
    w.write(lambda: solver_rows(w.part, w.next_id, fw, c.step, [it], [score], "oracle", role=c.role, group_idx=[g]),
            n_rows=4)


# ---------------------------------------------------------------------- the taskset
class CoevoTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: the world, its tasks, the rubric (``task``)."""
    world: str = "math"
    tasks_path: Optional[str] = None  # math: a JSONL of {"id", "question", "answer"}; default: the shipped sample
    world_options: dict = {}  # facts: FactsWorld's options (seed, surface, eval_per_hop, ...)
    task: CoevoTaskConfig = CoevoTaskConfig()


class CoevoTaskset(vf.Taskset[CoevoTask, CoevoTasksetConfig]):
    def load(self) -> list[CoevoTask]:
        world = self.config.world
        if world not in WORLDS:
            raise ValueError(f"coevo verifiers env: world must be one of {WORLDS}, got {world!r}")
        rows = _math_rows(self.config) if world == "math" else _facts_rows(self.config)
        return [CoevoTask(CoevoData(id=tid, prompt=prompt, world=world, task_id=tid, question=q, answer=ref),
                          self.config.task) for tid, q, ref, prompt in rows]


def _math_rows(cfg: CoevoTasksetConfig) -> list:
    from coevo.worlds.math import MathWorld

    if cfg.world_options:
        raise ValueError(f"coevo verifiers env: the math world takes no world_options, got {sorted(cfg.world_options)}")
    world = MathWorld(eval_path=cfg.tasks_path)
    return [(t.task_id, t.question, t.reference, world.solver_prompt(t)) for t in world.eval_set()]


def _facts_rows(cfg: CoevoTasksetConfig) -> list:
    from coevo.worlds.facts import FactsWorld

    if cfg.tasks_path:
        raise ValueError("coevo verifiers env: the facts world draws its own eval set; tasks_path is for math")
    world = FactsWorld(**dict(cfg.world_options))
    return [(t.task_id, t.question, t.reference, facts_prompt(world, t)) for t in world.eval_set()]


def facts_prompt(world, task) -> str:
    """Single-turn facts prompt: per hop the ``<information>`` block a search for that hop returns, the
    next hop starting from the object the top passage states, then the world's Solver prompt."""
    parsed = world.parse_chain(task.question)
    blocks = []
    if parsed is not None:
        entity, hops = parsed
        for hop in hops:
            hits = world.search([world.hop_query(entity, hop)])[0]
            blocks.append(world.render_information(hits))
            if not hits:
                break
            entity = world.read_object(hits[0])
    return "".join(blocks) + world.solver_prompt(task)


# ---------------------------------------------------------------------- the harness
class CoevoChatHarnessConfig(NullHarnessConfig):
    pass


class CoevoChatHarness(NullHarness):
    """verifiers' ``null`` harness (its chat program, tool-less here) run by this Python: no ``uv``."""

    async def setup(self, runtime) -> None:
        return None

    async def launch(self, ctx, trace, runtime, endpoint: str, secret: str, mcp_urls: dict, data,
                     tool_interception_url: Optional[str] = None):
        system_prompt, prompt = self.resolve_text_prompt(data)
        path = f".coevo-chat-{hashlib.sha256(CHAT_PROGRAM_SOURCE.encode()).hexdigest()[:16]}.py"
        await runtime.write(path, CHAT_PROGRAM_SOURCE.encode())
        args = [sys.executable, path, f"--base-url={endpoint}", f"--api-key={secret}", f"--model={ctx.model}"]
        if system_prompt:
            args.append(f"--system-prompt={system_prompt}")
        if prompt is not None:
            args.append(f"--prompt={prompt}")
        if mcp_urls:
            args.append("--mcp-config=" + json.dumps({"mcpServers": {
                n: {"url": u, "timeout": self.config.tool_timeout} for n, u in mcp_urls.items()}}))
        return await runtime.run_program(args, {**self.config.resolved_env})


# ---------------------------------------------------------------------- entry points
def load_environment(world: str = "math", ledger: Optional[str] = None, tasks_path: Optional[str] = None,
                     world_options: Optional[dict] = None, runtime: str = "subprocess", **task: Any):
    """A ``vf.Env`` (``SingleAgentEnv``) over coevo's ``world``: ``task`` = the rubric's settings
    (``CoevoTaskConfig``: verifier, timeout_s, abstain, step, role, ...); ``runtime``: where the chat
    program runs (verifiers' runtime type; ``subprocess`` = this machine)."""
    if world not in WORLDS:
        raise ValueError(f"coevo verifiers env: world must be one of {WORLDS}, got {world!r}")
    bad = sorted(set(task) - set(CoevoTaskConfig.model_fields))
    if bad:
        raise ValueError(f"coevo verifiers env: unknown option(s) {bad}; known: {sorted(CoevoTaskConfig.model_fields)}")
    cfg = vf.resolve_env_config({
        "taskset": {"id": ENV_ID, "world": world, "tasks_path": tasks_path, "world_options": world_options or {},
                    "task": dict(task, ledger=ledger)},
        "agent": {"harness": {"id": ENV_ID}, "runtime": {"type": runtime}}})
    return vf.load_environment(cfg)


sys.modules.setdefault(ENV_ID, sys.modules[__name__])


def main(argv: Optional[list] = None) -> None:
    """``vf-eval`` with this module importable as ``coevo_verifiers``."""
    from verifiers.v1.cli.eval.main import main as vf_eval

    vf_eval(list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    from coevo.integrations.verifiers import main as _main  # the module proper (registered), not __main__

    _main()
