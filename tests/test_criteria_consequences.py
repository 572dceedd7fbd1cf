"""The criteria world's answer-dependent abstention channels (docs/criteria.md "Abstention with
consequences"): rates by hand on constructed answers, and the held-out family option."""
from __future__ import annotations

import math

import pytest

from coevo.criteria.verifier import Channels
from coevo.worlds.criteria import CriteriaWorld
from coevo.worlds.criteria_gen import distinct_problems, perturbed_solution

PROBLEMS = distinct_problems(400, 7, "train")


def _reasons(world, answers_of, cid):
    """Per problem: the abstention reason (or '') of criterion ``cid`` on answers_of(problem)."""
    sc = world.scorer()
    tasks = [world.task_of(p) for p in PROBLEMS]
    got = sc.score([(world.entry(t), answers_of(p)) for t, p in zip(tasks, PROBLEMS)])
    out = []
    for t, vs in zip(tasks, got):
        i = [c.id for c in world.criteria(t)].index(cid)
        out.append(vs[i].reason if vs[i].value not in (0, 1) else "")
    return out


def _share(xs, reason):
    return sum(x == reason for x in xs) / len(xs)


def _tol(p, n=len(PROBLEMS)):
    return 4 * math.sqrt(p * (1 - p) / n) + 1e-9  # 4 binomial SE


def test_judge_unknown_depends_on_the_method():
    w = CriteriaWorld(judge_unknown_rate=0.1, judge_unknown_wrong_rate=0.6)
    wrong = _reasons(w, lambda p: perturbed_solution(p, ("no_convert",)), "order")  # no 3rd step: order fails
    right = _reasons(w, lambda p: p.solution, "order")
    assert abs(_share(wrong, "judge-unknown") - 0.6) < _tol(0.6)
    assert abs(_share(right, "judge-unknown") - 0.1) < _tol(0.1)
    flat = CriteriaWorld(judge_unknown_rate=0.1)  # the null world: the same rate on both
    assert abs(_share(_reasons(flat, lambda p: perturbed_solution(p, ("no_convert",)), "order"), "judge-unknown")
               - 0.1) < _tol(0.1)


def test_timeout_hazard_by_length():
    ch = Channels(timeout_rate=0.05, timeout_power=4.0)
    assert ch.timeout_hazard(40, 40) == pytest.approx(0.05)
    assert ch.timeout_hazard(60, 40) == pytest.approx(0.05 * 1.5 ** 4)  # 0.253
    assert ch.timeout_hazard(80, 40) == 0.8 and ch.timeout_hazard(100, 40) == 1.0
    flat = Channels(timeout_rate=0.05, timeout_power=0.0)
    assert flat.timeout_hazard(10, 40) == flat.timeout_hazard(100, 40) == 0.05
    assert Channels(timeout_rate=0.05).timeout_hazard(60, 40) == 0.05 * 60 / 40  # default: linear, as before
    w = CriteriaWorld(timeout_rate=0.05, timeout_power=4.0)
    # the reference solution padded to twice its length: hazard min(1, 0.05 * 2**4) = 0.8
    long = _reasons(w, lambda p: p.solution + ";" + "0" * (len(p.solution) - 1), "dist")
    assert abs(_share(long, "timeout") - 0.8) < _tol(0.8)


def test_unparsable_strikes_one_output_format():
    w = CriteriaWorld(unparsable_format=r"[0-9] ?(s|min|h)$", unparsable_format_rate=0.7)
    time_unit = _reasons(w, lambda p: perturbed_solution(p, ("time_unit",)), "dist")  # "7*8=56 h": the format
    plain = _reasons(w, lambda p: p.solution, "dist")
    assert abs(_share(time_unit, "unparsable") - 0.7) < _tol(0.7)
    assert _share(plain, "unparsable") == 0.0
    # the truth of the struck criterion: a time unit in a distance slot fails dist, so each such
    # abstention hides a failure (arm A drops it from numerator and denominator)
    p = PROBLEMS[0]
    assert w.oracle_verdict(w.task_of(p), "dist", perturbed_solution(p, ("time_unit",))) == 0


def test_defaults_keep_the_tag_and_validate():
    assert Channels().tag == "t0-u0-j0-LNone-s0"
    assert Channels(judge_unknown_wrong_rate=0.5).tag.endswith("-jw0.5")
    with pytest.raises(ValueError, match="judge_unknown_wrong_rate"):
        Channels(judge_unknown_wrong_rate=1.5)
    with pytest.raises(ValueError, match="timeout_power"):
        Channels(timeout_power=-1)


def test_train_exclude_holds_a_family_out():
    w = CriteriaWorld(train_exclude=("cm-mm",), eval_n=80)
    assert all(t.meta["difficulty"] != "cm-mm" for t in w.sample_tasks(300, 1))
    assert sum(t.meta["difficulty"] == "cm-mm" for t in w.eval_set()) > 0
    assert [t.question for t in CriteriaWorld().sample_tasks(20, 1)] == \
        [t.question for t in CriteriaWorld(train_exclude=()).sample_tasks(20, 1)]
    with pytest.raises(ValueError, match="train_exclude"):
        CriteriaWorld(train_exclude=("km-cm",))
