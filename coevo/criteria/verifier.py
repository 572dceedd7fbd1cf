"""The criterion verifier: one criterion V_j(x, y) checked on a whole answer y.

``CriterionVerifier(kind, locate, options, channels)`` is a ``coevo.verify`` verifier (it
runs in the verifier pool, its verdicts are cached by ``RunVerifier``).  Its reference is
``reference_of(criterion, ...)``: a JSON text holding the criterion's id and spec, so one
verifier serves every prompt's criterion of the same (kind, locate).  ``check``:

1. **timeout channel** (``Channels.timeout_rate``, ``length_budget``): an answer longer than
   ``length_budget`` characters exceeds the verifier's time budget and abstains
   ``timeout``; below it, the check times out with probability
   ``min(1, timeout_rate * len(answer) / ref_len)`` (the set rate on an answer as long as
   the reference solution, more on longer ones), drawn from a hash of (seed, channel,
   criterion reference, answer): deterministic, like re-running the same slow check.
2. ``locate(answer, where)`` picks the part the check reads; a missing part is 0
   (``missing-part``: the answer does not state it).
3. **unparsable channel** (``unparsable_rate``, parsing kinds only: numeric_unit,
   sympy_equiv, sandbox_py, integer): a hash-drawn share of located parts abstains
   ``unparsable`` (a SIMULATED parser coverage gap); a part the real checker cannot parse
   (``7*8= km``) abstains ``unparsable`` through the checker itself, at any rate.
4. the kind's own check from ``coevo.verify`` (``make_verifier``); ``sim_judge`` is a
   SIMULATED judge: it says unknown (``judge-unknown``) with probability
   ``judge_unknown_rate`` (hash-drawn) and otherwise decides with its deterministic
   ``proxy`` criterion — the one the oracle uses; ``llm_judge`` calls the real
   ``LLMJudge`` (``options``: base_url, model, api_key_env, ...) with the rubric.

Two channels serve as controls (``coevo experiment casa-arms``; docs/criteria.md "Abstention
controls"): ``phi_patterns`` (before the timeout channel) draws, once per (prompt, group of
criteria, answer), which subset of the group abstains (``abstain-drawn``), from fixed
probabilities and whatever the answer says; ``verdict_rates`` (after the check) abstains
(``abstain-by-verdict``) at a rate set per criterion and per the check's own verdict 1 / 0.

Simulated abstentions carry ``detail["simulated"] = True`` and the channel; all rates 0
and no length budget is the null check: no simulated abstention at all.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from coevo.core.verdict import Verdict, abstain
from coevo.verify.verifiers import Verifier, make_verifier

CRITERION_VERSION = "criterion-1"
PARSING_KINDS = frozenset({"numeric_unit", "sympy_equiv", "sandbox_py", "integer"})


@dataclass(frozen=True)
class Channels:
    """Abstention channel settings (all 0 / None: no simulated abstention)."""

    timeout_rate: float = 0.0
    unparsable_rate: float = 0.0
    judge_unknown_rate: float = 0.0
    length_budget: Optional[int] = None
    seed: int = 0
    # answer-dependent channels (docs/criteria.md "Abstention with consequences"); defaults: off
    judge_unknown_wrong_rate: Optional[float] = None  # sim_judge's unknown rate where its proxy says 0
    timeout_power: float = 1.0  # timeout hazard rate * (len / ref_len) ** power; 0: independent of length
    unparsable_format: Optional[str] = None  # regex on the located part: that output format ...
    unparsable_format_rate: float = 0.0  # ... abstains unparsable at this rate (parsing kinds)
    # the controls of coevo experiment casa-arms (docs/criteria.md "Abstention controls"); defaults: off
    phi_patterns: Any = None  # {group: {"id1+id2": p, ...}}: abstention patterns drawn independently of the answer
    verdict_rates: Any = None  # {criterion id: [rate if the check says 1, rate if it says 0]}

    def __post_init__(self):
        object.__setattr__(self, "phi_patterns", _patterns(self.phi_patterns))
        object.__setattr__(self, "verdict_rates", _verdict_rates(self.verdict_rates))
        if self.judge_unknown_wrong_rate is not None and not 0.0 <= self.judge_unknown_wrong_rate <= 1.0:
            raise ValueError(f"judge_unknown_wrong_rate must be in [0, 1], got {self.judge_unknown_wrong_rate}")
        if self.timeout_power < 0:
            raise ValueError(f"timeout_power must be >= 0, got {self.timeout_power}")
        if self.unparsable_format is not None:
            re.compile(self.unparsable_format)
        for k in ("timeout_rate", "unparsable_rate", "judge_unknown_rate", "unparsable_format_rate"):
            v = getattr(self, k)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{k} must be in [0, 1], got {v}")
        if self.length_budget is not None and self.length_budget < 1:
            raise ValueError(f"length_budget must be >= 1 or None, got {self.length_budget}")

    @property
    def tag(self) -> str:
        base = (f"t{self.timeout_rate:g}-u{self.unparsable_rate:g}-j{self.judge_unknown_rate:g}"
                f"-L{self.length_budget}-s{self.seed}")
        if self.judge_unknown_wrong_rate is not None:
            base += f"-jw{self.judge_unknown_wrong_rate:g}"
        if self.timeout_power != 1.0:
            base += f"-tp{self.timeout_power:g}"
        if self.unparsable_format is not None:
            base += f"-uf{self.unparsable_format_rate:g}:{hashlib.sha1(self.unparsable_format.encode()).hexdigest()[:8]}"
        for name, v in (("pp", self.phi_patterns), ("vr", self.verdict_rates)):
            if v is not None:
                base += f"-{name}:{hashlib.sha1(json.dumps(v).encode()).hexdigest()[:8]}"
        return base

    def pattern_abstains(self, criterion_id: str, key: str, text: str) -> bool:
        """``phi_patterns``: one draw per (prompt, group, answer) picks the group's abstention pattern
        (a set of criterion ids, or none), whatever the answer says; True when it holds ``criterion_id``."""
        for group, patterns in self.phi_patterns or ():
            if not any(criterion_id in ids for ids, _ in patterns):
                continue
            u, cum = hash01(self.seed, "pattern", key, group, text), 0.0
            for ids, p in patterns:
                cum += p
                if u < cum:
                    return criterion_id in ids
            return False
        return False

    def verdict_rate(self, criterion_id: str, value) -> float:
        """``verdict_rates``: the abstention rate of ``criterion_id`` given the check's own verdict (1 / 0)."""
        for cid, r1, r0 in self.verdict_rates or ():
            if cid == criterion_id and value in (0, 1):
                return r1 if value == 1 else r0
        return 0.0

    def timeout_hazard(self, length: int, ref_len: int) -> float:
        """Probability that a check of an answer of ``length`` characters times out (below the budget)."""
        if self.timeout_power == 1.0:  # the original expression, bit for bit (pinned runs)
            return min(1.0, self.timeout_rate * length / ref_len)
        return min(1.0, self.timeout_rate * (length / ref_len) ** self.timeout_power)


def _patterns(v) -> Optional[tuple]:
    """``{group: {"id1+id2": p}}`` as a sorted tuple ``((group, (((ids), p), ...)), ...)``; each id in one
    group, probabilities >= 0 summing to <= 1 per group (the rest: no abstention)."""
    if v is None:
        return None
    items = v.items() if isinstance(v, dict) else v
    out, seen = [], set()
    for group, pats in sorted((str(g), p) for g, p in items):
        pats = pats.items() if isinstance(pats, dict) else pats
        norm = tuple(sorted((tuple(sorted(str(ids).split("+") if isinstance(ids, str) else map(str, ids))), float(p))
                            for ids, p in pats))
        ids = {i for x, _ in norm for i in x}
        if ids & seen or any(p < 0 for _, p in norm) or sum(p for _, p in norm) > 1 + 1e-9:
            raise ValueError(f"phi_patterns[{group}]: each criterion in one group, rates >= 0 summing to <= 1")
        seen |= ids
        out.append((group, norm))
    return tuple(out)


def _verdict_rates(v) -> Optional[tuple]:
    """``{criterion id: [rate if 1, rate if 0]}`` as a sorted tuple ``((id, r1, r0), ...)``, rates in [0, 1]."""
    if v is None:
        return None
    items = v.items() if isinstance(v, dict) else ((x[0], x[1:]) for x in v)
    out = tuple(sorted((str(c), float(r[0]), float(r[1])) for c, r in items))
    if any(not (0 <= r <= 1) for _, *rs in out for r in rs):
        raise ValueError(f"verdict_rates must lie in [0, 1], got {v}")
    return out


def hash01(*parts: Any) -> float:
    """A uniform draw in [0, 1) from the parts' text (sha256)."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return int(h[:15], 16) / 16 ** 15


def split_steps(answer: str) -> list[str]:
    return [s.strip() for s in str(answer).split(";") if s.strip()]


def locate(answer: Optional[str], where: str) -> Optional[str]:
    """The part of ``answer`` a criterion reads (``all``, ``final``, ``step:K``, ``expr:K``):
    steps are ``;``-separated; a step's value is the text after its last ``=`` (the whole
    step if it has none), its expression the text before the first ``=``.  None when the
    answer has no such part."""
    if answer is None:
        return None
    if where == "all":
        return str(answer).strip() or None
    steps = split_steps(answer)
    if not steps:
        return None
    if where == "final":
        return steps[-1].rpartition("=")[2].strip()
    head, _, k = where.partition(":")
    i = int(k) - 1
    if i >= len(steps):
        return None
    if head == "step":
        return steps[i].rpartition("=")[2].strip()
    lhs, eq, _ = steps[i].partition("=")
    return lhs.strip() if eq else None


def reference_of(criterion: Any, question: str = "", reference: str = "", ref_len: Optional[int] = None,
                 key: str = "") -> str:
    """The verifier-side reference of one criterion (a ``coevo.criteria.bank.Criterion``):
    JSON with its id, spec, the prompt and reference answer (for a judge), ``ref_len`` (the
    timeout channel's length scale) and ``key`` (e.g. the prompt id: keeps the hash draws of
    two prompts' criteria apart)."""
    return json.dumps({"id": criterion.id, "key": key, "spec": criterion.spec, "question": question,
                       "reference": reference, "ref_len": ref_len}, sort_keys=True, ensure_ascii=False)


def inner_check(kind: str, spec: dict, part: str, options: dict, ref: dict) -> Verdict:
    """The kind's own ``coevo.verify`` check of a located part against the spec."""
    if kind == "numeric_unit":
        tol = {k: spec[k] for k in ("rel_tol", "abs_tol") if k in spec}
        v = make_verifier("numeric_unit", **{**options, **tol})
        return v.check(part, f"{spec['value']} {spec['unit']}".strip())
    if kind == "integer":
        return make_verifier("integer").check(part, str(int(spec["value"])))
    if kind == "sympy_equiv":
        return make_verifier("sympy_equiv").check(part, spec["expr"])
    if kind == "rule":
        kw = {k: spec[k] for k in ("mode", "negate", "case_sensitive", "normalize") if k in spec}
        return make_verifier("rule", **{"mode": "regex", **kw}).check(part, spec["pattern"])
    if kind == "sandbox_py":
        kw = {k: spec[k] for k in ("timeout_s", "rel_tol") if k in spec}
        v = make_verifier("sandbox_py", code=spec["code"], mode=spec.get("mode", "recompute"), **kw)
        return v.check(part, spec.get("reference"))
    if kind == "llm_judge":
        if not options.get("base_url") or not options.get("model"):
            return abstain("judge-not-configured", note="llm_judge needs options base_url and model")
        judge = make_verifier("llm_judge", **options)
        return judge.judge(ref.get("question", ""), ref.get("reference", ""), part, spec["rubric"])
    raise ValueError(f"no check for kind {kind!r}")


@dataclass
class CriterionVerifier(Verifier):
    """One criterion kind read at one place of the answer, with the abstention channels.

    ``kind``: a bank kind (``coevo.criteria.bank.SPEC_FIELDS``); ``locate``: see
    ``locate``; ``options``: options of the underlying verifier (numeric tolerances, the
    LLM judge's endpoint); ``channels``: ``Channels``.  Verdicts carry ``kind`` (so break
    rates and abstention shares are per verifier kind) and a version naming the channels."""

    kind: str = "rule"
    locate: str = "all"
    options: dict = field(default_factory=dict)
    channels: Channels = field(default_factory=Channels)

    @property
    def version(self) -> str:
        return f"{CRITERION_VERSION}:{self.kind}:{self.locate}:{self.channels.tag}"

    def check(self, answer, reference=None, **ctx) -> Verdict:
        ref = json.loads(reference)
        ch, spec, salt = self.channels, ref["spec"], (ref.get("key", ""), ref["id"], json.dumps(ref["spec"]))
        text = "" if answer is None else str(answer)
        ref_len = ref.get("ref_len") or max(len(text), 1)
        if ch.length_budget is not None and len(text) > ch.length_budget:
            return _sim("timeout", "length-budget", length=len(text), budget=ch.length_budget)
        if ch.phi_patterns is not None and ch.pattern_abstains(ref["id"], ref.get("key", ""), text):
            return _sim("abstain-drawn", "phi-pattern")
        if ch.timeout_rate > 0 and hash01(ch.seed, "timeout", *salt, text) < ch.timeout_hazard(len(text), ref_len):
            return _sim("timeout", "time-budget", length=len(text), ref_len=ref_len)
        v = self._verdict(text, ref, spec, salt)
        if ch.verdict_rates is not None and hash01(ch.seed, "verdict", *salt, text) < ch.verdict_rate(ref["id"], v.value):
            return _sim("abstain-by-verdict", "verdict-rate", verdict=v.value)
        return v

    def _verdict(self, text: str, ref: dict, spec: dict, salt: tuple) -> Verdict:
        """The located part's verdict after the timeout channel: missing part, unparsable channels, the check."""
        ch = self.channels
        part = locate(text, self.locate)
        if part is None or part == "":
            if self.kind in PARSING_KINDS and part == "":
                return abstain("unparsable", note="empty part", locate=self.locate)
            return Verdict(0, detail={"note": "missing-part", "locate": self.locate})
        if self.kind in PARSING_KINDS and ch.unparsable_rate > 0 and \
                hash01(ch.seed, "unparsable", *salt, text) < ch.unparsable_rate:
            return _sim("unparsable", "parser-gap", part=part[:80])
        if self.kind in PARSING_KINDS and ch.unparsable_format is not None and ch.unparsable_format_rate > 0 and \
                re.search(ch.unparsable_format, part) and hash01(ch.seed, "format", *salt, text) < ch.unparsable_format_rate:
            return _sim("unparsable", "format-gap", part=part[:80])
        if self.kind == "sim_judge":
            return _sim_judge(ch, spec, part, ref, hash01(ch.seed, "judge", *salt, text))
        return inner_check(self.kind, spec, part, self.options, ref)

    def describe(self) -> dict:
        return {"kind": self.kind, "locate": self.locate, "options": self.options, "channels": asdict(self.channels)}


def _sim_judge(ch: Channels, spec: dict, part: str, ref: dict, draw: float) -> Verdict:
    """The simulated judge: unknown at ``judge_unknown_rate`` (or, where its proxy verdict is 0 and
    ``judge_unknown_wrong_rate`` is set, at that rate), else the proxy criterion's verdict."""
    proxy = spec["proxy"]
    if ch.judge_unknown_wrong_rate is None:
        if ch.judge_unknown_rate > 0 and draw < ch.judge_unknown_rate:
            return _sim("judge-unknown", "simulated-judge")
        v = inner_check(proxy["kind"], proxy["spec"], part, {}, ref)
    else:
        v = inner_check(proxy["kind"], proxy["spec"], part, {}, ref)
        if draw < (ch.judge_unknown_wrong_rate if v.value == 0 else ch.judge_unknown_rate):
            return _sim("judge-unknown", "simulated-judge", unsure_on_wrong=v.value == 0)
    v.detail = {**v.detail, "simulated_judge": True, "proxy_kind": proxy["kind"]}
    return v


def _sim(reason: str, channel: str, **detail) -> Verdict:
    return abstain(reason, simulated=True, channel=channel, **detail)
