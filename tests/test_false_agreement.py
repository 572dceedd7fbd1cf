"""False-agreement mass FF (coevo.audit.false_agreement): the definition on hand-checked triples, and
the mu_1 = 1 case end to end: an RGBC run on scripted policies where a wrong reference is agreed with
by every solve must count it (issue #11 item 6)."""
from __future__ import annotations

import hashlib
import json
import random
import re

import numpy as np
import pytest
import torch

from coevo.runner.loop import Loop
from coevo.audit.data import collect
from coevo.audit.false_agreement import (AGREEMENT_RULES, NOT_PROPOSER, false_agreement, false_agreement_flags,
                                         false_agreement_from_flags, false_agreement_mass, false_agreement_summary,
                                         group_agrees, solver_majority, solver_majority_columns,
                                         strict_majority_agrees)
from coevo.audit.run_audit import instruments_for
from coevo.core.policy import Completion
from coevo.config import load_config
from coevo.ledger.store import Ledger
from coevo.recipes.rgbc.recipe import RGBCRecipe
from coevo.verify.run import WorldEquivalence
from coevo.worlds.arithmetic import ArithmeticWorld, evaluate, generate


def _norm(s: str) -> str:  # a SQuAD-style normaliser, enough for the test
    s = re.sub(r"\b(a|an|the)\b", " ", s.lower())
    return " ".join("".join(c for c in s if c.isalnum() or c.isspace()).split())


def em(a, b) -> bool:
    return _norm(a) == _norm(b)


def test_definition_on_hand_checked_triples():
    pairs = [("Paris", "paris", "Lyon"),      # agree, wrong          -> FF
             ("The Nile", "nile", "Nile"),    # agree, right          -> 0
             ("Rome", "Milan", "Turin"),      # disagree, both wrong  -> 0
             ("Oslo", "Oslo.", "Bergen"),     # agree (EM), wrong     -> FF
             ("Bern", None, "Zurich"),        # solver answer unknown -> not audited
             ("Kyiv", "Kyiv", None),          # truth unknown         -> not audited
             (None, "Riga", "Riga")]          # no proposer answer    -> audited, 0
    flags = false_agreement_flags(pairs, em)
    assert flags == [(1, 0), (1, 1), (0, 0), (1, 0), (None, None), (None, None), (0, 0)]
    e = false_agreement(pairs, equivalent=em)
    assert e.n == 5 and e.value == pytest.approx(2 / 5)
    assert e.extra["n_unaudited"] == 2 and e.extra["n_false_agreement"] == 2
    assert e.extra["agreement_rate"] == pytest.approx(3 / 5)
    assert e.se == pytest.approx((0.4 * 0.6 / 5) ** 0.5)
    assert false_agreement_summary(e) == {"value": pytest.approx(0.4), "se": pytest.approx(e.se), "n": 5}
    # without the equivalence, "Oslo." != "Oslo" and "paris" != "Paris": plain equality
    assert false_agreement(pairs).value == pytest.approx(0.0)
    # sentinels: a solver majority known not to be the proposer's, a truth known to differ
    e = false_agreement([("5", NOT_PROPOSER, "7"), ("5", "5", ("<not:", "5")), ("5", "5", "5")], equivalent=em)
    assert e.value == pytest.approx(1 / 3) and e.n == 3
    assert false_agreement_summary(false_agreement([])) == {"value": None, "se": None, "n": 0}


def test_flags_batches_and_the_thin_caller():
    # the auditor path: agree flags and correctness flags (None = abstained), batches = rounds
    e = false_agreement_from_flags([1, 1, 0, 1, 1, None], [0, 1, 0, None, 0, 1], batches=[1, 1, 2, 2, 3, 3])
    assert e.n == 4 and e.value == pytest.approx(2 / 4) and e.extra["n_unaudited"] == 2
    assert "interval_method" in e.extra                       # the audit's interval rule with batches
    # false_agreement_mass is the same definition over three columns (plain equality)
    maj = [solver_majority(m, mu, "5") for m, mu in (("6", 1.0), (None, 1.0), (None, 0.0), (None, 0.5), (None, None))]
    assert maj == ["6", "5", NOT_PROPOSER, None, None]        # mu_1 = 1 without a mode: the reference
    a = false_agreement_mass(["5"] * 5, maj, ["7"] * 5)
    b = false_agreement(zip(["5"] * 5, maj, ["7"] * 5))
    assert a.value == b.value == pytest.approx(1 / 3) and a.n == b.n == 3
    with pytest.raises(ValueError):
        false_agreement_mass(["1"], [], ["1"])


# ---------------------------------------------------------------- the agreement rule on constructed groups
class _EMVerifier:
    """The two calls ``solver_majority_columns`` makes, with the EM check above."""

    def majority_votes(self, answer_lists):
        from coevo.verify.vote import majority_vote

        return [majority_vote(list(a), em) for a in answer_lists]

    def match_many(self, pairs):
        from types import SimpleNamespace

        return [SimpleNamespace(value=None if a is None or b is None else int(em(a, b))) for a, b in pairs]


def _agree(rule: str, group: list, label: str):
    """y_P ≃ y_S for one scoring group under ``rule``, as the Dr. Zero steps compute it."""
    matches = [None if a is None else int(em(a, label)) for a in group]
    matches = [0 if a is None else m for a, m in zip(group, matches)]  # a missing answer is a non-match
    plural = solver_majority_columns(_EMVerifier(), [group], [label])[0]["solver_agrees"]
    return group_agrees(rule, matches, plural)


def test_agreement_rules_on_constructed_groups():
    assert AGREEMENT_RULES == ("strict_majority", "plurality")
    label = "Varen Okla"                                   # the proposer's (wrong) answer; truth "Varen Oklo"
    distinct = ["Varen Okla", "Mel Dask", "Tor Vos", "Ise Pry", "Kal Wick"]
    # five distinct answers: a 1-of-5 match is no agreement under strict majority; under plurality
    # the first-seen answer wins the 1-1-1-1-1 tie, so it counts when it is the label's
    assert _agree("strict_majority", distinct, label) == 0.0
    assert _agree("plurality", distinct, label) == 1.0
    assert _agree("plurality", distinct[1:] + distinct[:1], label) == 0.0   # ... and not when it comes last
    # ties: 2-2-1 is no strict majority whichever side the label is on
    tie = ["varen okla", "Mel Dask", "Varen Okla.", "mel dask", "Tor Vos"]
    assert _agree("strict_majority", tie, label) == 0.0
    assert _agree("plurality", tie, label) == 1.0            # the label's pair is seen first
    assert _agree("plurality", tie[1:] + tie[:1], label) == 0.0
    # a strict majority: 3 of 5 (EM-equivalent spellings) agree under both rules
    three = ["Mel Dask", "the Varen Okla", "Varen Okla", "Tor Vos", "VAREN OKLA"]
    assert _agree("strict_majority", three, label) == _agree("plurality", three, label) == 1.0
    # missing answers count in the denominator: 2 matches of 5 with 3 missing is not a majority
    assert _agree("strict_majority", [label, label, None, None, None], label) == 0.0
    assert _agree("plurality", [label, label, None, None, None], label) == 1.0
    with pytest.raises(ValueError):
        group_agrees("first", [1], 1.0)


def test_strict_majority_is_order_free_and_abstentions():
    import itertools

    label = "Varen Okla"
    for group in (["Varen Okla", "Mel Dask", "Tor Vos", "Ise Pry", "Kal Wick"],
                  ["Varen Okla", "Varen Okla", "Mel Dask", "Mel Dask", "Tor Vos"],
                  ["Varen Okla", "Varen Okla", "Varen Okla", "Mel Dask", "Tor Vos"]):
        strict = {_agree("strict_majority", list(p), label) for p in itertools.permutations(group)}
        plural = {_agree("plurality", list(p), label) for p in itertools.permutations(group)}
        assert len(strict) == 1                              # permuting the group never changes it
        assert len(plural) == (1 if group.count(label) == 3 else 2)   # plurality depends on the order
    # FF over constructed groups is the same under every order of the rollouts
    groups = [["Varen Okla", "Mel Dask", "Tor Vos", "Ise Pry", "Kal Wick"],
              ["Varen Okla"] * 3 + ["Mel Dask", "Tor Vos"], ["Varen Oklo"] * 5]
    rng = random.Random(0)
    ffs = set()
    for _ in range(20):
        agree = [_agree("strict_majority", rng.sample(g, len(g)), label) for g in groups]
        ffs.add(false_agreement_from_flags(agree, [0, 0, 0]).value)
    assert len(ffs) == 1 and ffs.pop() == pytest.approx(1 / 3)
    # abstaining checks (None): undecided when they could make a majority, decided otherwise
    assert strict_majority_agrees([1, 1, None, 0, 0]) is None
    assert strict_majority_agrees([1, 1, 1, None, None]) == 1.0
    assert strict_majority_agrees([1, None, 0, 0, 0]) == 0.0
    assert strict_majority_agrees([True, True, False]) == 1.0 and strict_majority_agrees([]) == 0.0


# ---------------------------------------------------------------- mu_1 = 1, end to end on scripted policies
def _misread(expr: str) -> bool:
    """The shared misreading: for these expressions proposer and solver both believe value + 10."""
    return int(hashlib.sha1(expr.encode()).hexdigest(), 16) % 2 == 0


class _Fake:
    def __init__(self, name: str, seed: int) -> None:
        self.name, self.updates = name, 0
        self.gen = torch.Generator().manual_seed(seed)

    @property
    def version(self) -> str:
        return f"{self.name}:fake+{self.updates}"

    def comp(self, prompt: str, text: str) -> Completion:
        return Completion(prompt, text, [1], [5] * max(len(text), 1), [0.0] * max(len(text), 1), "stop", self.version)

    def forward_backward(self, batch, advantages, loss) -> dict:
        return {"loss": 0.0}

    def optim_step(self) -> dict:
        self.updates += 1
        return {"grad_norm": 0.0}


class MisreadingSynth(_Fake):
    def sample(self, prompts, n, sampling):
        out = []
        for p in prompts:
            group = []
            for _ in range(n):
                rng = random.Random(int(torch.randint(0, 10 ** 9, (1,), generator=self.gen)))
                expr = generate("L1", rng)  # one operation: the solution is expr=answer
                ans = evaluate(expr) + (10 if _misread(expr) else 0)
                group.append(self.comp(p, f"<question>{expr}</question><solution>{expr}={ans}</solution>"
                                          f"<answer>{ans}</answer>"))
            out.append(group)
        return out


class MisreadingSolver(_Fake):
    def sample(self, prompts, n, sampling):
        out = []
        for p in prompts:
            expr = p[len("<solve>"):-1]
            ans = evaluate(expr) + (10 if _misread(expr) else 0)
            out.append([self.comp(p, str(ans)) for _ in range(n)])
        return out


def test_all_correct_screen_with_a_wrong_reference_is_false_agreement(tmp_path):
    cfg = load_config("cpu", None, ["recipe=rgbc", "rgbc.arm=full", "synco.tasks_per_step=16", "synco.rounds=1",
                                    "synco.steps_per_round=2", "synco.audit_samples=0", "world.eval_per_level=2",
                                    "synco.hard_checks=[schema,well_posed,legality]"])
    world = ArithmeticWorld(eval_per_level=2)
    pols = {"synthesizer": MisreadingSynth("s", 1), "solver": MisreadingSolver("r", 2)}
    rec = RGBCRecipe(cfg, world, pols, "mu1", WorldEquivalence(world, None))
    led = Ledger(tmp_path / "mu1.duckdb")
    led.append("runs", [{"run_id": "mu1", "recipe": "rgbc", "config_yaml": json.dumps(cfg.model_dump())}])
    Loop(led, "mu1", rec, pols).run()
    rows = led.query("SELECT mu_screen, mode_answer, solver_majority, solver_majority_share, solver_agrees, "
                     "proposer_answer, reference_correct FROM task_stats WHERE mu_screen IS NOT NULL")
    wrong = [r for r in rows if r["reference_correct"] is False]
    assert len(rows) >= 8 and wrong and len(wrong) < len(rows)
    for r in rows:  # every solve agrees with the reference: mu_1 = 1, no confirm group, no mode ...
        assert r["mu_screen"] == 1.0 and r["mode_answer"] is None
        # ... and the majority is recorded at the source all the same
        assert r["solver_majority"] == r["proposer_answer"] and r["solver_majority_share"] == 1.0
        assert r["solver_agrees"] == 1.0
    ins = instruments_for(collect(led, "mu1"), "rgbc")
    ff = ins["false_agreement_mass"]
    assert ff["status"] == "ok" and ff["n"] == len(rows)
    assert ff["value"] == pytest.approx(len(wrong) / len(rows))  # every wrong reference is a false agreement
    assert ff["extra"]["n_recorded_majority"] == ff["n"] + ff["extra"]["n_unaudited"]
    # a ledger written before the column existed: the derivation from mu_screen gives the same number
    led.con.execute("UPDATE task_stats SET solver_agrees = NULL, solver_majority = NULL")
    old = instruments_for(collect(led, "mu1"), "rgbc")["false_agreement_mass"]
    assert old["value"] == pytest.approx(ff["value"]) and old["extra"]["n_recorded_majority"] == 0
    # and the recipe's own oracle audit agrees, pair by pair (truth = the oracle's value)
    truths = np.array([r["reference_correct"] for r in rows])
    assert np.mean([r["solver_agrees"] == 1.0 for r in rows] & ~truths) == pytest.approx(ff["value"])
