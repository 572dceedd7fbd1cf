"""coevo against Search-R1's own client code (PeterGriffinJin/Search-R1,
``search_r1/llm_agent/generation.py``: ``_batch_search``, ``_passages2string`` and the
``<information>`` wrapping of ``execute_predictions``, reproduced below as they stand): the request
coevo's HTTPRetriever sends is Search-R1's; the text coevo shows the model is byte-identical to what
Search-R1 renders from the same server answer; BM25 in Search-R1 mode returns only real hits."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from coevo.qa.agent import SearchQAWorld, information_block
from coevo.qa.benchmarks import SHIPPED_CORPUS
from coevo.retrieval.base import format_passages
from coevo.retrieval.bm25 import BM25Retriever
from coevo.retrieval.corpus import load_corpus
from coevo.retrieval.http import HTTPRetriever
from coevo.retrieval.server import RetrievalServer
from coevo.core.world import Task


class SearchR1Generation:  # search_r1/llm_agent/generation.py (LLMGenerationManager), the three pieces verbatim
    def __init__(self, search_url, topk=3):
        self.search_url, self.topk = search_url, topk

    def batch_search(self, queries):
        results = self._batch_search(queries)['result']
        return [self._passages2string(result) for result in results]

    def _batch_search(self, queries):
        payload = {"queries": queries, "topk": self.topk, "return_scores": True}
        return requests.post(self.search_url, json=payload).json()

    def _passages2string(self, retrieval_result):
        format_reference = ''
        for idx, doc_item in enumerate(retrieval_result):
            content = doc_item['document']['contents']
            title = content.split("\n")[0]
            text = "\n".join(content.split("\n")[1:])
            format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"
        return format_reference


def observation(search_result: str) -> str:  # execute_predictions, the search branch
    return f'\n\n<information>{search_result.strip()}</information>\n\n'


# an e5/FAISS server's answer as retrieval_server.py builds it (return_scores): corpus rows of wiki-18
E5_ANSWER = {"result": [[
    {"document": {"id": "2031", "contents": '"Paris"\nParis is the capital and most populous city of France.'},
     "score": 0.873},
    {"document": {"id": "77", "contents": '"Paris (mythology)"\nParis, also known as Alexander,\nwas a prince.'},
     "score": 0.861}]]}


class Recorder:
    def __init__(self, answer):
        self.answer, self.bodies = answer, []
        rec = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                rec.bodies.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
                data = json.dumps(rec.answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}/retrieve"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_same_request_and_byte_exact_text_against_an_e5_answer():
    rec = Recorder(E5_ANSWER)
    try:
        theirs = SearchR1Generation(rec.url).batch_search(["capital of france"])[0]
        ours = HTTPRetriever(rec.url, timeout_s=10).search(["capital of france"], 3)[0]
    finally:
        rec.close()
    assert rec.bodies[0] == rec.bodies[1] == ("/retrieve", {"queries": ["capital of france"], "topk": 3,
                                                             "return_scores": True})
    assert format_passages(ours) == theirs
    assert theirs.startswith('Doc 1(Title: "Paris") Paris is the capital')  # the quotes of wiki-18's first line
    assert information_block(ours) == observation(theirs)
    assert [p.title for p in ours] == ["Paris", "Paris (mythology)"]  # the parsed title (source id) has no quotes


def test_coevo_server_and_agent_text_equal_search_r1s():
    bm = BM25Retriever(load_corpus(SHIPPED_CORPUS).passages, only_hits=True)
    queries = ["who was a lobbyist for Genentech", "Portuguese fort Habsburg", "zzzz qqqq"]
    with RetrievalServer(bm) as srv:
        theirs = SearchR1Generation(srv.url + "/retrieve").batch_search(queries)
        world = SearchQAWorld(HTTPRetriever(srv.url, timeout_s=10), topk=3)
        for q, t in zip(queries, theirs):
            assert world.run_tool(Task("t", q, None), f"<think>x</think>\n<search> {q} </search>") == observation(t)
    assert theirs[0].startswith('Doc 1(Title: "Evan Morris") Evan Morris Evan L. Morris') and theirs[0].count("Doc ") == 3
    assert theirs[2] == ""  # no passage shares a term: no hits, as a Lucene index answers
    assert SearchQAWorld(bm, topk=3).run_tool(Task("t", "q", None), "<search> zzzz qqqq </search>") == \
        "\n\n<information></information>\n\n"


def test_only_hits_returns_fewer_than_k_where_bm25_matches_fewer():
    ps = load_corpus(SHIPPED_CORPUS).passages[:300]
    q = ["Genentech"]
    n_match = sum("genentech" in (p.title + " " + p.text).lower() for p in ps)
    assert 0 < n_match < 5
    hits = BM25Retriever(ps, only_hits=True).search(q, 5)[0]
    assert len(hits) == n_match and all(p.score > 0 for p in hits)
    filled = BM25Retriever(ps).search(q, 5)[0]  # the default fills k with score-0 passages (dense-retriever-like)
    assert len(filled) == 5 and [p.pid for p in filled[:n_match]] == [p.pid for p in hits]
    assert {p.score for p in filled[n_match:]} == {0.0}
