"""Answer metrics for the search world (Dr. Zero / Search-R1; Cover-EM as in False Frontiers §4; ANCHORS.md).

``normalize_answer`` is the standard SQuAD normaliser: lower-case, drop punctuation,
drop the articles a / an / the, collapse whitespace.  EM = the normalised prediction
equals a normalised gold; Cover-EM = a normalised gold is a substring of the
normalised prediction.
"""
from __future__ import annotations

import re
import string
from typing import Iterable, Union

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
