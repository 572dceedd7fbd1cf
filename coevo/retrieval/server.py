"""A tiny Search-R1-compatible ``/retrieve`` server over any in-process Retriever (stdlib only).

For tests and for users without FAISS: ``python -m coevo.retrieval.server --corpus wiki.jsonl
--port 8000`` serves a ``BM25Retriever`` over a wiki-18-format corpus in the request/response
shape of Search-R1's ``search_r1/search/retrieval_server.py`` (see ``coevo.retrieval.http``):
``{"queries", "topk", "return_scores"}`` in, ``{"result": [...]}`` out, each document as
``{"id", "contents": "\\"Title\\"\\ntext", "title", "text", "source"}``.  Extension: an optional
``"sources"`` list restricts retrieval to those source ids.  Binds 127.0.0.1 by default; bad
requests get HTTP 400 with ``{"detail": "..."}``; bodies over ``max_body`` bytes get 413.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from coevo.retrieval.base import Passage, Retriever

MAX_QUERIES = 4096
MAX_BODY = 8 * 1024 * 1024


def document(p: Passage) -> dict:
    """A Passage as a wiki-18 corpus row plus Search-R1 BM25's ``title`` / ``text`` fields."""
    contents = p.contents if p.contents is not None else f'"{p.title}"\n{p.text}'
    return {"id": p.pid, "contents": contents, "title": p.title, "text": p.text, "source": p.source}


def answer_request(retriever: Retriever, body: Any, default_topk: int = 3) -> dict:
    """The ``/retrieve`` answer for a decoded request body; ValueError for a bad request."""
    if not isinstance(body, dict):
        raise ValueError("request body must be a JSON object")
    qs = body.get("queries")
    if not isinstance(qs, list) or not all(isinstance(q, str) for q in qs):
        raise ValueError("'queries' must be a list of strings")
    if len(qs) > MAX_QUERIES:
        raise ValueError(f"at most {MAX_QUERIES} queries per request, got {len(qs)}")
    k = body.get("topk") or default_topk  # Search-R1: a missing/0 topk falls back to the default
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"'topk' must be a positive integer, got {k!r}")
    sources = body.get("sources")
    if sources is not None and (not isinstance(sources, list) or not all(isinstance(s, str) for s in sources)):
        raise ValueError("'sources' must be a list of strings")
    hits = retriever.search(qs, k, sources=sources)
    if body.get("return_scores", False):
        return {"result": [[{"document": document(p), "score": p.score} for p in hs] for hs in hits]}
    return {"result": [[document(p) for p in hs] for hs in hits]}


def make_handler(retriever: Retriever, default_topk: int, max_body: int):
    lock = threading.Lock()  # one search at a time: in-process retrievers are not thread-safe

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 - http.server API
            if self.path.rstrip("/") != "/retrieve":
                return self._send(404, {"detail": "Not Found"})
            n = int(self.headers.get("Content-Length") or 0)
            if n > max_body:
                self.close_connection = True
                return self._send(413, {"detail": f"body over {max_body} bytes"})
            try:
                body = json.loads(self.rfile.read(n) or b"null")
            except ValueError:
                return self._send(400, {"detail": "body is not JSON"})
            try:
                with lock:
                    out = answer_request(retriever, body, default_topk)
            except ValueError as e:
                return self._send(400, {"detail": str(e)})
            self._send(200, out)

        def do_GET(self):  # noqa: N802
            self._send(404, {"detail": "POST /retrieve"})

    return Handler


class RetrievalServer:
    """``with RetrievalServer(retriever) as srv: HTTPRetriever(srv.url)`` — serves on
    ``host:port`` (port 0 = a free one) in a daemon thread; stops on exit or ``stop()``."""

    def __init__(self, retriever: Retriever, host: str = "127.0.0.1", port: int = 0, topk: int = 3,
                 max_body: int = MAX_BODY):
        self.httpd = ThreadingHTTPServer((host, port), make_handler(retriever, topk, max_body))
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "RetrievalServer":
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def __enter__(self) -> "RetrievalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve_corpus(corpus: str, host: str = "127.0.0.1", port: int = 8000, topk: int = 3,
                 source_field: str = "title", max_seconds: float | None = None) -> dict:
    """Index a wiki-18-format corpus with BM25 and serve it until interrupted (or
    ``max_seconds``); returns what was served."""
    import time

    from coevo.retrieval.bm25 import BM25Retriever
    from coevo.retrieval.corpus import load_corpus

    load = load_corpus(corpus, source_field)
    # only real hits, as Search-R1's pyserini BM25 server (fewer than topk when fewer passages match)
    srv = RetrievalServer(BM25Retriever(load.passages, only_hits=True), host, port, topk).start()
    print(json.dumps({"url": srv.url + "/retrieve", **load.summary(3)}), flush=True)
    t0 = time.monotonic()
    try:
        while max_seconds is None or time.monotonic() - t0 < max_seconds:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return {"url": srv.url, "served_s": round(time.monotonic() - t0, 1)}


def main(argv: list[str] | None = None) -> None:  # pragma: no cover - thin argparse wrapper
    import argparse

    ap = argparse.ArgumentParser(description="Search-R1-compatible /retrieve server (BM25 over a JSONL corpus).")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--topk", type=int, default=3)
    ap.add_argument("--source-field", default="title")
    ap.add_argument("--max-seconds", type=float, default=None)
    a = ap.parse_args(argv)
    serve_corpus(a.corpus, a.host, a.port, a.topk, a.source_field, a.max_seconds)


if __name__ == "__main__":  # pragma: no cover
    main()
