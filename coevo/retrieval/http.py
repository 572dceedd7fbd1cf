"""A Retriever that queries a Search-R1-style retrieval server over HTTP.

Wire format (PeterGriffinJin/Search-R1 @ a14dc3a, ``search_r1/search/retrieval_server.py``,
``QueryRequest`` and ``retrieve_endpoint``; client side ``search_r1/llm_agent/generation.py::
_batch_search``)::

    POST <url>/retrieve   {"queries": ["q1", ...], "topk": 3, "return_scores": true}
    200                   {"result": [[{"document": {"id": "0", "contents": "\\"Title\\"\\ntext"},
                                        "score": 12.3}, ...], ...]}    # one list per query

With ``return_scores`` false each list holds the documents themselves.  A document is a
corpus row (``id``, ``contents``; the e5/FAISS server) or ``title``/``text``/``contents``
(its BM25 server, without ``id``).  We always ask for scores and read both shapes.

``sources`` (CrossFit fold restriction) is not part of Search-R1's request: we send it as
an extra ``"sources"`` field (our reference server, ``coevo.retrieval.server``, honours it;
Search-R1's pydantic request model ignores unknown fields), ask for ``k * overfetch``
passages, and keep only passages of those sources, so against a server that ignores the
field the restriction is exact but may return fewer than k passages.
"""
from __future__ import annotations

import hashlib
from typing import Any, Collection, Sequence
from urllib.parse import urlsplit

from coevo.core.policy import BackendError
from coevo.retrieval.base import Passage
from coevo.retrieval.corpus import split_contents


class RetrievalError(BackendError):
    """The retrieval server failed (one-line message naming the URL and the cause). A ``BackendError``
    (``coevo.core.verdict``): a run stops at the step with that one line, exit 2, never a traceback
    and never a search result scored as empty."""


def retrieve_url(url: str) -> str:
    """``http://host:port`` (or with a trailing ``/``) -> ``http://host:port/retrieve``; a URL
    with another path is used as given."""
    u = url.strip()
    parts = urlsplit(u)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"retriever URL must be http(s)://host:port or a full URL with a path, got {url!r}")
    return u.rstrip("/") + "/retrieve" if parts.path in ("", "/") else u


def passage_from_document(doc: Any, score: float = 0.0) -> Passage:
    """One document of a ``/retrieve`` answer -> Passage (source = ``source`` field, else the title)."""
    if not isinstance(doc, dict):
        raise ValueError(f"document is not an object ({type(doc).__name__})")
    contents = doc.get("contents")
    given = isinstance(contents, str)  # Search-R1 renders the hit from this string alone (format_passages)
    if given:
        title, text = split_contents(contents)
        title, text = str(doc.get("title", title)), str(doc.get("text", text))
    elif isinstance(doc.get("text"), str):
        title, text = str(doc.get("title") or ""), doc["text"]
        contents = f'"{title}"\n{text}'
    else:
        raise ValueError("document has neither 'contents' nor 'text'")
    pid = doc.get("id")
    pid = str(pid) if pid is not None else "sha1:" + hashlib.sha1(contents.encode()).hexdigest()[:16]
    return Passage(pid=pid, source=str(doc.get("source") or title or pid), text=text, title=title,
                   score=float(score), contents=contents if given else None)


def parse_result(payload: Any, n_queries: int) -> list[list[Passage]]:
    """The ``{"result": [...]}`` body -> passages per query; ValueError on a wrong shape."""
    if not isinstance(payload, dict) or not isinstance(payload.get("result"), list):
        raise ValueError("response has no 'result' list")
    res = payload["result"]
    if len(res) != n_queries:
        raise ValueError(f"response has {len(res)} results for {n_queries} queries")
    out = []
    for hits in res:
        if not isinstance(hits, list):
            raise ValueError("a query's result is not a list")
        out.append([passage_from_document(h["document"], h.get("score", 0.0))
                    if isinstance(h, dict) and "document" in h else passage_from_document(h) for h in hits])
    return out


class HTTPRetriever:
    """Retriever protocol over a Search-R1 ``/retrieve`` server (see module docstring)."""

    def __init__(self, url: str, timeout_s: float = 30.0, overfetch: int = 5, client: Any = None):
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.url = retrieve_url(url)
        self.timeout_s = float(timeout_s)
        self.overfetch = max(1, int(overfetch))
        self._client = client

    def _http(self):
        if self._client is None:
            import httpx
            self._client = httpx.Client(timeout=self.timeout_s, trust_env=False)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def post(self, body: dict) -> Any:
        """POST ``body`` to the server, the decoded JSON back, or a one-line RetrievalError."""
        import httpx

        try:
            r = self._http().post(self.url, json=body)
        except httpx.TimeoutException:
            raise RetrievalError(f"retriever {self.url}: no answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as e:
            raise RetrievalError(f"retriever {self.url}: cannot connect ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0] if str(e) else 'no detail'})") from None
        if r.status_code != 200:
            detail = " ".join(r.text.split())[:200]
            raise RetrievalError(f"retriever {self.url}: HTTP {r.status_code}{': ' + detail if detail else ''}")
        try:
            return r.json()
        except ValueError:
            raise RetrievalError(f"retriever {self.url}: answer is not JSON "
                                 f"({' '.join(r.text.split())[:80]!r})") from None

    def search(self, queries: Sequence[str], k: int,
               sources: Collection[str] | None = None) -> list[list[Passage]]:
        if isinstance(queries, str):
            raise TypeError("search takes a sequence of queries, not one string")
        queries = [str(q) for q in queries]
        if not queries or k <= 0:
            return [[] for _ in queries]
        body: dict = {"queries": queries, "topk": int(k) if sources is None else int(k) * self.overfetch,
                      "return_scores": True}
        if sources is not None:
            body["sources"] = sorted(str(s) for s in sources)
        payload = self.post(body)
        try:
            hits = parse_result(payload, len(queries))
        except (ValueError, KeyError, TypeError) as e:
            raise RetrievalError(f"retriever {self.url}: unexpected answer shape ({e})") from None
        if sources is not None:
            keep = set(body["sources"])
            hits = [[p for p in hs if p.source in keep] for hs in hits]
        return [hs[:k] for hs in hits]
