"""Answer metrics for the search world (Dr. Zero / Search-R1; Cover-EM as in False Frontiers (results); ANCHORS.md).

``normalize_answer`` is the standard SQuAD normaliser: lower-case, drop punctuation,
drop the articles a / an / the, collapse whitespace.  EM = the normalised prediction
equals a normalised gold; Cover-EM = a normalised gold is a substring of the
normalised prediction.
"""
from __future__ import annotations

import re
import string
import json
from typing import Any, Iterable, Union

from coevo.core.verdict import Verdict, abstain

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(s: str) -> str:
    """SQuAD normaliser (lower, remove punctuation, articles, extra whitespace)."""
    s = str(s).lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _golds(golds: Union[str, Iterable[str]]) -> list:
    return [golds] if isinstance(golds, str) else [str(g) for g in golds]


def exact_match(prediction: str, golds: Union[str, Iterable[str]]) -> int:
    """1 if the normalised prediction equals any normalised gold answer, else 0."""
    p = normalize_answer(prediction)
    return int(any(p == normalize_answer(g) for g in _golds(golds)))


def cover_em(prediction: str, golds: Union[str, Iterable[str]]) -> int:
    """1 if any normalised (non-empty) gold is a substring of the normalised prediction.

    Uses a plain substring test as Search-R1 does ("paris" covers "parisian"); the
    docs note this leniency."""
    p = normalize_answer(prediction)
    return int(any((g := normalize_answer(x)) and g in p for x in _golds(golds)))


# ---------------------------------------------------------------------- EM / Cover-EM checks (coevo.qa.metrics re-exports them)
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
