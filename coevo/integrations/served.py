"""A world served to an outside agent, one answer at a time (docs/integrations.md, "OpenEnv" and "NeMo Gym
/verify"): the tasks, the verifier, the ledger part, and the scoring of one answer. Names no framework:
``coevo.integrations.openenv`` wraps it in OpenEnv's environment server, and ``verify_request`` answers a
request in NeMo Gym's ``/verify`` shape (plain dicts: no NeMo Gym or web framework needed here).

* The tasks: the math world's shipped reference set (``coevo/data/eval_sample_math.jsonl``) or a JSONL of
  ``question`` + ``answer`` rows (``tasks=``); the facts world's oracle-answered evaluation chains
  (``FactsWorld(seed).eval_set()``, 50 per hop count). The reference of a task is its oracle truth.
* The answer: extracted by the world's rule (math: the last ``\\boxed{}``, else after ``####``; facts:
  the last ``<answer>…</answer>``), or the text as is (``extract="raw"``), then judged by coevo's verifier
  (``verifier=``: default the world's kind, ``math`` / ``em``) through the killable verifier pool with
  its timeouts. Tri-state: 1, 0 (also: no answer), None = the verifier abstained (reason recorded).
* The ledger: ``coevo.integrations.scoring.solver_rows`` per scored answer (one task row per task and
  step with the oracle answer, the rollout, the verdict with its reason, the reward: NULL = abstained),
  into this process's part (``ledger_writer.part_writer``), tagged with the framework, its version and
  the role ``solver``. ``coevo import parts LEDGER --out RUN`` then ``coevo audit RUN``.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from coevo.integrations.common import as_reference, build_verifier, extract_answer, part_writer
from coevo.integrations.scoring import Framework, SolverItem, installed_version, solver_rows

__all__ = ["WORLDS", "ServedWorld", "Scored", "REFERENCE_KEYS", "ABSTAINED_KIND", "response_text", "verify_request"]

WORLDS = ("math", "facts")
REFERENCE_KEYS = ("expected_answer", "answer", "ground_truth", "solution")  # NeMo Gym's math rows: expected_answer
ABSTAINED_KIND = "coevo:abstained"  # NeMo Gym's failure_kind: a namespaced "<server>:<kind>"
NEMO_GYM = Framework("nemo-gym", installed_version("nemo-gym"))  # the caller's framework ("" when not installed here)


@dataclass
class Scored:
    """One judged answer: the extracted answer, the verdict, the reward given."""
    answer: Optional[str]
    verdict: Any  # coevo.core.verdict.Verdict
    reward: Optional[float]

    @property
    def label(self) -> str:
        return "abstained" if self.verdict.value is None else ("correct" if self.verdict.value == 1 else "wrong")


class ServedWorld:
    """The tasks of ``world`` ("math" | "facts"), the verifier and the ledger part of a served world."""

    def __init__(self, world: str = "math", tasks: Optional[str] = None, seed: int = 0, verifier: Optional[str] = None,
                 extract: Optional[str] = None, abstain: Optional[float] = None, ledger: Optional[str] = None,
                 verify_workers: Optional[int] = None, timeout_s: Optional[float] = None, flush_rows: int = 4096,
                 flush_s: float = 5.0, framework: str = "openenv", framework_dist: str = "openenv-core") -> None:
        if world not in WORLDS:
            raise ValueError(f"world must be one of {', '.join(WORLDS)}, got {world!r}")
        if extract not in (None, "world", "raw"):
            raise ValueError(f"extract must be world or raw, got {extract!r}")
        if tasks is not None and world != "math":
            raise ValueError("tasks= (a JSONL of question/answer rows) is for the math world only")
        self.world_name, self.extract = world, extract or "world"
        self.world, self.tasks = _load(world, tasks, seed)
        if not self.tasks:
            raise ValueError(f"no tasks in {tasks}")
        self.by_id = {t.task_id: t for t in self.tasks}
        self.kind = verifier or self.world.verifier_kind
        self.rv = build_verifier(self.kind, None, verify_workers, timeout_s)
        self.abstain = abstain
        self.fw = Framework(framework, installed_version(framework_dist))
        self.ledger, self.flush_rows, self.flush_s = ledger, int(flush_rows), float(flush_s)
        self.lock = threading.Lock()
        self.groups: dict[tuple[str, int], int] = {}  # (task, step) -> answers scored so far
        self.n_scored = 0

    def writer(self):
        """This process's ledger part (None without a ledger); opened at once by ``open_ledger``."""
        if not self.ledger:
            return None
        return part_writer(Path(self.ledger), self.fw.name, self.fw.version, self.flush_rows, self.flush_s)

    def pick(self, task_id: Optional[str] = None, seed: Optional[int] = None):
        """The task ``task_id``; else task ``seed mod n``; else the next in turn (round robin)."""
        if task_id is not None:
            if task_id not in self.by_id:
                raise ValueError(f"unknown task_id {task_id!r}")
            return self.by_id[task_id]
        if seed is not None:
            return self.tasks[int(seed) % len(self.tasks)]
        with self.lock:
            self.turn = getattr(self, "turn", -1) + 1
            return self.tasks[self.turn % len(self.tasks)]

    def prompt(self, task) -> str:
        """What the agent is shown: the world's Solver prompt of the task (the question and how to answer)."""
        return self.world.solver_prompt(task)

    def extract_of(self, text: Optional[str]) -> Optional[str]:
        if self.world_name == "facts" and self.extract != "raw" and text is not None:
            return self.world.extract_answer(text)
        return extract_answer(text, "raw" if self.extract == "raw" else "auto")

    def score(self, task, text: Optional[str], step: int = 0, step_from: str = "none", fw: Optional[Framework] = None,
              meta: Optional[dict] = None) -> Scored:
        """Judge ``text`` against the task's oracle truth and write the rows; the truth stays here."""
        fw = fw or self.fw
        item = SolverItem(task.task_id, text, as_reference(task.reference), task.question,
                          meta=dict(meta or {}, step_from=step_from, world=self.world_name),
                          answer=self.extract_of(text))
        item.verdicts = self.rv.match_many([(item.answer, item.reference)])  # through the pool, its timeouts
        v = item.verdicts[0]
        reward = (None if self.abstain is None else float(self.abstain)) if v.value is None else float(v.value)
        with self.lock:
            g = self.groups.get((task.task_id, step), -1) + 1
            self.groups[(task.task_id, step)] = g
            self.n_scored += 1
        w = self.writer()
        if w is not None:
            w.write(lambda: solver_rows(w.part, w.next_id, fw, step, [item], [reward], group_idx=[g]), n_rows=4)
        return Scored(item.answer, v, reward)


def _load(world: str, tasks: Optional[str], seed: int):
    if world == "facts":
        from coevo.worlds.facts import FactsWorld

        w = FactsWorld(seed=seed)
        return w, list(w.eval_set())
    from coevo.worlds.math import MathWorld, load_jsonl_tasks

    w = MathWorld()
    if tasks is None:
        return w, list(w.eval_set())
    if not Path(tasks).is_file():
        raise ValueError(f"tasks file not found: {tasks}")
    return w, load_jsonl_tasks(tasks)


# ---------------------------------------------------------------------- NeMo Gym's /verify
def response_text(response: Any) -> str:
    """The text of an OpenAI Responses object as NeMo Gym's resource servers read it: the ``output_text``
    parts of its ``message`` output items, joined (reasoning and tool-call items are skipped)."""
    if not isinstance(response, dict) or not isinstance(response.get("output"), list):
        raise ValueError("response must be an OpenAI Responses object with an 'output' list")
    parts = []
    for item in response["output"]:
        if isinstance(item, dict) and item.get("type") == "message":
            for c in item.get("content") or []:
                if isinstance(c, dict) and c.get("type") == "output_text":
                    parts.append(str(c.get("text") or ""))
    return "".join(parts)


def verify_request(served: ServedWorld, body: Any) -> dict:
    """The ``/verify`` answer to a NeMo Gym ``BaseVerifyRequest`` body: the dataset row's fields (the
    reference in the first of ``REFERENCE_KEYS``), ``responses_create_params`` and ``response`` (an OpenAI
    Responses object). Returns the request as sent plus ``reward`` (1.0 / 0.0), NeMo Gym's
    ``mask_sample`` / ``failure_kind`` / ``failure_reason`` (an abstention: ``mask_sample`` true,
    ``failure_kind`` "coevo:abstained", the verifier's reason; the reward is then ``abstain``, 0.0 by
    default, as NeMo Gym's reward is a float) and coevo's ``extracted_answer`` and ``coevo_verdict``.
    ValueError (the server's 422) for a body without those fields."""
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    missing = [k for k in ("responses_create_params", "response") if k not in body]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)} (NeMo Gym's BaseVerifyRequest)")
    key = next((k for k in REFERENCE_KEYS if k in body), None)
    if key is None:
        raise ValueError(f"no reference field: one of {', '.join(REFERENCE_KEYS)}")
    text = response_text(body["response"])
    from coevo.core.world import Task

    q = body.get("question") or _question_of(body["responses_create_params"])
    tid = str(body.get("task_id") or body.get("id") or
              "nemo-gym:" + hashlib.sha1(f"{q}|{body[key]}".encode()).hexdigest()[:12])
    task = Task(task_id=tid, question=q, reference=as_reference(body[key]))
    step = body.get("step") if isinstance(body.get("step"), int) and not isinstance(body.get("step"), bool) else None
    s = served.score(task, text, step or 0, "request.step" if step is not None else "none", NEMO_GYM,
                     {"protocol": "verify", "served_by": served.fw.label})
    abstained = s.verdict.value is None
    reward = s.reward if s.reward is not None else 0.0
    return {**body, "reward": reward, "mask_sample": abstained, "failure_kind": ABSTAINED_KIND if abstained else None,
            "failure_reason": s.verdict.reason if abstained else None, "extracted_answer": s.answer,
            "coevo_verdict": {"value": s.verdict.value, "label": s.label, "reason": s.verdict.reason,
                              "kind": s.verdict.kind, "version": s.verdict.version}}


def _question_of(params: Any) -> Optional[str]:
    """The last user message of ``responses_create_params.input`` (a string input as is)."""
    inp = params.get("input") if isinstance(params, dict) else None
    if isinstance(inp, str):
        return inp
    for m in reversed(inp or []):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return "".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
            return None if c is None else str(c)
    return None
