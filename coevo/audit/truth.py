"""The truth of a pseudo-label or a reference answer where the world has no oracle (issue #13 item 5).

R-Zero reports pseudo-label accuracy (79 → 69 → 63 %, §4.4 Table 5) through a GPT-4o check; on the math world
coevo had no oracle and reported n/a. Two stand-ins, configured in the run's ``truth`` section:

* ``truth.references``: a JSONL file of ``{"question", "answer"}`` (``answers`` lists accepted): a
  label is judged by the run verifier against the file's answer for the same question (exact
  question text after whitespace normalisation); a question not in the file is *unjudged*.
* ``truth.judge``: any OpenAI-compatible endpoint through the judge verifier's transport
  (``coevo.verify.judge.LLMJudge``: retries, timeouts, reply parsing, auth errors), with its own
  prompt (``TRUTH_PROMPT``, version ``truth-v1``): the question and the proposed final answer, no
  reference — the judge must solve the problem. yes -> 1, no -> 0, anything else an abstention
  with its reason (``judge-unknown``, ``unparsable``, ``judge-unavailable``), never a 0 or 1.

Where the world also has an oracle (the arithmetic world) the recipe reports the judge's agreement
with it (``coevo.audit.auditor.audit_agreement``: agreement, Cohen's kappa, confusion) — how far
the judge can be trusted on the worlds that have no oracle. API keys only by reference
(``api_key_env``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional, Sequence

from coevo.audit.auditor import audit_agreement
from coevo.audit.instruments import pseudo_label_accuracy
from coevo.secrets import DEFAULT_API_KEY_ENV
from coevo.verify.judge import JUDGE_CODE_VERSION, LLMJudge, raise_for_auth
from coevo.core.verdict import Verdict

__all__ = ["TRUTH_PROMPT", "TRUTH_PROMPT_VERSION", "TruthJudge", "ReferenceTruth", "TruthSource", "TruthError",
           "truth_from_config", "truth_metrics"]

TRUTH_PROMPT_VERSION = "truth-v1"
TRUTH_PROMPT = (
    "You are checking the final answer to a problem.\n"
    "Problem:\n{question}\n\n"
    "Proposed final answer:\n{answer}\n\n"
    "Is the proposed final answer correct? Solve the problem yourself if you need to. "
    "Reply with exactly one word: yes, no, or unknown."
)


class TruthError(ValueError):
    """Bad truth configuration (missing file, malformed line); one line for the CLI."""


class TruthJudge(LLMJudge):
    """``LLMJudge`` with the truth prompt (question + proposed answer, no reference)."""

    kind = "llm_truth"
    key_setting = "truth.judge.api_key_env"

    def __init__(self, base_url: str, model: str, **kw: Any) -> None:
        super().__init__(base_url, model, **kw)
        self.prompt_version = TRUTH_PROMPT_VERSION

    @property
    def version(self) -> str:
        return f"{JUDGE_CODE_VERSION}:{self.model}:{TRUTH_PROMPT_VERSION}"

    def prompt(self, question, reference, answer, criterion=None) -> str:
        return TRUTH_PROMPT.format(question=question, answer=answer)


def _norm_q(q: str) -> str:
    return re.sub(r"\s+", " ", (q or "").strip())


class ReferenceTruth:
    """Answers from a JSONL file, matched by question text; labels judged by the run verifier."""

    kind = "reference_file"

    def __init__(self, path: str | Path, verifier) -> None:
        path = Path(path)
        if not path.is_file():
            raise TruthError(f"truth.references: file not found: {path}")
        from coevo.worlds.math import load_jsonl_tasks  # the one JSONL task reader (question + answer(s))

        try:
            tasks = load_jsonl_tasks(path)
        except ValueError as e:
            raise TruthError(f"truth.references: {e}") from None
        self.path, self.verifier = path, verifier
        self.answers = {_norm_q(t.question): list(t.meta["answers"]) for t in tasks}

    @property
    def version(self) -> str:
        return f"{self.path.name}:{len(self.answers)}"

    def verdicts(self, questions: Sequence[str], answers: Sequence[Optional[str]]) -> list[Verdict]:
        refs = [self.answers.get(_norm_q(q)) for q in questions]
        pairs, owner = [], []
        for i, (a, rs) in enumerate(zip(answers, refs)):
            for r in rs or []:
                pairs.append((a, r))
                owner.append(i)
        checks = self.verifier.match_many(pairs) if pairs else []
        out = [Verdict(None, "no-reference" if rs is None else ("no-answer" if a is None else "verifier-abstained"),
                       self.kind, self.version) for a, rs in zip(answers, refs)]
        for i, v in zip(owner, checks):
            if v.value == 1 or (v.value == 0 and out[i].value is None):
                out[i] = Verdict(v.value, "", self.kind, self.version)
        return out


class TruthSource:
    """The configured stand-in for an oracle: ``verdicts(questions, answers)`` -> one Verdict each
    (1 correct, 0 wrong, None unjudged with its reason)."""

    def __init__(self, judge: Optional[TruthJudge] = None, references: Optional[ReferenceTruth] = None) -> None:
        if (judge is None) == (references is None):
            raise TruthError("truth: configure exactly one of truth.judge and truth.references")
        self.judge, self.references = judge, references
        self.kind = judge.kind if judge is not None else references.kind

    def verdicts(self, questions: Sequence[str], answers: Sequence[Optional[str]]) -> list[Verdict]:
        if self.references is not None:
            return self.references.verdicts(questions, answers)
        out = [self.judge.judge(q, "", a) if a is not None else Verdict(None, "no-answer", self.judge.kind,
                                                                         self.judge.version)
               for q, a in zip(questions, answers)]
        raise_for_auth(out)  # a refused key would make every verdict wrong: one line, resumable
        return out

    def close(self) -> None:
        if self.judge is not None:
            self.judge.close()


def truth_from_config(section, verifier) -> Optional[TruthSource]:
    """The run's truth source from its ``truth`` config section (None when neither is set)."""
    if section is None or (section.judge is None and section.references is None):
        return None
    if section.judge is not None:
        j = section.judge
        return TruthSource(judge=TruthJudge(j.base_url, j.model, api_key_env=j.api_key_env or DEFAULT_API_KEY_ENV,
                                            timeout_s=j.timeout_s, retries=j.retries))
    return TruthSource(references=ReferenceTruth(section.references, verifier))


def truth_metrics(source: TruthSource, questions: Sequence[str], answers: Sequence[Optional[str]],
                  oracle_flags: Optional[Sequence[Any]] = None,
                  name: str = "pseudo_label_accuracy") -> tuple[list[Verdict], dict]:
    """The truth source's verdict on each (question, answer) and the step numbers they give:
    ``<name>_truth`` (share judged correct, abstentions left out), ``truth_unjudged``, ``truth_kind``
    and, where ``oracle_flags`` holds any oracle verdict (the arithmetic world), the source's
    agreement, Cohen's kappa and n against the oracle. ``name`` is ``pseudo_label_accuracy``
    for R-Zero's majority labels and ``reference_accuracy`` for SynCo/RGBC's reference answers."""
    vs = source.verdicts(list(questions), list(answers))
    est = pseudo_label_accuracy([v.value for v in vs])
    out: dict = {f"{name}_truth": est.value if est.n else None,
                 "truth_unjudged": sum(v.value is None for v in vs), "truth_kind": source.kind}
    if oracle_flags is not None and any(o is not None for o in oracle_flags):
        agr = audit_agreement(list(oracle_flags), [v.value for v in vs])
        out.update(truth_oracle_agreement=agr["agreement"], truth_oracle_kappa=agr["cohen_kappa"],
                   truth_oracle_n=agr["n"])
    return vs, out
