"""Verifier kinds: math, integer, numeric_unit, sympy_equiv, sandbox_py, rule, exact_match, cover_em, em.

Every verifier has ``kind``, ``version`` and ``verify(answer, reference=None, **ctx)
-> Verdict`` and never raises.  Verifiers that parse untrusted text with sympy /
math-verify / pint (``math``, ``numeric_unit``, ``sympy_equiv``) run their ``check``
in a ``VerifierPool`` worker (``isolate=True``, the default) so a hang is killed;
``verify_many`` batches many pairs through the pool in one call.  ``check`` is the
raw checker a worker runs; ``check_task`` is the pool task that runs it guarded.
(``llm_judge`` lives in ``coevo.verify.judge``.)
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from coevo.verify.answers import cover_em, exact_match, normalize_answer
from coevo.core.verdict import Verdict, abstain, guarded

RULE_VERSION = "rule-1"
EM_VERSION = "squad-em-1"
INTEGER_VERSION = "integer-1"
SANDBOX_PY_VERSION = "sandbox_py-1"


class Verifier:
    kind = "base"
    version = "0"
    isolate = False          # run ``check`` in a pool worker
    pool = None              # a VerifierPool; None -> coevo.verify.pool.default_pool()
    timeout_s: Optional[float] = None

    def check(self, answer: Any, reference: Any = None, **ctx) -> Verdict:  # pragma: no cover
        raise NotImplementedError

    def _stamp(self, v: Verdict) -> Verdict:
        v.kind, v.version = v.kind or self.kind, v.version or self.version
        return v

    def verify(self, answer: Any, reference: Any = None, **ctx) -> Verdict:
        if not self.isolate:
            return self._stamp(guarded(self.check, self.kind, self.version, answer, reference, **ctx))
        return self.verify_many([(answer, reference)], **ctx)[0]

    __call__ = verify

    def verify_many(self, pairs: Sequence, **ctx) -> list:
        """Verify ``[(answer, reference), ...]`` (in a pool when ``isolate``), in order."""
        pairs = list(pairs)
        if not self.isolate:
            return [self.verify(a, r, **ctx) for a, r in pairs]
        from coevo.verify.pool import default_pool
        pool = self.pool or default_pool()
        t0 = time.perf_counter()
        try:
            out = pool.map(check_task, [(self._plain(), a, r, ctx) for a, r in pairs], timeout_s=self.timeout_s)
        except Exception as e:  # noqa: BLE001 - a broken pool is an abstention, not a crash
            el = time.perf_counter() - t0
            return [abstain("verifier-error", self.kind, self.version, el, error=f"{type(e).__name__}: {e}")
                    for _ in pairs]
        return [self._stamp(v) for v in out]

    def _plain(self):
        """A copy without the pool (pools are not picklable) to send to workers."""
        if getattr(self, "pool", None) is None:
            return self
        import copy
        c = copy.copy(self)
        c.pool = None
        return c


def check_task(item) -> Verdict:
    """Pool task: ``(verifier, answer, reference[, ctx])`` -> ``verifier.check`` guarded and
    stamped with the verifier's kind / version (exceptions become abstentions)."""
    verifier, answer, reference = item[0], item[1], item[2]
    kw = item[3] if len(item) > 3 else {}
    return verifier._stamp(guarded(verifier.check, verifier.kind, verifier.version, answer, reference, **kw))


def check_integer(answer, reference) -> Verdict:
    """Integer equality (``int(a) == int(r)``, so ``042`` == ``42``): the arithmetic world's
    answer check.  An answer that is not an integer is wrong (0, ``note: not-an-integer``);
    a missing answer or a reference that is not an integer abstains ``unparsable``."""
    if answer is None or reference is None:
        return abstain("unparsable", side="answer" if answer is None else "reference", note="none")
    try:
        r = int(reference)
    except (ValueError, TypeError):
        return abstain("unparsable", side="reference", note="not-an-integer")
    try:
        a = int(answer)
    except (ValueError, TypeError):
        return Verdict(0, detail={"note": "not-an-integer"})
    return Verdict(int(a == r))


@dataclass
class IntegerVerifier(Verifier):
    """Exact integer answers (``check_integer``); cheap and safe, so in-process unless a
    run verifier sends it to its pool."""

    kind = "integer"
    version = INTEGER_VERSION

    def check(self, answer, reference=None, **ctx) -> Verdict:
        return check_integer(answer, reference)


@dataclass
class MathVerifier(Verifier):
    """Free-form math answers as a world extracts them (bare LaTeX such as ``(1,2)`` or
    ``\\frac{1}{2}``, ``$...$``, ``\\boxed{...}``): equal after ``normalize_math`` -> 1,
    else math-verify ``parse``/``verify`` on both sides wrapped in ``\\boxed{}`` (its
    SIGALRM timeouts off; the pool's hard timeout rules), sympy fallback when
    math-verify extracts nothing.  Unparsable answer or reference -> ``None/unparsable``.
    ``MathWorld.equivalent`` is ``verify(...).value == 1`` (``check_math_answer``)."""

    float_rounding: int = 6
    strict: bool = True
    timeout_s: Optional[float] = None
    pool: Any = field(default=None, repr=False, compare=False)
    kind = "math"
    isolate = True

    @property
    def version(self):
        from coevo.verify.checks import MATH_ANSWER_VERSION
        return MATH_ANSWER_VERSION

    def check(self, answer, reference=None, **ctx) -> Verdict:
        from coevo.verify.checks import check_math_answer
        return check_math_answer(answer, reference, self.float_rounding, self.strict)


@dataclass
class SympyEquivVerifier(Verifier):
    """Symbolic equivalence of plain-text expressions (whitelisted sympy parser)."""

    timeout_s: Optional[float] = None
    pool: Any = field(default=None, repr=False, compare=False)
    kind = "sympy_equiv"
    isolate = True

    @property
    def version(self):
        from coevo.verify.checks import SYMPY_VERSION
        return SYMPY_VERSION

    def check(self, answer, reference=None, **ctx) -> Verdict:
        from coevo.verify.checks import check_sympy_equiv
        return check_sympy_equiv(answer, reference)


@dataclass
class NumericUnitVerifier(Verifier):
    """A number with a unit (pint).  Wrong or missing unit -> 0; compatible units are
    converted; ``|a - r| <= max(rel_tol * |r|, abs_tol)``."""

    rel_tol: float = 1e-6
    abs_tol: float = 0.0
    timeout_s: Optional[float] = None
    pool: Any = field(default=None, repr=False, compare=False)
    kind = "numeric_unit"
    isolate = True

    @property
    def version(self):
        from coevo.verify.checks import NUMERIC_VERSION
        return f"{NUMERIC_VERSION}:rel={self.rel_tol:g}:abs={self.abs_tol:g}"

    def check(self, answer, reference=None, **ctx) -> Verdict:
        from coevo.verify.checks import check_numeric_unit
        return check_numeric_unit(answer, reference, self.rel_tol, self.abs_tol)


@dataclass
class RuleVerifier(Verifier):
    """``mode``: ``regex`` (re.search of ``pattern``), ``contains`` (substring) or
    ``exact`` (string equality).  ``pattern`` defaults to the reference.  ``normalize``
    applies the SQuAD normaliser first (contains / exact).  ``negate`` flips 1 and 0
    (for penalty criteria).  Runs in-process; answers longer than ``max_chars`` abstain
    (``resource-limit``).  ``regex`` mode uses the ``regex`` package (re-compatible syntax)
    with its own match timeout: a pattern that backtracks catastrophically abstains with
    ``timeout`` after ``timeout_s`` instead of hanging the caller; an invalid pattern
    abstains with ``unparsable``."""

    mode: str = "contains"
    pattern: Optional[str] = None
    case_sensitive: bool = False
    normalize: bool = False
    negate: bool = False
    max_chars: int = 100_000
    timeout_s: float = 1.0
    kind = "rule"
    version = RULE_VERSION

    def __post_init__(self):
        if self.mode not in ("regex", "contains", "exact"):
            raise ValueError(f"RuleVerifier.mode must be regex|contains|exact, got {self.mode!r}")

    def check(self, answer, reference=None, **ctx) -> Verdict:
        if answer is None:
            return abstain("unparsable", note="no answer")
        pat = self.pattern if self.pattern is not None else reference
        if pat is None:
            return abstain("unparsable", side="reference", note="no pattern")
        a, pat = str(answer), str(pat)
        if len(a) > self.max_chars:
            return abstain("resource-limit", max_chars=self.max_chars)
        if self.mode == "regex":
            import regex

            try:
                hit = regex.search(pat, a, 0 if self.case_sensitive else regex.IGNORECASE,
                                   timeout=self.timeout_s) is not None
            except TimeoutError:
                return abstain("timeout", timeout_s=self.timeout_s, pattern=pat[:200])
            except regex.error as e:
                return abstain("unparsable", side="pattern", error=str(e), pattern=pat[:200])
        else:
            if self.normalize:
                a, pat = normalize_answer(a), normalize_answer(pat)
            elif not self.case_sensitive:
                a, pat = a.lower(), pat.lower()
            hit = (pat in a) if self.mode == "contains" else (a.strip() == pat.strip())
        return Verdict(int(hit != self.negate), detail={"mode": self.mode})


class _GoldMetricVerifier(Verifier):
    """Scores an answer against one gold or a list of golds with ``metric``."""

    def check(self, answer, reference=None, **ctx) -> Verdict:
        if answer is None:
            return abstain("unparsable", note="no answer")
        return Verdict(type(self).metric(str(answer), reference or []))


@dataclass
class ExactMatchVerifier(_GoldMetricVerifier):
    """SQuAD exact match against one gold or a list of golds."""

    kind = "exact_match"
    version = EM_VERSION
    metric = staticmethod(exact_match)


@dataclass
class CoverEMVerifier(_GoldMetricVerifier):
    """Cover-EM: a normalised gold is a substring of the normalised prediction."""

    kind = "cover_em"
    version = EM_VERSION
    metric = staticmethod(cover_em)


@dataclass
class EMVerifier(Verifier):
    """QA answers (``coevo.qa.metrics.check_em``): value = SQuAD EM against one gold, a list
    of golds or a JSON list of golds; ``detail["cover_em"]`` = Cover-EM; no answer -> 0."""

    kind = "em"

    @property
    def version(self):
        from coevo.verify.answers import EM_KIND_VERSION
        return EM_KIND_VERSION

    def check(self, answer, reference=None, **ctx) -> Verdict:
        from coevo.verify.answers import check_em
        return check_em(answer, reference)


@dataclass
class SandboxPyVerifier(Verifier):
    """Runs Python in the sandbox (``run_sandboxed``).

    ``mode="check"``: ``code`` is a check program; it gets ``ANSWER`` and
    ``REFERENCE`` as globals and must print a final line PASS / FAIL (or 1 / 0,
    True / False).  ``mode="recompute"``: ``code`` prints the expected value
    (independent recomputation); it is compared with the answer numerically
    (``rel_tol``) or, for non-numbers, by normalised string equality.  Without
    ``code`` the answer itself is treated as the program (``mode="check"``).
    """

    code: Optional[str] = None
    mode: str = "check"
    timeout_s: float = 5.0
    memory_mb: int = 1024
    rel_tol: float = 1e-6
    kind = "sandbox_py"
    version = SANDBOX_PY_VERSION

    def check(self, answer, reference=None, **ctx) -> Verdict:
        from coevo.verify.sandbox import run_sandboxed
        import json
        header = f"import json as _j\nANSWER, REFERENCE = _j.loads({json.dumps(json.dumps([answer, reference], default=str))})\n"
        body = self.code if self.code is not None else str(answer)
        res = run_sandboxed(header + body, self.timeout_s, memory_mb=self.memory_mb)
        detail = {"sandbox_reason": res.reason, "exit_status": res.exit_status, "isolation": res.isolation,
                  "stdout_tail": res.stdout[-300:], "stderr_tail": res.stderr[-300:]}
        if res.reason in ("timeout", "resource-limit", "sandbox-error"):
            return Verdict(None, res.reason, detail=detail)
        if res.reason == "output-limit":
            return Verdict(None, "resource-limit", detail=detail)
        lines = [ln.strip() for ln in res.stdout.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else ""
        if res.reason != "ok":
            return Verdict(None, "check-error", detail=detail)
        if self.mode == "check":
            tok = last.upper()
            if tok in ("PASS", "1", "TRUE"):
                return Verdict(1, detail=detail)
            if tok in ("FAIL", "0", "FALSE"):
                return Verdict(0, detail=detail)
            return Verdict(None, "check-error", detail=dict(detail, note="no PASS/FAIL line"))
        detail["recomputed"] = last[:200]
        return Verdict(int(_values_match(str(answer), last, self.rel_tol)), detail=detail)


def _values_match(answer: str, expected: str, rel_tol: float) -> bool:
    try:
        a, e = float(answer.strip().replace(",", "")), float(expected.strip().replace(",", ""))
        return math.isclose(a, e, rel_tol=rel_tol, abs_tol=1e-12)
    except ValueError:
        return normalize_answer(answer) == normalize_answer(expected)


KINDS = {
    "math": MathVerifier,
    "integer": IntegerVerifier,
    "numeric_unit": NumericUnitVerifier,
    "sympy_equiv": SympyEquivVerifier,
    "sandbox_py": SandboxPyVerifier,
    "rule": RuleVerifier,
    "exact_match": ExactMatchVerifier,
    "cover_em": CoverEMVerifier,
    "em": EMVerifier,
}


def make_verifier(kind: str, **cfg) -> Verifier:
    """Factory: ``make_verifier("numeric_unit", rel_tol=1e-3)``; ``"llm_judge"`` builds
    an ``LLMJudge`` (``base_url``, ``model`` required; ``api_key_env`` names the key's variable)."""
    if kind == "llm_judge":  # secrets by reference: a literal api_key in the options is refused
        from coevo.verify.judge import LLMJudge, refuse_literal_key
        refuse_literal_key(cfg, "verify.options")
        return LLMJudge(**cfg)
    if kind not in KINDS:
        raise ValueError(f"unknown verifier kind {kind!r}; known: {sorted(KINDS) + ['llm_judge']}")
    return KINDS[kind](**cfg)
