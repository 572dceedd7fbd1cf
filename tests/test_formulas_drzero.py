"""Dr. Zero proposer reward, hop-bucket advantages, MSV acceptance and CrossFit's f(k) (coevo.recipes.drzero.rewards),
hand-computed.

Values from facebookresearch/drzero verl/custom_reward/reward_function.py (see the module docstring)
and False Frontiers §2.2–§2.3."""
import math
import re

import numpy as np
import pytest

from coevo.recipes.drzero.rewards import (crossfit_reward, drzero_answer_score, drzero_difficulty, drzero_format_score,
                                          drzero_integrity, drzero_proposer_reward, drzero_tool_score, hrpo_advantages,
                                          msv_accept, msv_side_answer)


def norm(s: str) -> str:  # Dr. Zero's normalize_answer: lower, drop punctuation, articles, extra spaces
    s = "".join(c for c in s.lower() if c not in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def em(a: str, b: str) -> bool:
    return norm(a) == norm(b)


def test_difficulty_n_is_the_number_of_solver_samples():
    # k of n = 5 solver answers match: (5 - k)/4 inside, 0 at k = 0 and k = 5 (compute_difficulty_score)
    assert [drzero_difficulty(k) for k in range(6)] == [0.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    assert drzero_difficulty(1, n=3) == 1.0 and drzero_difficulty(2, n=3) == 0.5
    np.testing.assert_array_equal(drzero_difficulty(np.arange(6)), crossfit_reward(np.arange(6)))  # one line
    with pytest.raises(ValueError):
        drzero_difficulty(6)


def test_format_score_parts():
    assert drzero_format_score(True, 1.0, 0.5, 1.0) == pytest.approx(3.5 / 4)
    assert drzero_format_score(True, 0.0, 0.0, 0.0) == 0.25          # the integrity share alone
    assert drzero_format_score(False, 1.0, 1.0, 1.0) == 0.0
    with pytest.raises(ValueError):
        drzero_format_score(True, 1.5, 0.0, 0.0)
    # tool: 1-hop -> 1; n-hop -> min((1 + calls)/n, 1) when every call got a response, else 0
    assert drzero_tool_score(1, 0, 0) == 1.0
    assert drzero_tool_score(3, 2, 2) == 1.0
    assert drzero_tool_score(3, 1, 1) == pytest.approx(2 / 3)
    assert drzero_tool_score(3, 1, 0) == 0.0
    assert drzero_tool_score(2, 4, 4) == 1.0
    # answer: in the documents (or yes/no), 1-5 words -> 1, 6-10 -> 0.5, longer or absent -> 0
    doc = "The capital of Freedonia is Paris. It was founded by one two three four five six seven eight nine ten."
    assert drzero_answer_score("Paris", doc, norm) == 1.0
    assert drzero_answer_score("Yes", "", norm) == 1.0
    assert drzero_answer_score("one two three four five six seven", doc, norm) == 0.5
    assert drzero_answer_score("one two three four five six seven eight nine ten", doc, norm) == 0.5
    assert drzero_answer_score("by one two three four five six seven eight nine ten", doc, norm) == 0.0
    assert drzero_answer_score("Lyon", doc, norm) == 0.0
    assert drzero_answer_score("", doc, norm) == 0.0
    assert drzero_integrity("Who founded Freedonia?", "Rufus", norm)
    assert not drzero_integrity("Is Rufus the founder?", "rufus", norm) and not drzero_integrity("", "x", norm)


def test_proposer_reward_paper_and_code():
    assert drzero_proposer_reward(0.75, 2) == pytest.approx(0.375 + 0.75)
    assert drzero_proposer_reward(1.0, 5) == pytest.approx(0.5)          # too easy: format share only
    assert drzero_proposer_reward(1.0, 0) == pytest.approx(0.5)          # unsolved: format share only
    # format 0: the code never sends the question to the solver (reward 0); the paper's sum keeps d(k)
    assert drzero_proposer_reward(0.0, 3) == pytest.approx(0.5)
    assert drzero_proposer_reward(0.0, 3, variant="code") == 0.0
    assert drzero_proposer_reward(0.5, 3, variant="code") == pytest.approx(0.25 + 0.5)
    np.testing.assert_allclose(drzero_proposer_reward(np.array([0.25, 1.0]), np.array([1, 4])), [1.125, 0.75])
    with pytest.raises(ValueError):
        drzero_proposer_reward(0.5, 1, variant="other")


def test_hop_bucket_advantages_paper_and_code():
    r, hops = [1.0, 0.5, 0.0, 0.8], [1, 1, 2, 3]
    # paper: population std; hop 1: mean .75, std .25; singletons -> 0
    d = 0.25 / (0.25 + 1e-6)
    np.testing.assert_allclose(hrpo_advantages(r, hops), [d, -d, 0.0, 0.0], atol=1e-12)
    # code (grpo_batch): unbiased std sqrt(0.125); a singleton bucket gets mean 0, std 1
    s = math.sqrt(0.125)
    np.testing.assert_allclose(hrpo_advantages(r, hops, variant="code"),
                               [0.25 / (s + 1e-6), -0.25 / (s + 1e-6), 0.0, 0.8 / (1 + 1e-6)], atol=1e-7)
    # one 4-hop bucket of three: mean .6, deviations -.4 -.1 .5; var .14 (population) / .21 (unbiased)
    r3 = [0.2, 0.5, 1.1]
    np.testing.assert_allclose(hrpo_advantages(r3, [4, 4, 4]), np.array([-0.4, -0.1, 0.5]) / (math.sqrt(0.14) + 1e-6),
                               atol=1e-9)
    np.testing.assert_allclose(hrpo_advantages(r3, [4, 4, 4], variant="code"),
                               np.array([-0.4, -0.1, 0.5]) / (math.sqrt(0.21) + 1e-6), atol=1e-6)


def test_msv_accept():
    # source-aware side: "Paris" x2 (EM); blind side: tie "The Paris" / "Rome" -> the first seen
    assert msv_side_answer(["Paris", "paris", "Lyon"], em) == ("Paris", 2)
    assert msv_side_answer(["The Paris", None, "Rome"], em) == ("The Paris", 1)
    assert msv_accept(["Paris", "paris", "Lyon"], ["The Paris", None, "Rome"], em) == (True, "Paris", "accepted")
    assert msv_accept([None, "", "  "], ["Paris"] * 3, em) == (False, None, "no-source-answer")
    assert msv_accept(["Paris"] * 3, [None, None, None], em) == (False, None, "no-blind-answer")
    assert msv_accept(["Oslo"] * 3, ["Bergen", "Bergen", None], em) == (False, None, "disagree")
    # a stricter side answer: at least 2 of the 3 samples
    assert msv_accept(["Paris"] * 3, ["The Paris", None, "Rome"], em, min_support=2) == (False, None, "no-blind-answer")


def test_crossfit_reward():
    assert crossfit_reward(np.arange(6)).tolist() == [0.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    assert crossfit_reward(np.arange(6), outside="extrapolate").tolist() == [1.25, 1.0, 0.75, 0.5, 0.25, 0.0]
    assert crossfit_reward(2, n=3) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        crossfit_reward(6)
    with pytest.raises(ValueError):
        crossfit_reward(2, outside="one")
