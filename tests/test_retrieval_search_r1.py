"""`coevo serve-retriever` against Search-R1 (PeterGriffinJin/Search-R1 @ a14dc3a): its client's
request, its BM25 settings (pyserini: k1 0.9, b 0.4, Porter stemming as Lucene's), and the 422
answers of its FastAPI app, pinned as fastapi 0.163.2 / pydantic 2.14.4 gave them for its
``QueryRequest`` model (search_r1/search/retrieval_server.py)."""
import json
from pathlib import Path

import httpx
import pytest
import requests

from coevo.qa.benchmarks import SHIPPED_CORPUS
from coevo.retrieval.analysis import lucene_english_tokens, porter_stem
from coevo.retrieval.base import Passage, format_passages
from coevo.retrieval.bm25 import BM25_SETTINGS, search_r1_bm25
from coevo.retrieval.corpus import load_corpus
from coevo.retrieval.server import RetrievalServer
from test_searchr1_client import SearchR1Generation

LUCENE_PORTER = Path(__file__).parent / "fixtures" / "lucene" / "porter.tsv"


@pytest.fixture(scope="module")
def passages():
    return load_corpus(SHIPPED_CORPUS).passages


@pytest.fixture(scope="module")
def server(passages):
    r = search_r1_bm25(passages)
    with RetrievalServer(r, topk=3, health={"bm25": "search-r1", "passages": len(r)}) as srv:
        yield srv, r


def test_porter_stem_is_lucenes():
    rows = [ln.split("\t") for ln in LUCENE_PORTER.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    assert len(rows) == 400
    assert [w for w, stem in rows if porter_stem(w) != stem] == []
    # where Snowball's "porter" (PyStemmer) and NLTK's default mode part from Lucene's
    assert [porter_stem(w) for w in ("analogy", "as", "abbey", "aged", "additionally")] == \
        ["analog", "as", "abbei", "ag", "addition"]


def test_lucene_english_tokens():
    text = "The U.S. Army's 1,000 soldiers don't run; Running is 3.14 times as fast."
    assert lucene_english_tokens(text) == ["u.", "armi", "1,000", "soldier", "don't", "run", "run", "3.14",
                                           "time", "fast"]


def test_search_r1_bm25_hand_computed():
    # terms: d0 [cat, run], d1 [cat], d2 [dog, run, fast]; avgdl 2; idf = ln(1 + 1.5/2.5) = ln 1.6
    # score = idf * tf / (tf + 0.9 * (0.6 + 0.4 * dl / 2)): d0 2 ln1.6/1.9, d1 ln1.6/1.72, d2 ln1.6/2.08
    ps = [Passage("0", "a", "cats run"), Passage("1", "b", "cat"), Passage("2", "c", "dog runs fast")]
    r = search_r1_bm25(ps)
    assert (r.k1, r.b) == (0.9, 0.4)
    got = [(p.pid, p.score) for p in r.search(["running cats"], 3)[0]]
    assert [pid for pid, _ in got] == ["0", "1", "2"]
    assert [s for _, s in got] == pytest.approx([0.494741, 0.273258, 0.225963], abs=2e-6)
    assert r.search(["zebra"], 3) == [[]]  # only hits, as a Lucene index


def test_rankings_differ_from_bm25s_defaults(passages):
    q = ["ethnologists of the exploring expeditions"]
    assert [p.pid for p in BM25_SETTINGS["search-r1"](passages).search(q, 3)[0]] == ["1", "673", "203"]
    assert [p.pid for p in BM25_SETTINGS["bm25s"](passages).search(q, 3)[0]] == ["1", "206"]  # no stemming


def test_search_r1_client(server):
    srv, r = server
    queries = ["who was a lobbyist for Genentech", "Portuguese forts built by the Habsburgs", "zzzz qqqq"]
    # Search-R1's agent code as it stands (search_r1/llm_agent/generation.py @ a14dc3a: _batch_search,
    # _passages2string), kept verbatim in tests/test_searchr1_client.py
    theirs = SearchR1Generation(srv.url + "/retrieve", topk=3).batch_search(queries)
    assert theirs == [format_passages(hs) for hs in r.search(queries, 3)]
    assert theirs[0].startswith('Doc 1(Title: "Evan Morris") Evan Morris Evan L. Morris') and theirs[2] == ""
    # search_r1/search/retrieval_request.py: the same payload, raise_for_status, the scores
    response = requests.post(srv.url + "/retrieve", json={"queries": queries, "topk": 5, "return_scores": True})
    response.raise_for_status()
    scores = [[d["score"] for d in res] for res in response.json()["result"]]
    assert scores == [[p.score for p in hs] for hs in r.search(queries, 5)] and len(scores[1]) == 5


# (body, FastAPI's 422 detail) as fastapi 0.163.2 answered for Search-R1's QueryRequest
FASTAPI_422 = [
    ({"queries": "q"}, [{"type": "list_type", "loc": ["body", "queries"], "msg": "Input should be a valid list",
                         "input": "q"}]),
    ({"queries": [1]}, [{"type": "string_type", "loc": ["body", "queries", 0], "msg": "Input should be a valid string",
                         "input": 1}]),
    ({"queries": ["a"], "return_scores": "maybe"}, [{"type": "bool_parsing", "loc": ["body", "return_scores"], "msg":
      "Input should be a valid boolean, unable to interpret input", "input": "maybe"}]),
    ({"queries": ["a"], "return_scores": 2}, [{"type": "bool_parsing", "loc": ["body", "return_scores"], "msg":
      "Input should be a valid boolean, unable to interpret input", "input": 2}]),
    ({"queries": ["a"], "return_scores": None}, [{"type": "bool_type", "loc": ["body", "return_scores"],
                                                   "msg": "Input should be a valid boolean", "input": None}]),
    ({"queries": ["a"], "topk": 0.5}, [{"type": "int_from_float", "loc": ["body", "topk"], "msg":
      "Input should be a valid integer, got a number with a fractional part", "input": 0.5}]),
    ({}, [{"type": "missing", "loc": ["body", "queries"], "msg": "Field required", "input": {}}]),
    ([], [{"type": "model_attributes_type", "loc": ["body"], "msg":
           "Input should be a valid dictionary or object to extract fields from", "input": []}]),
    ({"queries": ["a", None], "topk": "x"}, [
        {"type": "string_type", "loc": ["body", "queries", 1], "msg": "Input should be a valid string", "input": None},
        {"type": "int_parsing", "loc": ["body", "topk"], "msg":
         "Input should be a valid integer, unable to parse string as an integer", "input": "x"}]),
]
FASTAPI_422_RAW = [
    (b"", [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]),
    (b"null", [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}]),
    (b" ", [{"type": "json_invalid", "loc": ["body", 1], "msg": "JSON decode error", "input": {},
             "ctx": {"error": "Expecting value"}}]),
    (b"{bad", [{"type": "json_invalid", "loc": ["body", 1], "msg": "JSON decode error", "input": {},
                "ctx": {"error": "Expecting property name enclosed in double quotes"}}]),
    (b"[1,", [{"type": "json_invalid", "loc": ["body", 3], "msg": "JSON decode error", "input": {},
               "ctx": {"error": "Expecting value"}}]),
]


def test_fastapi_422_shape(server):
    url = server[0].url
    with httpx.Client(timeout=10, trust_env=False) as c:
        for body, detail in FASTAPI_422:
            res = c.post(url + "/retrieve", json=body)
            assert (res.status_code, res.json()) == (422, {"detail": detail}), body
        for raw, detail in FASTAPI_422_RAW:
            res = c.post(url + "/retrieve", content=raw, headers={"content-type": "application/json"})
            assert (res.status_code, res.json()) == (422, {"detail": detail}), raw
        neg = c.post(url + "/retrieve", json={"queries": ["a"], "topk": -1}).json()["detail"]  # coevo: 422, not 500
        assert neg[0]["type"] == "greater_than_equal" and neg[0]["loc"] == ["body", "topk"]
        assert c.post(url + "/retrieve", json={"queries": ["a"], "sources": 3}).status_code == 422
        got = c.get(url + "/retrieve")
        assert (got.status_code, got.json(), got.headers["allow"]) == (405, {"detail": "Method Not Allowed"}, "POST")
        assert (c.post(url + "/other", json={}).status_code, c.post(url + "/other", json={}).json()) == \
            (404, {"detail": "Not Found"})


def test_return_scores_and_topk_read_as_fastapi(server):
    url = server[0].url + "/retrieve"
    q = ["Portuguese forts built by the Habsburgs"]
    with httpx.Client(timeout=10, trust_env=False) as c:
        def ask(**kw):
            res = c.post(url, json={"queries": q, **kw})
            assert res.status_code == 200, res.text
            return res.json()["result"][0]
        plain = ask(return_scores="false")
        assert len(plain) == 3 and "score" not in plain[0] and plain[0]["id"] == "2"  # "false" is false
        for truthy in (True, "true", 1, "yes"):
            assert set(ask(return_scores=truthy)[0]) == {"document", "score"}
        for falsy in (False, "0", 0, "off"):
            assert "contents" in ask(return_scores=falsy)[0]
        assert len(ask(topk="2")) == 2 and len(ask(topk=2.0)) == 2 and len(ask(topk=0)) == 3  # 0 -> default
        assert ask(topk=1, return_scores=True)[0]["document"] == plain[0]


def test_health(server):
    res = httpx.get(server[0].url + "/health", timeout=10)
    assert (res.status_code, res.json()) == (200, {"status": "ok", "bm25": "search-r1", "passages": 1000})
    assert json.loads(httpx.post(server[0].url + "/health", timeout=10).text) == {"detail": "Method Not Allowed"}
