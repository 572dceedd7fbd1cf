"""A stub of the facts world contract (/work/notes/FACTS_CONTRACT.md) and scripted policies, for
the Dr. Zero / MSV / CrossFit recipe tests: every number they produce can be worked out by hand.

World: 8 sources ``src0``..``src7``; question ``q<i>`` comes from source ``src<i % 8>`` and its
true answer is ``a<i>``; a source in ``misread`` states the wrong value ``w<i>`` for its own
questions (every other source states ``a<i>``).  A search
returns the value that the first *retrievable* source of the question states: its own source if
allowed (so a misread source gives ``w<i>``), else another source, which is right.  The
scripted solver searches once and answers what it read; the source-aware view reads the
source; the scripted proposer writes the question of its passage with the value its source
states (its draft).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from coevo.core.policy import Completion
from coevo.core.world import ANSWER, ParseResult, Task

N_SOURCES = 8


@dataclass(frozen=True)
class Ctx:
    prompt: str
    source_id: str
    passage_id: str
    hops: int


@dataclass
class StubFactsWorld:
    misread: frozenset = frozenset({"src0", "src1"})
    name: str = "facts"
    prompt_version: str = "stub-1"
    has_oracle: bool = True
    verifier_kind: str = "world-equivalent"
    tool_log: list = field(default_factory=list)  # retrieve_sources of every tool call

    @classmethod
    def from_config(cls, cfg):
        rate = float(cfg.world.options.get("misread_rate", 0.25))
        return cls(misread=frozenset(f"src{i}" for i in range(round(rate * N_SOURCES))))

    def sources(self):
        return [f"src{i}" for i in range(N_SOURCES)]

    def misread_sources(self):
        return set(self.misread)

    def value(self, i: int, source: str) -> str:
        """What ``source`` states for question i: wrong only in the question's own source, if misread."""
        return f"w{i}" if source in self.misread and source == f"src{i % N_SOURCES}" else f"a{i}"

    def proposer_contexts(self, n: int, seed: int):
        hops = [1, 1, 1, 1, 2, 2, 2, 3, 3, 4]  # 4:3:2:1
        out = []
        for j in range(n):
            i = (seed * 7 + j) % 40
            h = hops[(seed + j) % 10]
            out.append(Ctx(f"<passage src{i % N_SOURCES}|q{i}|{h}>", f"src{i % N_SOURCES}", f"p{i}", h))
        return out

    def proposer_prompts(self, n, seed):
        return [c.prompt for c in self.proposer_contexts(n, seed)]

    def parse_task(self, text: str, task_id: str, context=None) -> ParseResult:
        q = re.search(r"<question>(.*?)</question>", text)
        a = re.search(r"<answer>(.*?)</answer>", text)
        if not q:
            return ParseResult(None, "no-question-tag")
        if not a:
            return ParseResult(None, "no-answer-tag")
        meta = {"source_id": context.source_id, "passage_id": context.passage_id, "hops": context.hops,
                "difficulty": f"hop{context.hops}"}
        return ParseResult(Task(task_id, q.group(1), a.group(1), meta=meta))

    def solver_prompt(self, task: Task) -> str:
        return f"<solve>{task.question}|"

    def solver_prompt_with_source(self, task: Task) -> str:
        i = int(task.question[1:])
        return f"<source {self.value(i, task.meta['source_id'])}><solve>{task.question}|"

    def tool_stops(self, kind: str):
        return ["</search>"] if kind == ANSWER else []

    def run_tool(self, context, text_so_far: str):
        allowed = context.meta.get("retrieve_sources")
        self.tool_log.append(None if allowed is None else frozenset(allowed))
        i = int(context.question[1:])
        own = f"src{i % N_SOURCES}"
        order = [own] + [s for s in self.sources() if s != own]
        src = next(s for s in order if allowed is None or s in allowed)
        return f"<information>{self.value(i, src)}</information>"

    def extract_answer(self, text: str):
        m = re.findall(r"<answer>(.*?)</answer>", text)
        return m[-1].strip() if m else None

    def equivalent(self, a, b) -> bool:
        return a is not None and b is not None and a.strip() == b.strip()

    def repetition_text(self, q):
        return q

    def oracle(self, task: Task):
        return f"a{int(task.question[1:])}"

    def eval_set(self):
        return [Task(f"e{i}", f"q{i}", None, {"difficulty": f"hop{1 + i % 4}", "source_id": f"src{i % 8}"})
                for i in range(8)]


class FakePolicy:
    def __init__(self, name: str) -> None:
        self.name, self.updates, self.batches = name, 0, []

    @property
    def version(self) -> str:
        return f"{self.name}:fake+{self.updates}"

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def _comp(self, prompt: str, text: str, stop: str | None = None) -> Completion:
        meta = {"stop": stop} if stop else {}
        ids = self.tokenize(text + (stop or ""))
        return Completion(prompt, text, [1], ids, [0.0] * len(ids), "stop", self.version, meta=meta)

    def forward_backward(self, batch, advantages, loss, **kw) -> dict:
        self.batches.append((list(batch), list(advantages)))
        return {"loss": 0.0}

    def optim_step(self) -> dict:
        self.updates += 1
        return {"grad_norm": 0.0}

    def set_reference(self):
        pass


class FakeProposer(FakePolicy):
    """Writes the question of its passage and the value its source states; every 5th prompt of
    a batch is malformed (no answer tag)."""

    def __init__(self, world: StubFactsWorld) -> None:
        super().__init__("proposer")
        self.world = world

    def sample(self, prompts, n, sampling, token_prefixes=None):
        out = []
        for j, p in enumerate(prompts):
            src, q, _ = p[len("<passage "):-1].split("|")
            text = f"<question>{q}</question>"
            if j % 5 != 4:
                text += f"<answer>{self.world.value(int(q[1:]), src)}</answer>"
            out.append([self._comp(p, text) for _ in range(n)])
        return out


class FakeSolver(FakePolicy):
    """Searches once, then answers what the search returned (source-aware: what the source says)."""

    def sample(self, prompts, n, sampling, token_prefixes=None):
        out = []
        for j, p in enumerate(prompts):
            if p.startswith("<source "):
                val = p[len("<source "):p.index(">")]
                out.append([self._comp(p, f"<answer>{val}</answer>") for _ in range(n)])
            elif token_prefixes is None:
                q = p[len("<solve>"):-1]
                out.append([self._comp(p, f"<search>{q}", stop="</search>") for _ in range(n)])
            else:
                seen = "".join(chr(i) for i in token_prefixes[j])
                m = re.findall(r"<information>(.*?)</information>", seen)
                out.append([self._comp(p, f"<answer>{m[-1] if m else 'none'}</answer>") for _ in range(n)])
        return out
