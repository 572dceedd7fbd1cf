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

from coevo.verify.answers import EM_KIND_VERSION, check_em, cover_em, exact_match, golds_of, normalize_answer  # noqa: F401

__all__ = ["normalize_answer", "exact_match", "cover_em", "golds_of", "check_em", "EM_KIND_VERSION"]
