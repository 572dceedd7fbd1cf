"""The facts world (issue #11): generator, planted misreadings, oracle, search tool, the
multi-turn protocol with the shipped tiny facts_solver, and its pinned held-out accuracy."""
import json
from pathlib import Path

import pytest

from coevo.core.policy import SamplingParams
from coevo.backends.tokenizer import BASE_VOCAB, FULL_VOCAB, CharTokenizer
from coevo.worlds import world_class
from coevo.core.world import QUESTION, Task
from coevo.worlds.facts import FactsWorld

ASSETS = Path(__file__).resolve().parents[1] / "coevo" / "assets"
WORLD = FactsWorld()
TEXT = FactsWorld(surface="text", n_sources=60, misread_rate=0.25)


def _chain_task(world, ctx):
    chain = [world.enc.by_pid[p] for p in ctx.chain]
    return world.parse_task(world.proposal_of_chain(chain), "t", ctx).task


# ---------------------------------------------------------------------------- generator
def test_registered_and_deterministic():
    assert world_class("facts") is FactsWorld
    a, b = FactsWorld(seed=3), FactsWorld(seed=3)
    assert a.passages() == b.passages() and a.misread_sources() == b.misread_sources()
    assert a.enc.table == b.enc.table
    assert a.proposer_prompts(5, 1) == b.proposer_prompts(5, 1)
    assert FactsWorld(seed=4).passages() != a.passages()
    assert [t.question for t in a.eval_set()] == [t.question for t in b.eval_set()]


def test_every_fact_in_two_sources_and_complete_table():
    enc = WORLD.enc
    assert len(enc.table) == WORLD.n_entities * WORLD.n_relations
    for fact, sts in enc.by_fact.items():
        assert len({st.source for st in sts}) >= 2, fact
        assert len({st.wording for st in sts}) == len(sts)  # one wording per statement
        assert sum(st.obj == enc.table[fact] for st in sts) >= 1  # at least one true statement


def test_misread_sources_differ_only_in_their_planted_fact():
    enc = WORLD.enc
    assert len(WORLD.misread_sources()) == round(0.3 * WORLD.n_sources)
    for st in enc.statements:
        planted = enc.planted.get(st.source)
        if planted and (st.subject, st.relation) == planted[:2]:
            assert st.misread and st.obj == planted[2] != enc.table[(st.subject, st.relation)]
        else:
            assert not st.misread and st.obj == enc.table[(st.subject, st.relation)]
    facts = [p[:2] for p in enc.planted.values()]
    assert len(set(facts)) == len(facts)  # one source per planted fact


def test_misread_rate_zero_plants_nothing():
    w = FactsWorld(misread_rate=0.0)
    assert w.misread_sources() == set()
    assert all(st.obj == w.enc.table[(st.subject, st.relation)] for st in w.enc.statements)
    for ctx in w.proposer_contexts(100, 0):  # every draft is then true
        t = _chain_task(w, ctx)
        assert t.reference == w.oracle(t)


def test_from_config_reads_options():
    from types import SimpleNamespace

    def cfg(**opts):
        return SimpleNamespace(world=SimpleNamespace(name="facts", options=opts, eval_seed=7))

    w = FactsWorld.from_config(cfg(misread_rate=0, topk=3, hop_ratio=[1, 1, 1, 1]))
    assert w.misread_rate == 0 and w.topk == 3 and not w.misread_sources() and w.eval_seed == 7
    with pytest.raises(ValueError, match="bogus"):
        FactsWorld.from_config(cfg(bogus=1))
    with pytest.raises(ValueError, match="surface"):
        FactsWorld.from_config(cfg(surface="pdf"))


# ---------------------------------------------------------------------------- questions and oracle
def test_hop_ratio_and_proposer_contexts():
    ctxs = WORLD.proposer_contexts(2000, 0)
    counts = [sum(c.hops == h for c in ctxs) for h in (1, 2, 3, 4)]
    assert counts[0] > counts[1] > counts[2] > counts[3] > 100  # 4:3:2:1
    c = ctxs[0]
    assert c.passage_id in {p.pid for p in WORLD.passages() if p.source == c.source_id}
    assert c.prompt.startswith(f"<propose>{c.hops};")


def test_parse_task_and_oracle():
    ctx = WORLD.proposer_contexts(1, 5)[0]
    t = _chain_task(WORLD, ctx)
    assert t.meta == {"source_id": ctx.source_id, "passage_id": ctx.passage_id, "hops": ctx.hops,
                      "difficulty": f"hop{ctx.hops}", "requested_hops": ctx.hops}
    q = Task("x", "e04r1 x r2 y")
    assert WORLD.oracle(q) == WORLD.render_entity(WORLD.enc.table[(WORLD.enc.table[(4, 1)], 2)])
    assert WORLD.oracle(Task("x", "e4r1 x")) is None and WORLD.oracle(Task("x", "hello")) is None
    assert WORLD.parse_task("<question>e04r1 x</question>", "t").reason == "no-answer"
    assert WORLD.parse_task("<question>zz</question><answer>e01</answer>", "t").reason == "unparsable"
    assert WORLD.extract_answer("<search>a</search><answer> e05 </answer>") == "e05"
    assert WORLD.extract_answer("<answer>e05") == "e05" and WORLD.extract_answer("e05") is None
    assert WORLD.equivalent("The  E05.", "e05") and not WORLD.equivalent("e05", "e06")


def test_eval_set_stratified_and_resolved_by_oracle():
    ev = WORLD.eval_set()
    for h in (1, 2, 3, 4):
        sub = [t for t in ev if t.meta["difficulty"] == f"hop{h}"]
        assert len(sub) == WORLD.eval_per_hop
        assert all(len(WORLD.parse_chain(t.question)[1]) == h for t in sub)
    assert all(t.reference is not None and t.reference == WORLD.oracle(t) for t in ev)
    assert all(WORLD.extract_answer(WORLD.demonstration(t)) == t.reference for t in ev)  # correct wordings


def test_text_surface_questions_parse_back():
    for ctx in TEXT.proposer_contexts(50, 2):
        t = _chain_task(TEXT, ctx)
        assert TEXT.parse_chain(t.question)[0] == TEXT.enc.by_pid[ctx.chain[0]].subject
        assert TEXT.oracle(t) == TEXT.enc.names[TEXT.enc.resolve(*_start_rels(TEXT, t))]
    assert "Answer the given question." in TEXT.solver_prompt(t) and "<search> query </search>" in TEXT.solver_prompt(t)
    assert TEXT.tool_stops(QUESTION) == ["</search>"] and WORLD.tool_stops(QUESTION) == []
    obs = TEXT.run_tool(t, "<think>x</think><search> tutor of someone </search>")
    assert obs.startswith("\n\n<information>Doc 1(Title: ") and obs.endswith("</information>\n\n")
    assert TEXT.oracle(Task("x", "Who is the tutor of Nobody Known?")) is None


def _start_rels(world, t):
    start, hops = world.parse_chain(t.question)
    return start, [r for r, _ in hops]


# ---------------------------------------------------------------------------- the misreading mechanism
def test_planted_misreading_is_shared_and_fold_filter_recovers_truth():
    """A question worded after a misread passage: the unrestricted search ranks that passage
    first (a reader agrees with the wrong draft); excluding its source ranks a true one first."""
    shared = recovered = 0
    for ctx in WORLD.proposer_contexts(3000, 11):
        chain = [WORLD.enc.by_pid[p] for p in ctx.chain]
        if not chain[0].misread:
            continue
        t = _chain_task(WORLD, ctx)
        if ctx.hops == 1:  # (a longer chain may meet the true path again by chance)
            assert t.reference != WORLD.oracle(t)
        shared += WORLD.extract_answer(WORLD.demonstration(t)) == t.reference
        first = WORLD.search([WORLD.hop_query(chain[0].subject, (chain[0].relation, chain[0].wording))],
                             sources=set(WORLD.sources()) - {ctx.source_id})[0][0]
        recovered += WORLD.read_object(first) == WORLD.enc.table[(chain[0].subject, chain[0].relation)]
    assert shared > 20 and recovered == shared


def test_misread_shared_replicates_each_planted_fact_in_every_source():
    """The control world (issue #30): the same facts are planted (no extra draw), but every statement of a planted
    fact carries its wrong value, so no source holds the truth; the held-out set still has only true chains."""
    w0, w = FactsWorld(seed=5, misread_rate=0.8), FactsWorld(seed=5, misread_rate=0.8, misread_shared=True)
    assert w.enc.planted == w0.enc.planted and w.enc.table == w0.enc.table
    for fact, (s, r, o) in ((p[:2], p) for p in w.enc.planted.values()):
        assert all(st.misread and st.obj == o != w.enc.table[fact] for st in w.enc.by_fact[fact])
    planted = {p[:2] for p in w.enc.planted.values()}
    assert all(not st.misread for st in w.enc.statements if (st.subject, st.relation) not in planted)
    assert w.misread_sources() > w0.misread_sources()
    assert [t.question for t in w0.eval_set()] != [] and all(t.reference == w.oracle(t) for t in w.eval_set())
    for t in w.eval_set():  # every hop of a held-out chain is a fact some source states truly
        start, hops = w.parse_chain(t.question)
        for r, _ in hops:
            assert (start, r) not in planted
            start = w.enc.table[(start, r)]


@pytest.mark.parametrize("shared", [False, True])
def test_one_hop_wrong_value_unreachable_without_its_source_unless_shared(shared):
    """The structure behind source-id FF (issue #30): with at most one misreading per fact and every fact in >= 2
    sources, a search that excludes a misread 1-hop question's source never returns the wrong value, so a
    source-id scorer can only agree with a wrong label through a later hop; in the misread_shared world it can."""
    w = FactsWorld(seed=1, misread_rate=0.8, misread_shared=shared)
    reached = n = 0
    for ctx in w.proposer_contexts(600, 3):
        chain = [w.enc.by_pid[p] for p in ctx.chain]
        if ctx.hops != 1 or not chain[0].misread:
            continue
        n += 1
        st = chain[0]
        hits = w.search([w.hop_query(st.subject, (st.relation, st.wording))], k=10,
                        sources=set(w.sources()) - {ctx.source_id})[0]
        reached += any(w.enc.by_pid[h.pid].obj == st.obj and (w.enc.by_pid[h.pid].subject, w.enc.by_pid[h.pid].relation)
                       == (st.subject, st.relation) for h in hits)
    assert n > 20
    assert (reached == n) if shared else (reached == 0)


def test_run_tool_top_k_and_source_restriction():
    st = WORLD.enc.statements[0]
    q = WORLD.hop_query(st.subject, (st.relation, st.wording))
    t = Task("x", q)
    obs = WORLD.run_tool(t, f"<solve>{q}<search>{q}</search>")
    hits = obs[len("<information>"):-len("</information>")].split(";")
    assert len(hits) == WORLD.topk == 2 and hits[0] == WORLD._passages_by_pid()[st.pid].text
    t.meta["retrieve_sources"] = [st.source]
    obs = WORLD.run_tool(t, f"<search>{q}</search>")
    allowed = {WORLD._passages_by_pid()[s.pid].text for s in WORLD.enc.by_source[st.source]}
    assert set(obs[len("<information>"):-len("</information>")].split(";")) <= allowed
    assert WORLD.run_tool(t, "<search></search>") == "<information></information>"
    assert WORLD.run_tool(t, "<answer>e01") is None


# ---------------------------------------------------------------------------- tokenizer
def test_tokenizer_append_only():
    old, new = CharTokenizer(), CharTokenizer(FULL_VOCAB)
    assert old.vocab_size == BASE_VOCAB == 31 and new.itos[:31] == old.itos
    assert old.encode("<solve>1+2=<search>e") == new.encode("<solve>1+2=")[:5] + [old.unk_id] * 9
    trace = WORLD.solver_prompt(WORLD.eval_set()[-1]) + WORLD.demonstration(WORLD.eval_set()[-1])
    ids = new.encode(trace)
    assert new.unk_id not in ids and new.decode(ids) == trace and max(ids) < FULL_VOCAB


# ---------------------------------------------------------------------------- the shipped tiny agents
def _solver():
    from coevo.backends.tiny import TinyPolicy

    return TinyPolicy.from_checkpoint("facts_solver", ASSETS / "facts_solver.pt", seed=0)


def test_multiturn_rollout_masks_information_tokens():
    from coevo.stages.rollout import solve_multiturn

    pol = _solver()
    tasks = [t for t in WORLD.eval_set() if t.meta["hops"] == 2][:4]
    outs = solve_multiturn(pol, WORLD, tasks, 2, SamplingParams(temperature=1.0, max_new_tokens=24),
                           max_turns=WORLD.max_turns)
    assert len(tasks) == 4 and [len(g) for g in outs] == [2] * 4  # 8 completions: the loop below cannot be empty
    for c in (c for g in outs for c in g):
        assert c.meta["tool_calls"] >= 1 and c.text.startswith("<search>")
        kinds = [s.kind for s in c.segments]
        assert "env" in kinds and kinds.count("env") < len(kinds)  # an observation and the policy's own tokens
        pos = 0
        for s in c.segments:
            m = c.token_mask[pos:pos + s.n_tokens]
            if s.kind == "env":
                assert s.text.startswith("<information>") and m == [0] * s.n_tokens
                assert c.logprobs[pos:pos + s.n_tokens] == [0.0] * s.n_tokens
            else:
                assert m == [1] * s.n_tokens
            pos += s.n_tokens
        assert pos == len(c.token_mask) == len(c.logprobs) > 0  # the segments cover every token


def test_pinned_solver_accuracy_per_hop():
    """Greedy held-out accuracy of the shipped facts_solver (pretrain_info.json records the
    same numbers at training time): a later change to the world, the retriever or the tiny
    backend that moves them is caught here."""
    from coevo.pretrain.facts import solver_accuracy_by_hop

    info = json.loads((ASSETS / "pretrain_info.json").read_text())["facts_solver"]
    acc = solver_accuracy_by_hop(_solver(), WORLD)
    assert acc == info["greedy_accuracy_by_hop"] == PINNED_SOLVER
    assert acc["hop1"] > acc["hop4"]


@pytest.mark.slow
def test_pinned_solver_accuracy_source_aware():
    from coevo.pretrain.facts import solver_accuracy_by_hop

    info = json.loads((ASSETS / "pretrain_info.json").read_text())["facts_solver"]
    acc = solver_accuracy_by_hop(_solver(), WORLD, source_aware=True)
    assert acc == info["greedy_accuracy_by_hop_source_aware"] == PINNED_SOURCE_AWARE


PINNED_SOLVER = {"hop1": 1.0, "hop2": 1.0, "hop3": 0.44, "hop4": 0.02}  # coevo/assets/facts_solver.pt
PINNED_SOURCE_AWARE = {"hop1": 1.0, "hop2": 0.98, "hop3": 0.78, "hop4": 0.02}


def test_shipped_proposer_writes_faithful_proposals():
    from coevo.pretrain.facts import proposer_accuracy
    from coevo.backends.tiny import TinyPolicy

    pol = TinyPolicy.from_checkpoint("facts_proposer", ASSETS / "facts_proposer.pt", seed=0)
    assert proposer_accuracy(pol, WORLD, n=40) == {"parsed": 1.0, "faithful": 1.0}


@pytest.mark.parametrize("seed", [1, 100])
def test_shipped_agents_read_other_worlds(seed):
    """The tiny assets were pretrained on world seed 0 (coevo.pretrain.facts.facts_world) but read the codes
    surface, not that world's facts: on other world seeds (the held-out evaluation worlds of issue #30) the
    proposer stays faithful and the solver keeps its 1-2-hop accuracy."""
    from coevo.backends.tiny import TinyPolicy
    from coevo.pretrain.facts import proposer_accuracy, solver_accuracy_by_hop

    w = FactsWorld(seed=seed, misread_rate=0.8, eval_per_hop=10)
    pol = TinyPolicy.from_checkpoint("facts_proposer", ASSETS / "facts_proposer.pt", seed=0)
    assert proposer_accuracy(pol, w, n=40) == {"parsed": 1.0, "faithful": 1.0}
    acc = solver_accuracy_by_hop(_solver(), w)
    assert acc["hop1"] == acc["hop2"] == 1.0 and acc["hop4"] <= 0.1


def test_pretraining_is_deterministic():
    import torch

    from coevo.pretrain import state_digest
    from coevo.pretrain.facts import train_facts_role

    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = (state_digest(train_facts_role("facts_solver", steps=3)) for _ in range(2))
    finally:
        torch.set_num_threads(prev)
    assert a == b
