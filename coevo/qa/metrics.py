"""QA answer metrics: the SQuAD normaliser, EM, Cover-EM, and the ``em`` verifier check.

The normaliser and the two metrics are defined once, in ``coevo.verify.answers``, and
re-exported here; they are line-for-line the functions of

* Search-R1 (PeterGriffinJin/Search-R1 @ a14dc3a, ``verl/utils/reward_score/qa_em.py``:
  ``normalize_answer``, ``em_check``, ``subem_check``) and
* FlashRAG (RUC-NLPIR/FlashRAG @ 1ee5249, ``flashrag/evaluator/utils.py::normalize_answer``,
  ``flashrag/evaluator/metrics.py``: ``ExactMatch.calculate_em``,
  ``Sub_ExactMatch.calculate_sub_em``):

``normalize_answer(s)`` = lower-case -> drop ``string.punctuation`` -> replace the words
a / an / the (``\\b(a|an|the)\\b``) by a space -> collapse whitespace.
``exact_match(pred, golds)`` = 1 if the normalised prediction equals any normalised gold.
``cover_em(pred, golds)`` = 1 if any normalised gold is a substring of the normalised
prediction (Search-R1's "subem", FlashRAG's "acc"), with one deliberate difference: a gold
that normalises to the empty string covers nothing here (in both references it covers
every prediction).  A plain substring test, so "paris" covers "parisian" as upstream.

``check_em(answer, reference)`` is the check behind the verifier kind ``em``
(``coevo.verify.verifiers.EMVerifier``): the reference is one gold string, a list of golds,
or a JSON list of golds as text; the verdict's value is EM and ``detail["cover_em"]``
carries Cover-EM, so one verifier call gives both numbers.
"""
from __future__ import annotations

import json
from typing import Any

from coevo.verify.answers import cover_em, exact_match, normalize_answer
from coevo.verify.verdict import Verdict, abstain

__all__ = ["normalize_answer", "exact_match", "cover_em", "golds_of", "check_em", "EM_KIND_VERSION"]

EM_KIND_VERSION = "em-1"


def golds_of(reference: Any) -> list[str] | None:
    """The gold answers a reference stands for: a list/tuple -> its items as strings; a
    string holding a JSON list of strings -> that list; any other string -> ``[reference]``;
    None -> None."""
    if reference is None:
        return None
    if isinstance(reference, (list, tuple)):
        return [str(g) for g in reference if g is not None]
    s = str(reference)
    if s.lstrip().startswith("["):
        try:
            val = json.loads(s)
        except ValueError:
            return [s]
        if isinstance(val, list) and all(isinstance(g, (str, int, float)) for g in val):
            return [str(g) for g in val]
    return [s]


def check_em(answer: Any, reference: Any) -> Verdict:
    """EM of ``answer`` against the golds of ``reference`` (``golds_of``), Cover-EM in
    ``detail["cover_em"]``.  A missing or empty answer is a 0 (``detail["note"] =
    "no-answer"``, both metrics 0 as in Search-R1's ``compute_score_em``); a missing
    reference or one with no gold abstains ``unparsable``."""
    golds = golds_of(reference)
    if not golds:
        return abstain("unparsable", side="reference", note="no gold answer")
    if answer is None or not str(answer).strip():
        return Verdict(0, detail={"note": "no-answer", "cover_em": 0, "golds": len(golds)})
    a = str(answer)
    return Verdict(exact_match(a, golds), detail={"cover_em": cover_em(a, golds), "golds": len(golds)})
