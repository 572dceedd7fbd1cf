"""Criteria world: generator determinism, oracle values, abstention channels at their set
rates (binomial intervals), the null check, verifier-vs-oracle agreement and the shipped
student's pinned per-axis accuracy (coevo/worlds/criteria.py, docs/criteria.md)."""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from coevo.criteria.verifier import Channels, hash01, locate
from coevo.worlds import world_class
from coevo.worlds.criteria import CriteriaWorld, truth_of
from coevo.worlds.criteria_gen import ERRORS, Problem, parse_question, perturbed_solution, split_of

ASSETS = Path(__file__).resolve().parents[1] / "coevo" / "assets"
P = Problem(7, 8, 30, "+", "km", "m", "h")


def within(share: float, rate: float, n: int, z: float = 4.0) -> bool:
    """``share`` inside the z-sigma binomial interval around ``rate`` for n draws."""
    return abs(share - rate) <= z * math.sqrt(rate * (1 - rate) / n) + 1e-12


def test_generator_is_deterministic_and_split():
    w = CriteriaWorld(eval_n=50)
    a, b = list(w.eval_set()), list(CriteriaWorld(eval_n=50).eval_set())
    assert [t.question for t in a] == [t.question for t in b] and len({t.question for t in a}) == 50
    assert all(split_of(t.question) == "eval" for t in a)
    tr = w.sample_tasks(40, seed=3)
    assert [t.question for t in tr] == [t.question for t in CriteriaWorld().sample_tasks(40, seed=3)]
    assert all(split_of(t.question) == "train" for t in tr)
    assert P.question == "7 km per h for 8 h plus 30 km in m"
    assert P.solution == "7*8=56 km;56+30=86 km;86*1000=86000 m"
    assert parse_question(P.question) == P and parse_question("7 km per h for 8 s plus 30 km in m") is None
    t = w.task_of(P)
    assert (t.reference, w.oracle(t), w.solver_prompt(t)) == ("86000 m", "86000 m", f"<solve>{P.question};")
    assert w.extract_answer(P.solution + "<eos>junk") == P.solution and w.extract_answer("  ") is None
    assert w.equivalent(P.solution, "86 km") and not w.equivalent(P.solution, "86000 cm")
    assert world_class("criteria") is CriteriaWorld


def test_from_config_options():
    cfg = SimpleNamespace(world=SimpleNamespace(options={"timeout_rate": 0.1, "eval_n": 7}))
    w = CriteriaWorld.from_config(cfg)
    assert w.channels == Channels(0.1, 0.0, 0.0, None, 0) and len(w.eval_set()) == 7
    cfg.world.options = {"timeout_rat": 0.1}
    with pytest.raises(ValueError, match=r"world.options.timeout_rat: not an option"):
        CriteriaWorld.from_config(cfg)
    with pytest.raises(ValueError, match="timeout_rate must be in"):
        CriteriaWorld(timeout_rate=1.5)


# hand-computed truths for P (7 km/h, 8 h, +30 km, in m): dist 56 km, total 86 km, final 86000 m
ORACLE = {
    (): dict(dist=1, setup=1, total=1, convert=1, final_value=1, final_unit=1, wrong_unit=0, order=1),
    ("product",): dict(dist=0, setup=1, total=0, convert=1, final_value=0, final_unit=1, wrong_unit=0, order=1),
    ("sum",): dict(dist=1, setup=1, total=0, convert=1, final_value=0, final_unit=1, wrong_unit=0, order=1),
    ("factor",): dict(dist=1, setup=1, total=1, convert=0, final_value=0, final_unit=1, wrong_unit=0, order=1),
    ("no_convert",): dict(dist=1, setup=1, total=1, convert=0, final_value=1, final_unit=0, wrong_unit=0, order=0),
    ("time_unit",): dict(dist=0, setup=1, total=1, convert=1, final_value=1, final_unit=1, wrong_unit=1, order=1),
    ("malformed",): dict(dist=0, setup=1, total=1, convert=1, final_value=1, final_unit=1, wrong_unit=0, order=1),
    ("skip",): dict(dist=0, setup=0, total=0, convert=0, final_value=1, final_unit=1, wrong_unit=0, order=0),
}


def test_oracle_values_by_hand():
    w = CriteriaWorld()
    t = w.task_of(P)
    assert perturbed_solution(P, ("product",)) == "7*8=66 km;66+30=96 km;96*1000=96000 m"  # 7+8 odd: +10
    assert perturbed_solution(P, ("time_unit",)).startswith("7*8=56 h;")
    for errs, want in ORACLE.items():
        ans = perturbed_solution(P, errs)
        assert {c: w.oracle_verdict(t, c, ans) for c in want} == want, (errs, ans)
    assert w.oracle_verdict(t, "final_value", "7*8=56 km;56+30=86 km;86 km") == 1   # 86 km == 86000 m
    assert w.oracle_verdict(t, "final_value", "86000 s") == 0 and w.oracle_verdict(t, "dist", None) == 0
    assert locate("a=1 m;b=2 m", "step:2") == "2 m" and locate("a=1 m", "expr:1") == "a"
    assert locate("a=1 m", "step:2") is None and locate("x;y=3 cm", "final") == "3 cm"


def test_total_setup_option_adds_step_two_expression_criterion():
    """``total_setup``: a ninth criterion (arithmetic axis, weight 0.5, sympy_equiv on step 2's
    expression): right after a ``sum`` slip (the expression is right, its value wrong), wrong when
    the product slip is carried into step 2."""
    w = CriteriaWorld(total_setup=True)
    t = w.task_of(P)
    c = {c.id: c for c in w.criteria(t)}
    assert len(c) == 9 and len(CriteriaWorld().criteria(t)) == 8
    assert (c["total_setup"].axis, c["total_setup"].weight, c["total_setup"].kind) == ("arithmetic", 0.5, "sympy_equiv")
    assert w.oracle_verdict(t, "total_setup", perturbed_solution(P, ())) == 1
    assert w.oracle_verdict(t, "total_setup", perturbed_solution(P, ("sum",))) == 1
    assert w.oracle_verdict(t, "total", perturbed_solution(P, ("sum",))) == 0
    assert w.oracle_verdict(t, "total_setup", perturbed_solution(P, ("product",))) == 0


def answers_for(w, tasks):
    """Every single error and a few pairs on each task (scripted student answers)."""
    combos = [()] + [(e,) for e in ERRORS] + [("product", "factor"), ("sum", "no_convert"), ("time_unit", "factor")]
    return [(t, perturbed_solution(w.problem(t), c)) for t in tasks for c in combos]


def test_null_check_rates_zero_means_no_simulated_abstention():
    w = CriteriaWorld(eval_n=30)
    items = answers_for(w, list(w.eval_set()))
    verdicts = w.scorer().score([(w.entry(t), a) for t, a in items])
    reasons = {(v.reason, bool(v.detail.get("simulated"))) for row in verdicts for v in row if v.value is None}
    assert reasons == {("unparsable", False)}  # only the really malformed steps (``7*8= km``)
    for (t, a), row in zip(items, verdicts):
        for v in row:
            assert v.value is not None or ("= " in a and v.criterion_id == "dist")


def test_verdicts_through_the_pool_agree_with_the_oracle():
    from coevo.verify.pool import VerifierPool

    w = CriteriaWorld(eval_n=12, timeout_rate=0.1, unparsable_rate=0.1, judge_unknown_rate=0.2)
    items = answers_for(w, list(w.eval_set()))
    pool = VerifierPool(workers=1, timeout_s=30)
    try:
        verdicts = w.scorer(pool=pool, timeout_s=30).score([(w.entry(t), a) for t, a in items])
    finally:
        pool.close()
    n = agree = abst = 0
    for (t, a), row in zip(items, verdicts):
        for v in row:
            assert v.criterion_id and v.kind in ("numeric_unit", "sympy_equiv", "rule", "sim_judge")
            if v.value is None:
                abst += 1
                continue
            n += 1
            agree += v.value == w.oracle_verdict(t, v.criterion_id, a)
    assert n > 700 and agree == n and abst > 50


def test_channels_at_their_set_rates():
    rates = dict(timeout_rate=0.1, unparsable_rate=0.2, judge_unknown_rate=0.3)
    w = CriteriaWorld(eval_n=300, **rates)
    tasks = list(w.eval_set())
    rows = w.scorer().score([(w.entry(t), t.solution) for t in tasks])
    flat = [v for row in rows for v in row]
    timeouts = [v.reason == "timeout" for v in flat]
    assert within(sum(timeouts) / len(flat), 0.1, len(flat))
    parsing = [v for v in flat if v.kind in ("numeric_unit", "sympy_equiv") and v.reason != "timeout"]
    assert within(sum(v.reason == "unparsable" for v in parsing) / len(parsing), 0.2, len(parsing))
    judge = [v for v in flat if v.kind == "sim_judge" and v.reason != "timeout"]
    assert within(sum(v.reason == "judge-unknown" for v in judge) / len(judge), 0.3, len(judge))
    assert all(v.detail.get("simulated") for v in flat if v.value is None)
    assert {v.reason for v in flat if v.kind == "rule"} <= {"", "timeout"}   # rules never unparsable
    # a twice-as-long answer times out about twice as often; beyond the length budget always
    long_rows = w.scorer().score([(w.entry(t), t.solution + ";" + t.solution) for t in tasks])
    share = sum(v.reason == "timeout" for row in long_rows for v in row) / len(flat)
    assert within(share, 0.2, len(flat))
    wb = CriteriaWorld(eval_n=20, length_budget=40)
    rows = wb.scorer().score([(wb.entry(t), t.solution) for t in list(wb.eval_set())])
    for t, row in zip(wb.eval_set(), rows):
        assert all((v.reason == "timeout") == (len(t.solution) > 40) for v in row)


def test_hash_draws_are_uniform_and_keyed():
    xs = [hash01(0, "timeout", i) for i in range(4000)]
    assert abs(sum(x < 0.25 for x in xs) / 4000 - 0.25) < 0.03
    assert hash01(1, "a") != hash01(2, "a") and hash01(1, "a") == hash01(1, "a")


def shipped_axis_accuracy(role: str, n: int = 200) -> dict:
    from coevo.pretrain.criteria import criteria_diagnostics
    from coevo.backends.tiny import TinyPolicy

    pol = TinyPolicy.from_checkpoint(role, ASSETS / f"{role}.pt")
    return criteria_diagnostics(role, pol, n)["greedy_axis_accuracy"]


def test_shipped_student_per_axis_accuracy_is_pinned():
    info = json.loads((ASSETS / "pretrain_info.json").read_text())
    got = shipped_axis_accuracy("criteria_student")
    assert got == info["criteria_student"]["greedy_axis_accuracy"]
    assert got == PINNED_STUDENT
    assert got["all"] < 0.6 and min(got[a] for a in ("arithmetic", "units", "final")) < 0.9


# measured once (greedy, CPU, 200 held-out prompts); docs/criteria.md
PINNED_STUDENT = {"arithmetic": 0.4725, "units": 0.6567, "final": 0.39, "method": 0.8925, "all": 0.11}


@pytest.mark.parametrize("role", ["criteria_expert_units", "criteria_expert_arith"])
def test_expert_assets_exist_with_their_strengths(role):
    info = json.loads((ASSETS / "pretrain_info.json").read_text())[role]["greedy_axis_accuracy"]
    strong = "units" if role.endswith("units") else "arithmetic"
    weak = "arithmetic" if strong == "units" else "units"
    assert info[strong] > info[weak]
    assert (ASSETS / f"{role}.pt" / "model.safetensors").is_file()


def test_pairs_expose_what_a_recipe_needs():
    w = CriteriaWorld()
    t = w.task_of(P)
    pairs = w.verifier_pairs(t, P.solution)
    assert [(p.criterion_id, p.kind, p.locate, p.weight, p.axis) for p in pairs][:2] == [
        ("dist", "numeric_unit", "step:1", 1.0, "arithmetic"), ("setup", "sympy_equiv", "expr:1", 0.5, "method")]
    ref = json.loads(pairs[0].reference)
    assert ref["spec"] == {"value": 56, "unit": "km"} and ref["id"] == "dist" and ref["key"] == t.task_id
    assert sum(c.weight < 0 for c in w.criteria(t)) == 1
    assert {c.kind for c in CriteriaWorld(judge={"base_url": "http://127.0.0.1:9", "model": "m"}).criteria(t)} >= {
        "llm_judge"}
    assert all(truth_of(c, P.solution) == (c.weight > 0) for c in w.criteria(t))
    assert list(itertools.islice(w.axes, 2)) == ["arithmetic", "units"]


@pytest.mark.parametrize("role", ["criteria_student", "criteria_expert_units", "criteria_expert_arith"])
def test_shipped_criteria_assets_match_recorded_digest(role):
    from coevo.pretrain import state_digest
    from coevo.backends.tiny import TinyPolicy

    info = json.loads((ASSETS / "pretrain_info.json").read_text())
    assert state_digest(TinyPolicy.from_checkpoint(role, ASSETS / f"{role}.pt")) == info[role]["sha256_state"]


def test_pretraining_is_deterministic_and_roles_expand():
    import torch

    from coevo.pretrain import PretrainError, pretrain_roles, state_digest
    from coevo.pretrain.criteria import expand_roles, train_criteria_role

    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = (state_digest(train_criteria_role("criteria_student", steps=3)) for _ in range(2))
    finally:
        torch.set_num_threads(prev)
    assert a == b
    assert expand_roles("criteria_experts") == ("criteria_expert_units", "criteria_expert_arith")
    assert expand_roles("criteria") == ("criteria_student", "criteria_expert_units", "criteria_expert_arith")
    with pytest.raises(PretrainError, match="unknown role 'criteria_teacher'"):
        pretrain_roles("criteria_teacher", Path("/nonexistent"))


def test_probe_answers():
    w = CriteriaWorld(eval_n=2)
    a, b = w.eval_set()
    pr = w.probe_answers(a, b)
    rows = w.scorer().score([(w.entry(a), pr[k]) for k in ("own", "mismatched", "vacuous")])
    values = [[v.value for v in row] for row in rows]
    assert values[0] == [1, 1, 1, 1, 1, 1, 0, 1]
    assert 1 not in values[2] and None in values[2]  # the vacuous template: no credit, steps unparsable
    assert sum(values[1][:4]) < 4


def test_real_llm_judge_path_through_a_local_endpoint():
    """With ``judge`` options the order criterion is an llm_judge through coevo.verify.judge:
    a local chat-completions endpoint answering yes for the reference, unknown otherwise."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body["messages"][0]["content"]
            word = "yes" if f"Candidate answer:\n{P.solution}" in prompt else "unknown"
            out = json.dumps({"choices": [{"message": {"content": word}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        w = CriteriaWorld(judge={"base_url": f"http://127.0.0.1:{srv.server_port}/v1", "model": "m", "retries": 0,
                                 "timeout_s": 10})
        t = w.task_of(P)
        rows = w.scorer().score([(w.entry(t), P.solution), (w.entry(t), perturbed_solution(P, ("sum",)))])
    finally:
        srv.shutdown()
        srv.server_close()
    order = [next(v for v in row if v.criterion_id == "order") for row in rows]
    assert (order[0].kind, order[0].value) == ("llm_judge", 1)
    assert (order[1].value, order[1].reason) == (None, "judge-unknown")
    assert w.oracle_verdict(t, "order", P.solution) == 1


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_pretrain_regenerates_the_shipped_criteria_policies(tmp_path):
    """``coevo pretrain --role criteria`` (about 3 CPU minutes in all): same digests and
    per-axis accuracies as the shipped files; the digests bit for bit where the entry names this build
    (docs/arithmetic.md, "Rebuilding the assets")."""
    from coevo.pretrain import pretrain_roles, same_build

    info = json.loads((ASSETS / "pretrain_info.json").read_text())
    out = pretrain_roles("criteria", tmp_path, quiet=True)
    roles = {"criteria_student", "criteria_expert_units", "criteria_expert_arith"}
    assert set(out) == roles  # an empty or partial result is a failure, not a vacuous pass
    assert roles == {r for r, e in info.items() if "greedy_axis_accuracy" in e}  # the shipped criteria policies
    for role in sorted(roles):
        entry = out[role]
        if same_build(info[role]):
            assert entry["sha256_state"] == info[role]["sha256_state"], role
        assert entry["greedy_axis_accuracy"] and entry["greedy_axis_accuracy"] == info[role]["greedy_axis_accuracy"], role
        assert (tmp_path / f"{role}.pt" / "model.safetensors").is_file(), role
    assert set(json.loads((tmp_path / "pretrain_info.json").read_text())) == roles
