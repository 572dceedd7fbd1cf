"""Retrieval for search-agent worlds: the Passage record and Retriever protocol (base), an
in-process BM25 retriever over the ``bm25s`` package (bm25), and optional remote retrievers."""
from coevo.retrieval.base import Passage, Retriever

__all__ = ["Passage", "Retriever"]
