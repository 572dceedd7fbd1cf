"""The facts world's generator: a fictional encyclopedia with a true fact table, sources
that state each fact (>= 2 sources per fact) and planted misreadings (issue #11, False Frontiers).

Entities are fictional people; relations are functional (every entity has exactly one
value for every relation), so every chain ``relation_n of … of relation_1 of entity``
resolves in the true table (the oracle).  Each *statement* of a fact (one passage, in one
source) words the relation in one of three ways (the *wording* index 0..2: a synonym and a
sentence template in the text surface, the letter x / y / z in the codes surface); the
statements of one fact use different wordings, so a question that reuses the wording of the
passage its proposer read ranks that very passage first under BM25, and the fact's other
statements (other sources) rank next, retrievable when that source is filtered out.

A misread source (a share ``misread_rate`` of the sources) states one of its facts with one
consistent wrong value: the object's *distractor*, the entity with the most similar name
(entities come in pairs: ``Varen Oklo`` / ``Varen Okla``; codes ``e16`` / ``e17``).  Planted
facts are distinct, so every fact keeps at least one true statement.  ``misread_shared`` (a
control, issue #30): every statement of a planted fact, in every source that states it, carries
the same wrong value (an error shared through pretraining, the limitation False Frontiers (CrossFit)
names): no source then holds the fact's true value.

Surfaces: ``codes`` (for the tiny character models: ``e42r1 x e17`` = "the r1 of e42,
worded x, is e17"; subject and relation fuse into one retrieval token so that a passage
where e42 is the object never matches a search for e42's relation) and ``text`` (sentences
with names, aliases and paraphrased relations, for real models).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

N_WORDINGS = 3
WORDING_CODES = ("x", "y", "z")

# relation -> three synonyms (the wording index picks one, and the sentence template below)
RELATIONS = (
    ("mentor", "tutor", "teacher"),
    ("rival", "adversary", "opponent"),
    ("patron", "sponsor", "benefactor"),
    ("successor", "heir", "replacement"),
    ("biographer", "chronicler", "historian"),
    ("apprentice", "pupil", "protege"),
)
TEMPLATES = ("The {noun} of {s} was {o}.", "{s}'s {noun} is {o}.", "{o} served as the {noun} of {s}.")

_FIRST = ("Var", "Mel", "Tor", "Ise", "Kal", "Dre", "Ost", "Fen", "Lyr", "Bra", "Cor", "Ima", "Sel", "Nad", "Per",
          "Quin", "Rho", "Tam", "Ul", "Wen")
_FIRST_END = ("en", "ia", "os", "ek", "ira", "um", "eth", "al")
_LAST = ("Okl", "Dask", "Marr", "Tell", "Vos", "Brin", "Hald", "Kess", "Lunt", "Pry", "Sorr", "Tav", "Wick", "Zell",
         "Fald", "Grem")
_LAST_END = ("o", "a")  # the two members of a distractor pair differ in this last letter


@dataclass(frozen=True)
class Statement:
    """One passage: a fact as one source states it."""

    pid: str
    source: str
    subject: int
    relation: int
    wording: int
    obj: int  # the stated object (the distractor in a planted misreading)
    misread: bool = False


@dataclass
class Encyclopedia:
    n_entities: int
    n_relations: int
    names: list[str]  # canonical text names; entity 2i and 2i+1 are distractors of each other
    aliases: list[list[str]]  # other text forms of each name (subject mentions may use them)
    table: dict[tuple[int, int], int]  # the true fact table: (subject, relation) -> object
    statements: list[Statement]
    sources: list[str]
    planted: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # source -> (s, r, wrong o)
    by_fact: dict[tuple[int, int], list[Statement]] = field(default_factory=dict)
    by_source: dict[str, list[Statement]] = field(default_factory=dict)
    by_pid: dict[str, Statement] = field(default_factory=dict)

    def index(self) -> None:
        self.by_fact, self.by_source, self.by_pid = {}, {}, {}
        for st in self.statements:
            self.by_fact.setdefault((st.subject, st.relation), []).append(st)
            self.by_source.setdefault(st.source, []).append(st)
            self.by_pid[st.pid] = st

    def resolve(self, entity: int, relations: list[int]) -> int:
        """The true object at the end of a chain of relations from ``entity``."""
        for r in relations:
            entity = self.table[(entity, r)]
        return entity


def distractor(e: int, n: int) -> int:
    """The entity with the most similar name (its pair partner)."""
    d = e ^ 1
    return d if d < n else e - 1


def code_width(n_entities: int) -> int:
    return max(2, len(str(n_entities - 1)))


def entity_names(n: int, rng: random.Random) -> tuple[list[str], list[list[str]]]:
    """Distinct fictional names, in distractor pairs that differ in one letter, and aliases."""
    pool = [(f + fe, l) for f in _FIRST for fe in _FIRST_END for l in _LAST]
    rng.shuffle(pool)
    names: list[str] = []
    aliases: list[list[str]] = []
    for first, last in pool[:(n + 1) // 2]:
        for end in _LAST_END:
            full = f"{first} {last}{end}"
            names.append(full)
            aliases.append([f"{first[0]}. {last}{end}", f"{last}{end}, {first}"])
    if len(pool) * 2 < n:
        raise ValueError(f"at most {len(pool) * 2} entities")
    return names[:n], aliases[:n]


def generate(seed: int = 0, n_entities: int = 60, n_sources: int = 100, misread_rate: float = 0.3,
             n_relations: int = 5, max_sources_per_fact: int = 3, misread_shared: bool = False) -> Encyclopedia:
    """The encyclopedia of ``seed`` (deterministic: one ``random.Random`` drawn in a fixed order;
    ``misread_shared`` draws nothing more: the same planted facts, replicated across their sources)."""
    if not 2 <= n_relations <= len(RELATIONS):
        raise ValueError(f"n_relations must be in [2, {len(RELATIONS)}]")
    if n_entities < 4 or n_sources < 3:
        raise ValueError("need at least 4 entities and 3 sources")
    if not 0.0 <= misread_rate <= 1.0:
        raise ValueError("misread_rate must be in [0, 1]")
    max_sources_per_fact = max(2, min(max_sources_per_fact, N_WORDINGS, n_sources))
    rng = random.Random(f"facts-{seed}")
    names, aliases = entity_names(n_entities, rng)
    table: dict[tuple[int, int], int] = {}
    for s in range(n_entities):
        for r in range(n_relations):
            o = rng.randrange(n_entities - 1)
            table[(s, r)] = o if o < s else o + 1  # never the subject itself
    width = len(str(n_sources - 1))
    sources = [f"d{i:0{width}d}" for i in range(n_sources)]
    stated: list[tuple[str, int, int, int]] = []  # (source, s, r, wording)
    for (s, r) in sorted(table):
        m = rng.choice(range(2, max_sources_per_fact + 1))
        srcs = rng.sample(sources, m)
        words = rng.sample(range(N_WORDINGS), m)
        stated += [(src, s, r, w) for src, w in zip(srcs, words)]
    stated.sort(key=lambda t: (t[0], t[1], t[2]))
    counters: dict[str, int] = {}
    statements = []
    for src, s, r, w in stated:
        k = counters.get(src, 0)
        counters[src] = k + 1
        statements.append(Statement(pid=f"{src}-{k:03d}", source=src, subject=s, relation=r, wording=w,
                                    obj=table[(s, r)]))
    enc = Encyclopedia(n_entities, n_relations, names, aliases, table, statements, sources)
    enc.index()
    plant(enc, rng, misread_rate, misread_shared)
    return enc


def plant(enc: Encyclopedia, rng: random.Random, misread_rate: float, shared: bool = False) -> None:
    """Plant one misreading in each of round(misread_rate * n_sources) sources (distinct facts);
    ``shared``: then every other statement of each planted fact takes the same wrong value."""
    n_mis = round(misread_rate * len(enc.sources))
    used: set[tuple[int, int]] = set()
    chosen = [s for s in rng.sample(enc.sources, len(enc.sources)) if s in enc.by_source]
    replaced: dict[str, Statement] = {}
    for src in chosen:
        if len(replaced) >= n_mis:
            break
        cands = [st for st in enc.by_source[src] if (st.subject, st.relation) not in used]
        if not cands:
            continue
        st = rng.choice(cands)
        wrong = distractor(st.obj, enc.n_entities)
        used.add((st.subject, st.relation))
        replaced[st.pid] = Statement(st.pid, st.source, st.subject, st.relation, st.wording, wrong, misread=True)
        enc.planted[src] = (st.subject, st.relation, wrong)
    if shared:
        wrong_of = {(s, r): o for s, r, o in enc.planted.values()}
        for st in enc.statements:
            o = wrong_of.get((st.subject, st.relation))
            if o is not None and st.pid not in replaced:
                replaced[st.pid] = Statement(st.pid, st.source, st.subject, st.relation, st.wording, o, misread=True)
    enc.statements = [replaced.get(st.pid, st) for st in enc.statements]
    enc.index()


# ---------------------------------------------------------------------------- rendering
def code_entity(e: int, width: int) -> str:
    return f"e{e:0{width}d}"


def code_statement(st: Statement, width: int) -> str:
    """``e42r1 x e17``: subject+relation (one retrieval token), wording letter, object."""
    return f"{code_entity(st.subject, width)}r{st.relation} {WORDING_CODES[st.wording]} {code_entity(st.obj, width)}"


def text_statement(enc: Encyclopedia, st: Statement) -> str:
    """A sentence in the statement's wording; the subject by name or (some sources) an alias."""
    noun = RELATIONS[st.relation][st.wording]
    subj = enc.names[st.subject]
    if int(st.source[1:]) % 3 == 2:  # a third of the sources refer to people by an alias
        subj = enc.aliases[st.subject][st.wording % 2]
    return TEMPLATES[st.wording].format(noun=noun, s=subj, o=enc.names[st.obj])


def code_question(start: int, hops: list[tuple[int, int]], width: int) -> str:
    """``e42r1 x r2 y``: start entity fused with the first relation, then (relation, wording) pairs."""
    (r0, w0), rest = hops[0], hops[1:]
    parts = [f"{code_entity(start, width)}r{r0} {WORDING_CODES[w0]}"]
    parts += [f"r{r} {WORDING_CODES[w]}" for r, w in rest]
    return " ".join(parts)


def text_question(enc: Encyclopedia, start: int, hops: list[tuple[int, int]]) -> str:
    """``Who is the historian of the tutor of Varen Oklo?`` (innermost relation last)."""
    nouns = [RELATIONS[r][w] for r, w in reversed(hops)]
    return "Who is the " + " of the ".join(nouns) + f" of {enc.names[start]}?"
