"""Facts world: a generated encyclopedia with an oracle, searched by a Search-R1 agent
(issue #11, False Frontiers; the contract is /work/notes/FACTS_CONTRACT.md, docs/facts.md).

The proposer reads passages and writes a chain question (``relation_n of … of relation_1
of entity``, 1–4 hops, hop counts 4:3:2:1 as Dr. Zero) with a draft answer; the solver
answers with a retriever:

    <search>query</search>  ->  <information>top-k passages</information>  -> … ->  <answer>a</answer>

Generation, planted misreadings and the two surfaces are in ``coevo.worlds.facts_gen``;
the real-model prompts in ``coevo.worlds.facts_prompts``.  Codes surface (tiny models)::

    proposer prompt   <propose>2;e42r1 x e17;e17r2 y e05
    proposer          <question>e42r1 x r2 y</question><answer>e05</answer>
    solver prompt     <solve>e42r1 x r2 y
    solver            <search>e42r1 x</search>
    world (inserted)  <information>e42r1 x e17;e42r1 z e17</information>
    solver            <search>e17r2 y</search> … <answer>e05</answer>

The tiny proposer is shown the chain's passages (a simplification of Dr. Zero's proposer,
which is shown one document and searches n − 1 times; the text surface keeps that).
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Collection, Sequence

from coevo.retrieval.base import Passage, format_passages
from coevo.worlds import facts_gen as G
from coevo.worlds import facts_prompts as P
from coevo.core.world import ANSWER, QUESTION, ParseResult, ResponseFormat, Task, last_question

SEARCH_OPEN, SEARCH_CLOSE = "<search>", "</search>"
INFO_OPEN, INFO_CLOSE = "<information>", "</information>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
SURFACES = ("codes", "text")
_SEARCH_RE = re.compile(r"<search>(.*?)</search>\s*$", re.S)
_ANSWER_RE = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.S)
_CODE_Q = re.compile(r"^e(\d+)r(\d) ([xyz])((?: r\d [xyz])*)$")
_CODE_HOP = re.compile(r"r(\d) ([xyz])")


@dataclass(frozen=True)
class ProposerContext:
    """What one proposer prompt is about: its anchor passage, that passage's source, the hop
    count asked for; ``chain``: the pids of the passages the question should follow."""

    prompt: str
    source_id: str
    passage_id: str
    hops: int
    chain: tuple[str, ...] = ()


@dataclass
class FactsWorld:
    seed: int = 0
    n_entities: int = 60
    n_sources: int = 100
    n_relations: int = 5
    misread_rate: float = 0.3
    misread_shared: bool = False  # a control: every source of a planted fact states the same wrong value
    surface: str = "codes"
    topk: int | None = None  # default: 2 (codes, short contexts for the tiny models), 3 (text, Search-R1)
    retriever: str = "bm25"
    retriever_url: str | None = None
    retriever_timeout_s: float = 30.0
    hop_ratio: Sequence[float] = (4, 3, 2, 1)
    eval_per_hop: int = 50
    eval_seed: int = 4242
    name: str = "facts"
    prompt_version: str = "facts-v1"
    has_oracle: bool = True
    max_turns: int = 5  # advice for the rollout driver: a 4-hop chain needs 4 searches
    verifier_kind: ClassVar[str] = "em"
    enc: G.Encyclopedia = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.surface not in SURFACES:
            raise ValueError(f"facts world: surface must be one of {SURFACES}, got {self.surface!r}")
        if self.retriever not in ("bm25", "http"):
            raise ValueError(f"facts world: retriever must be bm25 or http, got {self.retriever!r}")
        if len(self.hop_ratio) != 4 or any(float(x) < 0 for x in self.hop_ratio) or not sum(self.hop_ratio):
            raise ValueError("facts world: hop_ratio needs 4 non-negative weights (hops 1..4)")
        if self.topk is None:
            self.topk = 2 if self.surface == "codes" else 3
        self.enc = G.generate(self.seed, self.n_entities, self.n_sources, self.misread_rate, self.n_relations,
                              misread_shared=self.misread_shared)
        self.width = G.code_width(self.n_entities)
        self._passages = [self._passage(st) for st in self.enc.statements]
        self._retriever = None
        self._eval: list[Task] | None = None
        self._names = {n.lower(): i for i, n in enumerate(self.enc.names)}
        for i, al in enumerate(self.enc.aliases):
            for a in al:
                self._names.setdefault(a.lower(), i)
        self._nouns = {noun: (r, w) for r, syn in enumerate(G.RELATIONS[:self.n_relations]) for w, noun in enumerate(syn)}

    @classmethod
    def option_names(cls) -> frozenset:
        """The ``world.options`` keys it takes (checked when the config loads: coevo.worlds.check_options)."""
        return frozenset(cls.__dataclass_fields__) - {"enc", "name", "prompt_version", "has_oracle"}

    @classmethod
    def from_config(cls, cfg: Any) -> "FactsWorld":
        opts = dict(cfg.world.options or {})
        opts.setdefault("eval_seed", cfg.world.eval_seed)
        known = cls.option_names()
        bad = sorted(set(opts) - known)
        if bad:
            raise ValueError(f"facts world: unknown option(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
        if "hop_ratio" in opts:
            opts["hop_ratio"] = tuple(opts["hop_ratio"])
        return cls(**opts)

    # ------------------------------------------------------------------ corpus
    def _passage(self, st: G.Statement) -> Passage:
        if self.surface == "codes":
            return Passage(st.pid, st.source, G.code_statement(st, self.width))
        return Passage(st.pid, st.source, G.text_statement(self.enc, st), title=self.enc.names[st.subject])

    def passages(self) -> list[Passage]:
        return list(self._passages)

    def sources(self) -> list[str]:
        return sorted(self.enc.by_source)

    def source_text(self, source_id: str) -> str:
        ps = [self._passages_by_pid()[st.pid] for st in self.enc.by_source.get(source_id, [])]
        return (";" if self.surface == "codes" else "\n").join(p.text for p in ps)

    def _passages_by_pid(self) -> dict[str, Passage]:
        if not hasattr(self, "_by_pid"):
            self._by_pid = {p.pid: p for p in self._passages}
        return self._by_pid

    def misread_sources(self) -> set[str]:
        """The sources with a planted misreading (for tests and audits only; ``misread_shared``: every
        source of a planted fact)."""
        return {st.source for st in self.enc.statements if st.misread}

    def get_retriever(self):
        if self._retriever is None:
            if self.retriever == "http":
                from coevo.retrieval.http import HTTPRetriever

                if not self.retriever_url:
                    raise ValueError("facts world: retriever=http needs retriever_url")
                self._retriever = HTTPRetriever(self.retriever_url, timeout_s=self.retriever_timeout_s)
            else:
                from coevo.retrieval.bm25 import BM25Retriever

                # codes tokens are short ids: no stop words; text: bm25s's English list
                self._retriever = BM25Retriever(self._passages, stopwords=() if self.surface == "codes" else None)
        return self._retriever

    def search(self, queries: Sequence[str], sources: Collection[str] | None = None,
               k: int | None = None) -> list[list[Passage]]:
        return self.get_retriever().search(list(queries), k or self.topk, sources=sources)

    def render_information(self, hits: Sequence[Passage]) -> str:
        if self.surface == "codes":
            return INFO_OPEN + ";".join(p.text for p in hits) + INFO_CLOSE
        return f"\n\n{INFO_OPEN}{format_passages(hits).strip()}{INFO_CLOSE}\n\n"

    # ------------------------------------------------------------------ questions
    def chain_question(self, start: int, hops: list[tuple[int, int]]) -> str:
        if self.surface == "codes":
            return G.code_question(start, hops, self.width)
        return G.text_question(self.enc, start, hops)

    def parse_chain(self, question: str) -> tuple[int, list[tuple[int, int]]] | None:
        """(start entity, [(relation, wording), …] innermost first), or None if unparsable."""
        q = (question or "").strip()
        if self.surface == "codes":
            m = _CODE_Q.match(q)
            if not m:
                return None
            hops = [(int(m.group(2)), "xyz".index(m.group(3)))]
            hops += [(int(r), "xyz".index(w)) for r, w in _CODE_HOP.findall(m.group(4))]
            start = int(m.group(1))
            if len(m.group(1)) != self.width or start >= self.n_entities or any(r >= self.n_relations for r, _ in hops):
                return None
            return start, hops
        return self._parse_text(q)

    def _parse_text(self, q: str) -> tuple[int, list[tuple[int, int]]] | None:
        m = re.match(r"^(?:who|what) (?:is|was) the (.+?)\s*\?*$", q, re.I)
        if not m:
            return None
        body = m.group(1)
        head, sep, name = body.rpartition(" of ")
        if not sep:
            return None
        start = self._names.get(name.strip().strip(".").lower())
        nouns = [n.strip().lower() for n in head.split(" of the ")]
        if start is None or not nouns or any(n not in self._nouns for n in nouns):
            return None
        return start, [self._nouns[n] for n in reversed(nouns)]

    def render_entity(self, e: int) -> str:
        return G.code_entity(e, self.width) if self.surface == "codes" else self.enc.names[e]

    def _draw_hops(self, rng: random.Random) -> int:
        return rng.choices([1, 2, 3, 4], weights=[float(x) for x in self.hop_ratio])[0]

    def build_chain(self, anchor: G.Statement, hops: int, rng: random.Random) -> list[G.Statement]:
        """The passages a reader follows from ``anchor``: each next hop is a random relation of
        the entity the previous passage *states* (a misread value is followed), read in one of
        the fact's statements drawn at random (as a search would land on one source)."""
        chain, cur = [anchor], anchor.obj
        for _ in range(hops - 1):
            r = rng.randrange(self.n_relations)
            st = rng.choice(self.enc.by_fact[(cur, r)])
            chain.append(st)
            cur = st.obj
        return chain

    def question_of_chain(self, chain: Sequence[G.Statement]) -> str:
        return self.chain_question(chain[0].subject, [(st.relation, st.wording) for st in chain])

    # ------------------------------------------------------------------ proposer side
    def proposer_contexts(self, n: int, seed: int = 0) -> list[ProposerContext]:
        """n contexts: an anchor passage (uniform over sources, then over the source's
        passages), a hop count drawn 4:3:2:1, and the chain a reader of it would follow."""
        rng = random.Random(f"facts-propose-{self.seed}-{seed}")
        srcs = self.sources()
        out = []
        for _ in range(n):
            src = rng.choice(srcs)
            anchor = rng.choice(self.enc.by_source[src])
            hops = self._draw_hops(rng)
            chain = self.build_chain(anchor, hops, rng)
            out.append(ProposerContext(self.proposer_prompt(anchor, hops, chain), src, anchor.pid, hops,
                                       tuple(st.pid for st in chain)))
        return out

    def proposer_prompts(self, n: int, seed: int = 0) -> list[str]:
        return [c.prompt for c in self.proposer_contexts(n, seed)]

    def proposer_prompt(self, anchor: G.Statement, hops: int, chain: Sequence[G.Statement]) -> str:
        if self.surface == "codes":
            by_pid = self._passages_by_pid()
            return f"<propose>{hops};" + ";".join(by_pid[st.pid].text for st in chain)
        doc = P.render_document(f"Source {anchor.source}", self.source_text(anchor.source))
        return P.PROPOSER_PREFIX.replace("{hops}", str(hops)).replace("{document}", doc)

    def proposal_of_chain(self, chain: Sequence[G.Statement]) -> str:
        """The proposal a faithful reader of ``chain`` writes (pretraining target, tests)."""
        return (f"<question>{self.question_of_chain(chain)}</question>"
                f"{ANSWER_OPEN}{self.render_entity(chain[-1].obj)}{ANSWER_CLOSE}")

    def parse_task(self, text: str, task_id: str, context: ProposerContext | None = None) -> ParseResult:
        """The last ``<question>`` block and the draft answer in the ``<answer>`` after it.
        Codes surface: the question must parse as a chain; text: any question (the oracle
        answers None for one it cannot parse)."""
        q, reason = last_question(text)
        if q is None:
            return ParseResult(None, reason)
        tail = text[text.rfind("</question>"):] if "</question>" in text else ""
        draft = self.extract_answer(tail)
        if draft is None:
            return ParseResult(None, "no-answer")
        parsed = self.parse_chain(q)
        if parsed is None and self.surface == "codes":
            return ParseResult(None, "unparsable")
        hops = len(parsed[1]) if parsed else (context.hops if context else 1)
        if not 1 <= hops <= 4:
            return ParseResult(None, "hops-out-of-range")
        meta = {"source_id": context.source_id if context else None,
                "passage_id": context.passage_id if context else None, "hops": hops, "difficulty": f"hop{hops}"}
        if context is not None:
            meta["requested_hops"] = context.hops
        return ParseResult(Task(task_id=task_id, question=q, reference=draft, meta=meta))

    def response_format(self, kind: str) -> ResponseFormat:
        """Questions and answers end at ``</answer>`` (the proposer writes its draft answer last)."""
        return ResponseFormat(stop=(ANSWER_CLOSE,))

    # ------------------------------------------------------------------ solver side
    def solver_prompt(self, task: Task) -> str:
        if self.surface == "codes":
            return f"<solve>{task.question}"
        return P.SOLVER_PREFIX.replace("{question}", task.question)

    def solver_prompt_with_source(self, task: Task) -> str:
        """Source-aware prompt (MSV): the task's source is visible.  Codes: the source's
        passages that best match the question's first hop, as an information block before
        the solver prompt (the episode after ``<solve>`` is then laid out as a blind one)."""
        src = task.meta.get("source_id")
        if self.surface == "codes":
            parsed = self.parse_chain(task.question)
            hits = []
            if src and parsed:
                hits = self.search([self.hop_query(parsed[0], parsed[1][0])], sources={src})[0]
            return self.render_information(hits) + f"<solve>{task.question}"
        doc = P.render_document(f"Source {src}", self.source_text(src)) if src else "(none)"
        return P.SOURCE_AWARE_PREFIX.replace("{document}", doc).replace("{question}", task.question)

    def hop_query(self, entity: int, hop: tuple[int, int]) -> str:
        """The search a reader issues for one hop (codes: ``e42r1 x``; text: ``tutor of Name``)."""
        r, w = hop
        if self.surface == "codes":
            return f"{G.code_entity(entity, self.width)}r{r} {G.WORDING_CODES[w]}"
        return f"{G.RELATIONS[r][w]} of {self.enc.names[entity]}"

    def tool_stops(self, kind: str) -> list[str]:
        """The solver searches; the text-surface proposer too (Dr. Zero's proposer searches
        n − 1 times); the codes proposer is shown its chain instead."""
        if kind == ANSWER or (kind == QUESTION and self.surface == "text"):
            return [SEARCH_CLOSE]
        return []

    def run_tool(self, context: Any, text_so_far: str) -> str | None:
        """Top-k passages for the ``<search>…</search>`` that ``text_so_far`` ends with, as an
        information block (empty for an empty query); restricted to
        ``context.meta["retrieve_sources"]`` when the context is a Task that sets it.  None when
        the text does not end with a search call."""
        if not text_so_far.rstrip().endswith(SEARCH_CLOSE):
            return None
        m = _SEARCH_RE.search(text_so_far)
        query = m.group(1).split(SEARCH_OPEN)[-1].strip() if m else ""
        sources = None
        if isinstance(context, Task) and context.meta.get("retrieve_sources") is not None:
            sources = set(context.meta["retrieve_sources"])
        hits = self.search([query], sources=sources)[0] if query else []
        return self.render_information(hits)

    def extract_answer(self, text: str) -> str | None:
        """The last ``<answer>…</answer>`` (closing tag optional at the end), stripped."""
        found = [a.strip() for a in _ANSWER_RE.findall(text or "")]
        return found[-1] if found and found[-1] else None

    def equivalent(self, a: str | None, b: str | None) -> bool:
        """EM with the SQuAD normaliser (the ``em`` verifier kind's check)."""
        if a is None or b is None:
            return False
        from coevo.verify.answers import check_em

        return check_em(a, b).value == 1

    def repetition_text(self, question: str) -> str:
        return question

    def oracle(self, task: Task) -> str | None:
        """The true answer of the question's chain in the fact table (None if unparsable)."""
        parsed = self.parse_chain(task.question)
        if parsed is None:
            return None
        start, hops = parsed
        return self.render_entity(self.enc.resolve(start, [r for r, _ in hops]))

    def demonstration(self, task: Task, sources: Collection[str] | None = None) -> str:
        """A reader's trace after the solver prompt: one search per hop, the value read from
        the first passage of each information block, that value as the answer."""
        parsed = self.parse_chain(task.question)
        if parsed is None:
            raise ValueError(f"not a chain question: {task.question!r}")
        cur, out = parsed[0], []
        for hop in parsed[1]:
            q = self.hop_query(cur, hop)
            hits = self.search([q], sources=sources)[0]
            out.append(f"{SEARCH_OPEN}{q}{SEARCH_CLOSE}{self.render_information(hits)}")
            cur = self.read_object(hits[0]) if hits else cur
        return "".join(out) + f"{ANSWER_OPEN}{self.render_entity(cur)}{ANSWER_CLOSE}"

    def read_object(self, p: Passage) -> int:
        """The object a passage states."""
        return self.enc.by_pid[p.pid].obj

    # ------------------------------------------------------------------ evaluation
    def eval_set(self) -> Sequence[Task]:
        """``eval_per_hop`` questions per hop count (difficulty ``hop1``..``hop4``), fixed by
        ``eval_seed``: chains of true facts, each hop worded as one of its *correct*
        statements; the reference is the oracle's answer."""
        if self._eval is None:
            rng = random.Random(f"facts-eval-{self.seed}-{self.eval_seed}")
            tasks: list[Task] = []
            for hops in (1, 2, 3, 4):
                seen: set[str] = set()
                tries = 0
                while len(seen) < self.eval_per_hop and tries < 50 * self.eval_per_hop:
                    tries += 1
                    chain = self._true_chain(rng, hops)
                    q = self.question_of_chain(chain) if chain else None
                    if q is None or q in seen:
                        continue
                    seen.add(q)
                    t = Task(task_id=hashlib.sha1(f"facts-eval|{q}".encode()).hexdigest()[:16], question=q,
                             meta={"difficulty": f"hop{hops}", "hops": hops, "source_id": chain[0].source,
                                   "passage_id": chain[0].pid})
                    t.reference = self.oracle(t)
                    tasks.append(t)
            self._eval = tasks
        return self._eval

    def _true_chain(self, rng: random.Random, hops: int) -> list[G.Statement] | None:
        """A chain of correct statements (None when a hop's fact has none: only in a ``misread_shared``
        world, where a planted fact is wrong in every source; the caller draws again)."""
        cur = rng.randrange(self.n_entities)
        chain = []
        for _ in range(hops):
            r = rng.randrange(self.n_relations)
            true = [s for s in self.enc.by_fact[(cur, r)] if not s.misread]
            if not true:
                return None
            st = rng.choice(true)
            chain.append(st)
            cur = st.obj
        return chain
