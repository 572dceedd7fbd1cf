"""Verifiers: every reward passes through one, and every verifier may abstain.

Public API:
- ``Verdict`` (value 1 | 0 | None, a reason for every None, kind, version, elapsed, detail)
- verifier kinds: ``MathVerifier`` (math), ``IntegerVerifier`` (integer), ``NumericUnitVerifier`` (numeric_unit),
  ``SympyEquivVerifier`` (sympy_equiv), ``SandboxPyVerifier`` (sandbox_py),
  ``RuleVerifier`` (rule), ``ExactMatchVerifier`` / ``CoverEMVerifier``, ``EMVerifier`` (em: QA
  golds, EM + Cover-EM, coevo.qa.metrics), ``LLMJudge``
  (llm_judge); ``make_verifier(kind, **cfg)``
- ``VerifierPool``: killable worker processes with a hard per-item timeout
- ``run_sandboxed(code, timeout_s) -> SandboxResult``: sandbox for model-written code
- ``normalize_answer``, ``exact_match``, ``cover_em``: SQuAD answer metrics
- ``VerdictCache``, ``MemoryCacheStore``, ``cache_key``

See docs/verifiers.md.
"""
from coevo.verify.answers import cover_em, exact_match, normalize_answer
from coevo.verify.cache import MemoryCacheStore, VerdictCache, cache_key
from coevo.verify.judge import LLMJudge
from coevo.verify.pool import VerifierPool, default_pool
from coevo.verify.sandbox import SandboxResult, run_sandboxed, sandbox_isolation
from coevo.core.verdict import REASONS, TRANSIENT_REASONS, Verdict
from coevo.verify.verifiers import (KINDS, CoverEMVerifier, EMVerifier, ExactMatchVerifier, IntegerVerifier, MathVerifier,
                                    NumericUnitVerifier, RuleVerifier, SandboxPyVerifier, SympyEquivVerifier, Verifier,
                                    make_verifier)

__all__ = [
    "Verdict", "REASONS", "TRANSIENT_REASONS",
    "Verifier", "MathVerifier", "IntegerVerifier", "NumericUnitVerifier", "SympyEquivVerifier", "SandboxPyVerifier", "RuleVerifier",
    "ExactMatchVerifier", "CoverEMVerifier", "EMVerifier", "LLMJudge", "KINDS", "make_verifier",
    "VerifierPool", "default_pool",
    "run_sandboxed", "SandboxResult", "sandbox_isolation",
    "normalize_answer", "exact_match", "cover_em",
    "VerdictCache", "MemoryCacheStore", "cache_key",
]
