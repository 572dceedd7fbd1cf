"""The false-agreement audit against an auditor model, and how far that auditor agrees with the oracle.

False Frontiers (FF): the paper asks a stronger model (gpt-6-astra/high) to check each generated
(question, answer) pair against the source documents after the fact; issue #11 item 6 asks for the
same audit through any OpenAI-compatible endpoint, and for its agreement with the oracle (the facts
world knows the truth, so it tells how far a model auditor can be trusted).

* :class:`Auditor` asks the auditor model, with the source documents in the prompt, whether the
  proposed answer is a correct answer to the question. The transport is the judge verifier's
  (``coevo.verify.judge.LLMJudge``: retries, timeouts, reply parsing, auth errors, cache); only the
  prompt differs (``AUDIT_PROMPT``, version ``audit-v1``). A reply other than yes / no, an
  ``unknown`` or a missing answer is an **abstention** (value None) with its reason (``unparsable``,
  ``judge-unknown``, ``no-answer``), never a 0 or 1.  An endpoint that cannot be reached, times out or
  answers with errors after its retries is an **error** (``judge-unavailable``, ``Verdict.errored``),
  never an abstention: counted apart (``n_errors``); when every call of a batch fails, ``audit_many``
  raises ``coevo.core.verdict.EndpointDown`` (one line: the endpoint and the cause).
  API keys only by reference: ``api_key_env`` names the variable (``coevo.secrets``).
* :func:`auditor_false_agreement`: FF with the auditor's verdict as the truth of the proposer's
  answer (``coevo.audit.false_agreement.false_agreement_from_flags``: the one definition).
* :func:`audit_agreement`: agreement, Cohen's kappa and the confusion table of the auditor's
  verdicts against the oracle's on the pairs both judged.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Optional, Sequence

import numpy as np

from coevo.audit.false_agreement import false_agreement_from_flags, is_known
from coevo.audit.stats import Estimate, binomial_se
from coevo.secrets import DEFAULT_API_KEY_ENV, refuse_literal_key
from coevo.verify.judge import JUDGE_CODE_VERSION, LLMJudge, raise_for_auth
from coevo.core.verdict import Verdict, is_error, raise_if_all_failed

__all__ = ["AUDIT_PROMPT", "AUDIT_PROMPT_VERSION", "AuditorJudge", "Auditor", "auditor_false_agreement",
           "audit_agreement"]

AUDIT_PROMPT_VERSION = "audit-v1"
AUDIT_PROMPT = (
    "You are auditing a question and its proposed answer, written from the source documents below.\n"
    "Source documents:\n{documents}\n\n"
    "Question:\n{question}\n\n"
    "Proposed answer:\n{answer}\n\n"
    "According to the source documents, is the proposed answer a correct answer to the question? "
    "Reply with exactly one word: yes, no, or unknown."
)
DOC_SEPARATOR = "\n\n---\n\n"


class AuditorJudge(LLMJudge):
    """``LLMJudge`` with the audit prompt: the documents travel in the judge's ``reference`` slot."""

    kind = "llm_auditor"
    key_setting = "audit.auditor.api_key_env"

    def __init__(self, base_url: str, model: str, **kw: Any) -> None:
        super().__init__(base_url, model, **kw)
        self.prompt_version = AUDIT_PROMPT_VERSION  # cache key and verdict detail name this prompt

    @property
    def version(self) -> str:
        return f"{JUDGE_CODE_VERSION}:{self.model}:{AUDIT_PROMPT_VERSION}"

    def prompt(self, question, reference, answer, criterion=None) -> str:
        return AUDIT_PROMPT.format(documents=reference, question=question, answer=answer)


class Auditor:
    """Asks an auditor model whether (question, answer) is correct given the source documents.

    ``base_url``: an OpenAI-compatible ``/v1`` root; ``model``: its model name; ``api_key_env``: the
    environment variable holding the key (never the key); ``max_doc_chars``: each document is cut to
    this many characters (the prompt stays bounded; the verdict's detail says when a cut happened).
    ``judge``: an ``AuditorJudge`` to use instead (tests, a shared cache)."""

    def __init__(self, base_url: str = "", model: str = "", api_key_env: str = DEFAULT_API_KEY_ENV,
                 timeout_s: float = 30.0, retries: int = 3, backoff_s: float = 1.0, max_doc_chars: int = 4000,
                 judge: Optional[AuditorJudge] = None, cache=None) -> None:
        if judge is None and not (base_url and model):
            raise ValueError("auditor: base_url and model are required (an OpenAI-compatible endpoint)")
        self.max_doc_chars = int(max_doc_chars)
        self.judge = judge or AuditorJudge(base_url, model, api_key_env=api_key_env, timeout_s=timeout_s,
                                           retries=retries, backoff_s=backoff_s, cache=cache)

    @classmethod
    def from_options(cls, options: dict, where: str = "audit.auditor") -> "Auditor":
        """From a config mapping (base_url, model, api_key_env, timeout_s, retries, backoff_s,
        max_doc_chars); a literal ``api_key`` is refused (one-line ValueError)."""
        opts = dict(options or {})
        refuse_literal_key(opts, where)
        known = {"base_url", "model", "api_key_env", "timeout_s", "retries", "backoff_s", "max_doc_chars"}
        extra = sorted(set(opts) - known)
        if extra:
            raise ValueError(f"{where}: unknown option(s) {extra}; known: {sorted(known)}")
        return cls(**opts)

    def documents_text(self, documents: Sequence[str]) -> tuple[str, bool]:
        cut = [d[:self.max_doc_chars] for d in documents]
        return DOC_SEPARATOR.join(cut), any(len(d) > self.max_doc_chars for d in documents)

    def audit(self, question: str, answer: Optional[str], documents: Sequence[str]) -> Verdict:
        """1 = the auditor says the answer is correct, 0 = wrong, None = abstained (see ``reason``)."""
        if answer is None or not str(answer).strip():
            return Verdict(None, "no-answer", self.judge.kind, self.judge.version)
        text, truncated = self.documents_text(list(documents))
        v = self.judge.judge(question, text, str(answer))
        v.detail = dict(v.detail or {}, n_documents=len(documents), truncated=truncated)
        return v

    def audit_many(self, items: Sequence[tuple[str, Optional[str], Sequence[str]]]) -> list[Verdict]:
        """``audit`` per (question, answer, documents); a rejected API key raises ``JudgeAuthError``
        (one line naming the variable), an endpoint whose every call failed ``EndpointDown``, instead
        of recording every verdict as an abstention."""
        out = [self.audit(q, a, docs) for q, a, docs in items]
        raise_for_auth(out)
        raise_if_all_failed([v for v in out if v.reason != "no-answer"], "auditor", self.judge.base_url)
        return out

    def close(self) -> None:
        self.judge.close()


def _flag(v: Any) -> Optional[int]:
    """1 / 0 / None from a Verdict, a bool, a number or None (NaN = None)."""
    v = getattr(v, "value", v)
    return int(bool(v)) if is_known(v) else None


def auditor_false_agreement(agree: Sequence[Any], verdicts: Sequence[Any], batches=None) -> Estimate:
    """FF against the auditor: FF_i = agree_i ∧ (auditor says the proposer's answer is wrong).

    ``agree``: per pair, 1 = the solver's answer is equivalent to the proposer's (None = unknown);
    ``verdicts``: the auditor's Verdicts on the proposer's answers (or 1/0/None). Abstentions are left
    out; extras count them by reason (``abstentions``) next to ``n_unaudited``, and the auditor's
    failed calls apart (``n_errors``: an endpoint error is no abstention)."""
    reasons = Counter(getattr(v, "reason", "") or "abstained" for v in verdicts
                      if _flag(v) is None and not is_error(v))
    return false_agreement_from_flags(agree, [_flag(v) for v in verdicts], batches=batches,
                                      abstentions=dict(sorted(reasons.items())),
                                      n_errors=sum(1 for v in verdicts if is_error(v)))


def audit_agreement(oracle_flags: Sequence[Any], auditor_flags: Sequence[Any]) -> dict:
    """How far the auditor agrees with the oracle on "is the proposer's answer correct".

    Over the pairs both judged (auditor abstentions and unknown truths left out, counted in
    ``n_unjudged``): ``agreement`` = share of equal verdicts (with its binomial ``agreement_se``),
    ``cohen_kappa`` = (p_o − p_e)/(1 − p_e) with p_e from the two marginals (None when p_e = 1: one
    class only), ``confusion`` = [[both wrong, oracle wrong / auditor correct], [oracle correct /
    auditor wrong, both correct]] (rows: oracle 0, 1; columns: auditor 0, 1), and, since FF counts
    wrong answers, the auditor's ``wrong_precision`` / ``wrong_recall`` for flagging a wrong answer.
    """
    if len(oracle_flags) != len(auditor_flags):
        raise ValueError("oracle_flags and auditor_flags must have the same length")
    pairs = [(o, a) for o, a in ((_flag(x), _flag(y)) for x, y in zip(oracle_flags, auditor_flags))
             if o is not None and a is not None]
    n = len(pairs)
    c = np.zeros((2, 2), dtype=int)
    for o, a in pairs:
        c[o, a] += 1
    out = {"n": n, "n_unjudged": len(oracle_flags) - n, "confusion": c.tolist(), "agreement": None,
           "agreement_se": None, "cohen_kappa": None, "wrong_precision": None, "wrong_recall": None}
    if n == 0:
        return out
    po = float(np.trace(c)) / n
    pe = float(c[0].sum() * c[:, 0].sum() + c[1].sum() * c[:, 1].sum()) / n ** 2
    out.update(agreement=po, agreement_se=float(binomial_se(po, n)),
               cohen_kappa=(po - pe) / (1 - pe) if pe < 1 else None)
    if c[:, 0].sum():
        out["wrong_precision"] = float(c[0, 0] / c[:, 0].sum())
    if c[0].sum():
        out["wrong_recall"] = float(c[0, 0] / c[0].sum())
    return out
