"""HTTPRetriever against the reference /retrieve server (127.0.0.1, random port, in a thread):
Search-R1's request/response shape, results equal to in-process BM25, one-line errors."""
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from coevo.qa.benchmarks import SHIPPED_CORPUS
from coevo.retrieval.base import Passage, Retriever
from coevo.retrieval.bm25 import BM25Retriever
from coevo.retrieval.corpus import load_corpus
from coevo.retrieval.http import HTTPRetriever, RetrievalError, parse_result, passage_from_document, retrieve_url
from coevo.retrieval.server import RetrievalServer, answer_request

QUERIES = ["who was a lobbyist for Genentech", "United States Exploring Expedition ethnologist",
           "Portuguese fort Habsburg", "zzzz qqqq"]


@pytest.fixture(scope="module")
def bm25():
    return BM25Retriever(load_corpus(SHIPPED_CORPUS).passages[:300])


@pytest.fixture(scope="module")
def server(bm25):
    with RetrievalServer(bm25) as srv:
        yield srv


def test_protocol_and_equal_to_in_process(bm25, server):
    r = HTTPRetriever(server.url, timeout_s=10)
    assert isinstance(r, Retriever) and r.url == server.url + "/retrieve"
    got = r.search(QUERIES, 3)
    assert got == bm25.search(QUERIES, 3)  # same pids, sources, texts, titles and scores
    assert got[0][0].title == "Evan Morris" and got[0][0].source == "Evan Morris" and got[0][0].pid == "0"
    assert r.search([], 3) == [] and r.search(["x"], 0) == [[]]
    src = {got[1][0].source}
    restricted = r.search(QUERIES[:2], 2, sources=src)
    assert restricted == bm25.search(QUERIES[:2], 2, sources=src)
    assert all(p.source in src for hs in restricted for p in hs)
    r.close()


def test_raw_wire_shape(server):
    body = {"queries": [QUERIES[0]], "topk": 2, "return_scores": True}
    res = httpx.post(server.url + "/retrieve", json=body, timeout=10).json()
    doc = res["result"][0][0]
    assert set(doc) == {"document", "score"} and doc["document"]["contents"].startswith('"Evan Morris"\n')
    assert doc["document"]["id"] == "0" and isinstance(doc["score"], float)
    plain = httpx.post(server.url + "/retrieve", json={**body, "return_scores": False}, timeout=10).json()
    assert plain["result"][0][0] == doc["document"]  # Search-R1: documents themselves without scores
    bad = httpx.post(server.url + "/retrieve", json={"queries": "q"}, timeout=10)
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "queries"]  # FastAPI's shape
    assert httpx.post(server.url + "/other", json=body, timeout=10).status_code == 404


def test_answer_request_default_topk(bm25):
    out = answer_request(bm25, {"queries": ["fort"]}, default_topk=2)  # topk missing -> default (Search-R1)
    assert len(out["result"][0]) == 2 and "score" not in out["result"][0][0]
    for bad in ({"queries": ["q"], "topk": 0.5}, {"queries": ["q"], "topk": -1}, {"queries": [1]}, [],
                {"queries": ["q"], "sources": "a"}):
        with pytest.raises(ValueError):
            answer_request(bm25, bad)


def test_search_r1_document_shapes():
    dense = passage_from_document({"id": "7", "contents": '"Paris"\nParis is the capital.'}, 1.5)
    assert dense == Passage("7", "Paris", "Paris is the capital.", "Paris", 1.5, '"Paris"\nParis is the capital.')
    bm = passage_from_document({"title": "Paris", "text": "Paris is.", "contents": '"Paris"\nParis is.'})
    assert bm.title == "Paris" and bm.source == "Paris" and bm.pid.startswith("sha1:")
    assert parse_result({"result": [[{"id": "1", "contents": '"T"\nx'}]]}, 1)[0][0].pid == "1"
    with pytest.raises(ValueError):
        parse_result({"result": [[]]}, 2)
    with pytest.raises(ValueError):
        retrieve_url("localhost:8000")
    assert retrieve_url("http://h:1/") == "http://h:1/retrieve" and retrieve_url("http://h/x/retrieve") == "http://h/x/retrieve"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Stub(BaseHTTPRequestHandler):
    """Answers with a fixed (status, body, delay) set on the server object."""

    def log_message(self, *a):
        pass

    def do_POST(self):  # noqa: N802
        import time
        status, body, delay = self.server.reply
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(delay)
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def stub():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("reply,needle", [
    ((200, "<html>oops</html>", 0.0), "not JSON"),
    ((500, "Internal Server Error", 0.0), "HTTP 500"),
    ((200, json.dumps({"result": []}), 0.0), "0 results for 1 queries"),
    ((200, json.dumps({"answer": 1}), 0.0), "no 'result' list"),
    ((200, json.dumps({"result": [[{"document": {"id": 1}}]]}), 0.0), "neither 'contents' nor 'text'"),
    ((200, "{}", 1.5), "no answer within 0.3 s"),
])
def test_one_line_errors(stub, reply, needle):
    stub.reply = reply
    with pytest.raises(RetrievalError) as e:
        HTTPRetriever(f"http://127.0.0.1:{stub.server_address[1]}", timeout_s=0.3).search(["q"], 3)
    msg = str(e.value)
    assert needle in msg and "\n" not in msg and "/retrieve" in msg


def test_connection_refused_is_one_line():
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(RetrievalError) as e:
        HTTPRetriever(url, timeout_s=2).search(["q"], 3)
    assert "cannot connect" in str(e.value) and "\n" not in str(e.value)
