"""SQuAD normaliser, EM, Cover-EM (hand-computed, against the Search-R1 / FlashRAG definitions)
and the ``em`` verifier kind."""
import json
import re
import string

import pytest

from coevo.qa.metrics import check_em, cover_em, exact_match, golds_of, normalize_answer
from coevo.verify import EMVerifier, make_verifier
from coevo.verify.verifiers import KINDS


def _search_r1_normalize(s):
    """Verbatim copy of Search-R1 verl/utils/reward_score/qa_em.py::normalize_answer (also FlashRAG's)."""
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


CASES = ["The  Eiffel-Tower!", "An apple, a day", "Wilhelm Conrad R\u00f6ntgen", "Super Bowl LII,",
         "February\u00a01,\u00a02018", "theatre of the absurd", "A.B.C.", "  ", "l'Étoile", "Law & Order: SVU",
         "anthem", "The the THE", "Ice-T", "28.0.0.137", "B. D. Wong"]


def test_normaliser_hand_values():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a day") == "apple day"
    assert normalize_answer("theatre of the absurd") == "theatre of absurd"  # 'the' inside 'theatre' stays
    assert normalize_answer("A.B.C.") == "abc"  # punctuation goes before the articles: 'abc' has none
    assert normalize_answer("February\u00a01,\u00a02018") == "february 1 2018"  # NBSP is whitespace
    assert normalize_answer("28.0.0.137") == "2800137"
    assert normalize_answer("The the THE") == ""


@pytest.mark.parametrize("s", CASES)
def test_normaliser_equals_search_r1(s):
    assert normalize_answer(s) == _search_r1_normalize(s)


def test_exact_match_and_cover_em_hand_values():
    assert exact_match("the Paris.", ["paris", "london"]) == 1
    assert exact_match("Paris, France", "paris") == 0
    assert exact_match("291", ["291 episodes", "291"]) == 1
    assert cover_em("Paris, France", "paris") == 1
    assert cover_em("It has 291 episodes in total", ["291 episodes"]) == 1
    assert cover_em("parisian", ["paris"]) == 1  # plain substring, as upstream
    assert cover_em("London", ["paris", ""]) == 0  # an empty gold covers nothing (upstream: covers all)
    assert cover_em("London", ["The", "a"]) == 0  # golds that normalise to "" likewise
    assert exact_match("", [""]) == 1 and cover_em("", [""]) == 0


def test_golds_of():
    assert golds_of(None) is None
    assert golds_of("Paris") == ["Paris"]
    assert golds_of(["a", "b"]) == ["a", "b"]
    assert golds_of(json.dumps(["Dai Xiuli", "Yongge Dai"])) == ["Dai Xiuli", "Yongge Dai"]
    assert golds_of("[not json") == ["[not json"]
    assert golds_of("[1, 2]") == ["1", "2"]
    assert golds_of('[{"a": 1}]') == ['[{"a": 1}]']  # not a list of golds: the string itself


def test_check_em_verdicts():
    v = check_em("the Mary Kom", json.dumps(["Mary Kom"]))
    assert (v.value, v.detail["cover_em"], v.detail["golds"]) == (1, 1, 1)
    v = check_em("Mary Kom, a boxer", ["Mary Kom", "M. C. Mary Kom"])
    assert (v.value, v.detail["cover_em"]) == (0, 1)
    v = check_em("London", "Paris")
    assert (v.value, v.detail["cover_em"]) == (0, 0)
    for empty in (None, "", "   "):
        v = check_em(empty, "Paris")
        assert v.value == 0 and v.detail["note"] == "no-answer" and v.detail["cover_em"] == 0
    v = check_em("Paris", None)
    assert v.value is None and v.reason == "unparsable"
    assert check_em("Paris", "[]").value is None


def test_em_kind_registered_and_never_raises():
    assert KINDS["em"] is EMVerifier
    ver = make_verifier("em")
    v = ver.verify("the Nutcracker", '["nutcracker"]')
    assert (v.value, v.kind, v.version, v.detail["cover_em"]) == (1, "em", "em-1", 1)
    assert [x.value for x in ver.verify_many([("a", "b"), ("b", "b"), (None, "b")])] == [0, 1, 0]
    assert ver.verify(object(), "x").value == 0  # str() of anything, no exception
