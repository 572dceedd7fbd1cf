"""FlashRAG-format loaders (malformed lines), the wiki-18 corpus loader, the Search-R1 agent world,
and an end-to-end QA eval on the shipped NQ sample with a scripted policy whose answers are known."""
import json
import re

import pytest
from typer.testing import CliRunner

from coevo.core.policy import Completion, SamplingParams
from coevo.cli import app
from coevo.qa.agent import INVALID_ACTION, SearchQAWorld, extract_answer, search_r1_question
from coevo.qa.benchmarks import (SHIPPED_CORPUS, SHIPPED_DATA_DIR, BenchmarkError, benchmark_path, canonical_name,
                                 load_benchmark, load_qa_file, parse_benchmark_list)
from coevo.qa.evaluate import benchmark_means, evaluate_qa
from coevo.retrieval.bm25 import BM25Retriever
from coevo.retrieval.corpus import CorpusError, load_corpus
from coevo.core.world import ANSWER, Task


# ---------------------------------------------------------------------------- loaders
def test_shipped_nq_sample():
    load = load_benchmark("NQ")
    assert load.name == "nq" and len(load.examples) == 17 and load.malformed == []
    ex = load.examples[0]
    assert (ex.qid, ex.question, ex.golds) == ("test_0", "who got the first nobel prize in physics",
                                               ["Wilhelm Conrad R\u00f6ntgen"])
    assert load.examples[6].golds == ["Xiu Li Dai", "Dai Xiuli", "Dai Yongge", "Yongge Dai"]
    assert load.path == SHIPPED_DATA_DIR / "nq" / "test.jsonl"


def test_malformed_lines_reported_with_line_numbers(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text("\n".join([
        json.dumps({"id": "a", "question": "q1?", "golden_answers": ["A"]}),
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"id": "b", "golden_answers": ["B"]}),
        "",
        json.dumps({"id": "c", "question": "q3", "golden_answers": []}),
        json.dumps({"question": "q4", "golden_answers": "D"}),  # a single string gold is accepted
    ]) + "\n")
    load = load_qa_file(f, "bamboogle")
    assert [e.qid for e in load.examples] == ["a", "bamboogle_7"] and load.examples[1].golds == ["D"]
    assert [n for n, _ in load.malformed] == [2, 3, 4, 6]
    assert "not JSON" in load.malformed[0][1] and "question" in load.malformed[2][1]
    assert load.summary()["malformed"] == 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    with pytest.raises(BenchmarkError, match="first malformed line 1"):
        load_qa_file(bad)


def test_names_layout_and_splits(tmp_path):
    assert canonical_name("2WikiMQA") == "2wikimultihopqa"
    assert parse_benchmark_list("nq, hotpotqa,nq") == ["nq", "hotpotqa"] and len(parse_benchmark_list("all")) == 7
    with pytest.raises(BenchmarkError, match="unknown benchmark 'squad'"):
        canonical_name("squad")
    (tmp_path / "hotpotqa").mkdir()
    (tmp_path / "hotpotqa" / "dev.jsonl").write_text(json.dumps({"question": "q", "golden_answers": ["a"]}) + "\n")
    (tmp_path / "hotpotqa" / "train.jsonl").write_text("")
    assert benchmark_path("hotpotqa", tmp_path).name == "dev.jsonl"  # Search-R1: dev for HotpotQA
    with pytest.raises(BenchmarkError, match="no file found"):
        benchmark_path("musique", tmp_path)


def test_corpus_loader(tmp_path):
    load = load_corpus(SHIPPED_CORPUS)
    assert len(load.passages) == 1000 and load.malformed == [] and load.lines == 1000
    p = load.passages[0]
    assert (p.pid, p.title, p.source) == ("0", "Evan Morris", "Evan Morris") and p.text.startswith("Evan Morris Evan L.")
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join([
        json.dumps({"id": "1", "contents": '"T1"\nline a\nline b', "url": "u1"}),
        json.dumps({"id": "1", "contents": '"T1"\nagain'}),
        "[1]",
        json.dumps({"contents": '"T2"\nx'}),
        json.dumps({"id": "3", "title": "T3", "text": "plain"}),
        json.dumps({"id": "4", "nothing": 1}),
    ]) + "\n")
    load = load_corpus(f)
    assert [(p.pid, p.title, p.text) for p in load.passages] == [("1", "T1", "line a\nline b"), ("3", "T3", "plain")]
    assert [n for n, _ in load.malformed] == [2, 3, 4, 6] and "duplicate id" in load.malformed[0][1]
    assert load_corpus(f, source_field="id").passages[1].source == "3"
    with pytest.raises(CorpusError, match="not found"):
        load_corpus(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------------------- agent world
def test_search_r1_world_hooks():
    bm = BM25Retriever(load_corpus(SHIPPED_CORPUS).passages[:50])
    w = SearchQAWorld(bm, topk=2)
    t = Task("t", "who was a lobbyist for Genentech", "Evan Morris")
    prompt = w.solver_prompt(t)
    assert prompt.startswith("Answer the given question. You must conduct reasoning inside <think>")
    assert prompt.endswith("Question: who was a lobbyist for Genentech?\n") and search_r1_question("a?") == "a?"
    obs = w.run_tool(t, "<think>x</think>\n<search> Genentech lobbyist </search>")
    # the title is the corpus contents' first line, quotes kept, as Search-R1's _passages2string
    assert obs.startswith("\n\n<information>Doc 1(Title: \"Evan Morris\") ") and obs.endswith("</information>\n\n")
    assert obs.count("Doc ") == 2 and w.queries == ["Genentech lobbyist"]
    assert w.run_tool(t, "<search>  </search>") == INVALID_ACTION
    t.meta["retrieve_sources"] = {"Horatio Hale"}
    assert "(Title: \"Horatio Hale\")" in w.run_tool(t, "<search> Genentech lobbyist </search>")
    assert extract_answer("<answer> a </answer> then <answer>b</answer>") == "b" and extract_answer("none") is None
    assert w.tool_stops(ANSWER) == ["</search>"] and w.response_format(ANSWER).stop == ("</answer>",)
    assert w.equivalent("the evan morris", '["Evan Morris"]')


# ---------------------------------------------------------------------------- end to end
class ScriptedSearchPolicy:
    """Turn 1 searches for the question; turn 2 answers from a table (or writes no answer tag)."""

    def __init__(self, answers: dict):
        self.answers = answers
        self.calls = 0

    def tokenize(self, text):
        return [ord(ch) for ch in text]

    def _completion(self, prompt, text, stop):
        ids = self.tokenize(text + (stop or ""))
        return Completion(prompt=prompt, text=text, prompt_ids=self.tokenize(prompt), token_ids=ids,
                          logprobs=[-0.1] * len(ids), finish_reason="stop", meta={"stop": stop} if stop else {})

    def sample(self, prompts, n, sampling, token_prefixes=None):
        self.calls += 1
        out = []
        for j, p in enumerate(prompts):
            q = re.search(r"Question: (.*)\?\n$", p).group(1)
            if token_prefixes is None:
                c = self._completion(p, f"<think>I need to look it up.</think>\n<search> {q} ", "</search>")
            else:
                assert "<information>Doc 1(Title: " in "".join(map(chr, token_prefixes[j]))
                a = self.answers.get(q)
                c = (self._completion(p, "I cannot tell.", None) if a is None
                     else self._completion(p, f"<answer> {a} ", "</answer>"))
            out.append([c] * n)
        return out


NQ_ANSWERS = {
    "who got the first nobel prize in physics": "Wilhelm Conrad R\u00f6ntgen",  # EM 1, Cover 1
    "when is the next deadpool movie being released": "It was May 18, 2018",  # EM 0, Cover 1
    "which mode is used for short wave broadcast service": "the MFSK",  # EM 1 (article dropped)
    "the south west wind blows across nigeria between": "London",  # 0, 0
}
BAMBOO = [("Who wrote Hamlet", ["William Shakespeare", "Shakespeare"], "shakespeare"),  # 1, 1
          ("Capital of France", ["Paris"], "Paris, France"),  # 0, 1
          ("Largest planet", ["Jupiter"], "Saturn")]  # 0, 0


def test_benchmark_means_hand_values():
    per = {"a": {"questions": 10, "em": 0.5, "cover_em": 0.6}, "b": {"questions": 30, "em": 0.1, "cover_em": 0.2},
           "c": {"questions": 0, "em": 0.0, "cover_em": 0.0}}
    m = benchmark_means(per)
    assert m["mean_em"] == pytest.approx(0.3) and m["weighted_em"] == pytest.approx((5 + 3) / 40)
    assert m["mean_cover_em"] == pytest.approx(0.4) and m["weighted_cover_em"] == pytest.approx((6 + 6) / 40)
    assert benchmark_means({}) == {}


def test_end_to_end_eval_on_shipped_sample(tmp_path):
    (tmp_path / "bamboogle").mkdir()
    lines = [json.dumps({"id": f"b{i}", "question": q, "golden_answers": g}) for i, (q, g, _) in enumerate(BAMBOO)]
    (tmp_path / "bamboogle" / "test.jsonl").write_text("\n".join(lines[:2] + ["{broken"] + lines[2:]) + "\n")
    loads = [load_benchmark("nq"), load_benchmark("bamboogle", tmp_path)]
    answers = {**NQ_ANSWERS, **{q: a for q, _, a in BAMBOO}}
    pol = ScriptedSearchPolicy(answers)
    world = SearchQAWorld(BM25Retriever(load_corpus(SHIPPED_CORPUS).passages), topk=3)
    res = evaluate_qa(pol, world, loads, SamplingParams(greedy=True, max_new_tokens=64), max_turns=4,
                      batch_size=8, keep_samples=True)
    nq, bb = res["benchmarks"]["nq"], res["benchmarks"]["bamboogle"]
    assert (nq["questions"], nq["em"], nq["cover_em"], nq["no_answer"]) == (17, 2 / 17, 3 / 17, 13)
    assert (bb["questions"], bb["em"], bb["cover_em"], bb["malformed"]) == (3, 1 / 3, 2 / 3, 1)
    assert bb["malformed_lines"] == [{"line": 3, "reason": bb["malformed_lines"][0]["reason"]}]
    assert res["mean_em"] == pytest.approx((2 / 17 + 1 / 3) / 2)
    assert res["weighted_em"] == pytest.approx(3 / 20) and res["weighted_cover_em"] == pytest.approx(5 / 20)
    assert res["mean_cover_em"] == pytest.approx((3 / 17 + 2 / 3) / 2) and res["questions"] == 20
    assert nq["mean_tool_calls"] == 1.0 and len(world.queries) == 20
    assert res["verifier"] == {"kind": "em", "version": "em-1"}
    row = res["samples"]["nq"][1]
    assert (row["answer"], row["em"], row["cover_em"]) == ("It was May 18, 2018", 0, 1)
    assert res["samples"]["nq"][4]["reason"] == "no-answer"


def test_cli_errors_are_one_line(tmp_path):
    r = CliRunner()
    res = r.invoke(app, ["eval-qa", "--benchmark", "squad"])
    assert res.exit_code == 2 and "unknown benchmark" in res.output
    res = r.invoke(app, ["eval-qa", "--benchmark", "nq", "--data-dir", str(tmp_path)])
    assert res.exit_code == 2 and "no file found" in res.output
    res = r.invoke(app, ["eval-qa", "--corpus", str(tmp_path / "none.jsonl")])
    assert res.exit_code == 2 and "corpus file not found" in res.output
    res = r.invoke(app, ["eval-qa", "--retriever-url", "localhost:1"])
    assert res.exit_code == 2 and "retriever URL must be" in res.output
