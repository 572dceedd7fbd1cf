"""A Search-R1-compatible ``/retrieve`` server over any in-process Retriever (stdlib + pydantic).

For tests and for users without FAISS: ``coevo serve-retriever --corpus wiki.jsonl --port 8000``
serves BM25 over a wiki-18-format corpus in the request/response shape of Search-R1's
``search_r1/search/retrieval_server.py`` (PeterGriffinJin/Search-R1 @ a14dc3a; see
``coevo.retrieval.http``): ``{"queries", "topk", "return_scores"}`` in, ``{"result": [...]}`` out,
each document as ``{"id", "contents": "\\"Title\\"\\ntext", "title", "text", "source"}``.

The request is read as Search-R1's FastAPI app reads it: the pydantic model :class:`RetrieveRequest`
(its ``QueryRequest``: ``queries: List[str]``, ``topk: Optional[int] = None``, ``return_scores: bool
= False``) in pydantic's default mode, so ``"return_scores": "false"`` is false, ``"maybe"`` or ``2``
is an error, ``"topk": "3"`` is 3, and a missing or 0 ``topk`` is the server's default. A bad
request gets FastAPI's answer, HTTP 422 ``{"detail": [{"type", "loc": ["body", ...], "msg", "input"}]}``
(a body that is not JSON: ``json_invalid`` at its character position); another path 404
``{"detail": "Not Found"}``, another method 405 ``{"detail": "Method Not Allowed"}``.

Beyond Search-R1: ``GET /health`` answers ``{"status": "ok", ...}``; an optional ``"sources"`` list
restricts retrieval to those source ids; a negative ``topk`` or more than ``MAX_QUERIES`` queries is
a 422 in the same shape (Search-R1's server fails on them with a 500); bodies over ``max_body``
bytes get 413; it binds 127.0.0.1 by default.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from pydantic import BaseModel, Field, ValidationError

from coevo.retrieval.base import Passage, Retriever

MAX_QUERIES = 4096
MAX_BODY = 8 * 1024 * 1024


class RetrieveRequest(BaseModel):
    """Search-R1's ``QueryRequest`` fields and types, plus coevo's ``sources`` and two bounds."""

    queries: list[str] = Field(max_length=MAX_QUERIES)
    topk: Optional[int] = Field(None, ge=0)
    return_scores: bool = False
    sources: Optional[list[str]] = None


class RequestInvalid(ValueError):
    """A request FastAPI would answer with 422; ``detail`` is its list of errors."""

    def __init__(self, detail: list[dict]):
        super().__init__("; ".join(f"{'.'.join(map(str, d['loc']))}: {d['msg']}" for d in detail))
        self.detail = detail


def validation_detail(errors: list[dict]) -> list[dict]:
    """pydantic errors as FastAPI puts them in a 422 body: ``loc`` under ``"body"``, no ``url``."""
    out = []
    for e in errors:
        d = {"type": e["type"], "loc": ["body", *e["loc"]], "msg": e["msg"], "input": e.get("input")}
        if e.get("ctx"):
            d["ctx"] = {k: v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
                        for k, v in e["ctx"].items()}
        out.append(d)
    return out


def parse_request(body: Any) -> RetrieveRequest:
    """A decoded ``/retrieve`` body -> RetrieveRequest, or RequestInvalid with FastAPI's detail."""
    if body is None:
        raise RequestInvalid([{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}])
    try:
        return RetrieveRequest.model_validate(body, from_attributes=True)  # as FastAPI validates a body
    except ValidationError as e:
        raise RequestInvalid(validation_detail(e.errors(include_url=False))) from None


def decode_body(raw: bytes) -> Any:
    """JSON bytes -> value (no bytes = None); RequestInvalid as FastAPI's ``json_invalid``."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as e:
        pos, msg = getattr(e, "pos", 0), getattr(e, "msg", str(e))
        raise RequestInvalid([{"type": "json_invalid", "loc": ["body", pos], "msg": "JSON decode error",
                               "input": {}, "ctx": {"error": msg}}]) from None


def document(p: Passage) -> dict:
    """A Passage as a wiki-18 corpus row plus Search-R1 BM25's ``title`` / ``text`` fields."""
    contents = p.contents if p.contents is not None else f'"{p.title}"\n{p.text}'
    return {"id": p.pid, "contents": contents, "title": p.title, "text": p.text, "source": p.source}


def answer_request(retriever: Retriever, body: Any, default_topk: int = 3) -> dict:
    """The ``/retrieve`` answer for a decoded request body; RequestInvalid (a ValueError) for a bad one."""
    req = parse_request(body)
    k = req.topk or default_topk  # Search-R1: a missing/0 topk falls back to the default
    hits = retriever.search(req.queries, k, sources=req.sources)
    if req.return_scores:
        return {"result": [[{"document": document(p), "score": p.score} for p in hs] for hs in hits]}
    return {"result": [[document(p) for p in hs] for hs in hits]}


def make_handler(retriever: Retriever, default_topk: int, max_body: int, health: dict | None = None):
    lock = threading.Lock()  # one search at a time: in-process retrievers are not thread-safe
    health = {"status": "ok", **(health or {})}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, obj: dict, headers: dict | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _route(self, method: str) -> bool:
            """True when ``method`` is the one for this path; else the 404 / 405 is sent."""
            allowed = {"/retrieve": "POST", "/health": "GET"}.get(self.path.split("?")[0].rstrip("/"))
            if allowed != method:
                self._discard_body()  # an unread body would be read as the next request
            if allowed is None:
                self._send(404, {"detail": "Not Found"})
            elif allowed != method:
                self._send(405, {"detail": "Method Not Allowed"}, {"Allow": allowed})
            return allowed == method

        def _discard_body(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            if 0 < n <= max_body:
                self.rfile.read(n)
            elif n:
                self.close_connection = True

        def do_POST(self):  # noqa: N802 - http.server API
            if not self._route("POST"):
                return
            n = int(self.headers.get("Content-Length") or 0)
            if n > max_body:
                self.close_connection = True
                return self._send(413, {"detail": f"body over {max_body} bytes"})
            try:
                body = decode_body(self.rfile.read(n))
                with lock:
                    out = answer_request(retriever, body, default_topk)
            except RequestInvalid as e:
                return self._send(422, {"detail": e.detail})
            self._send(200, out)

        def do_GET(self):  # noqa: N802
            if self._route("GET"):
                self._send(200, health)

    return Handler


class RetrievalServer:
    """``with RetrievalServer(retriever) as srv: HTTPRetriever(srv.url)`` — serves on
    ``host:port`` (port 0 = a free one) in a daemon thread; stops on exit or ``stop()``."""

    def __init__(self, retriever: Retriever, host: str = "127.0.0.1", port: int = 0, topk: int = 3,
                 max_body: int = MAX_BODY, health: dict | None = None):
        self.httpd = ThreadingHTTPServer((host, port), make_handler(retriever, topk, max_body, health))
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
                 source_field: str = "title", max_seconds: float | None = None,
                 bm25: str = "search-r1") -> dict:
    """Index a wiki-18-format corpus with BM25 (``bm25``: a name of ``BM25_SETTINGS``) and serve it
    until interrupted (or ``max_seconds``); returns what was served."""
    import time

    from coevo.retrieval.bm25 import BM25_SETTINGS
    from coevo.retrieval.corpus import load_corpus

    if bm25 not in BM25_SETTINGS:
        raise ValueError(f"bm25 settings must be one of {', '.join(BM25_SETTINGS)}, got {bm25!r}")
    load = load_corpus(corpus, source_field)
    retriever = BM25_SETTINGS[bm25](load.passages)  # only real hits, as Search-R1's pyserini server
    health = {"bm25": bm25, "k1": retriever.k1, "b": retriever.b, "passages": len(retriever)}
    srv = RetrievalServer(retriever, host, port, topk, health=health).start()
    print(json.dumps({"url": srv.url + "/retrieve", "health": srv.url + "/health", "bm25": bm25,
                      **load.summary(3)}), flush=True)
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
    ap.add_argument("--bm25", choices=["search-r1", "bm25s"], default="search-r1")
    a = ap.parse_args(argv)
    serve_corpus(a.corpus, a.host, a.port, a.topk, a.source_field, a.max_seconds, a.bm25)


if __name__ == "__main__":  # pragma: no cover
    main()
