"""``coevo bench retrieval``: BM25Retriever queries/s vs a scipy sparse BM25 reference measured
in the same run, with a top-k agreement check (logic in coevo.retrieval.bench; docs/qa.md)."""
from __future__ import annotations

import typer

from coevo.cli_common import fail
from coevo.commands.output import emit, json_option


def bench_retrieval(
    passages: int = typer.Option(100_000, help="Generated passages."),
    queries: int = typer.Option(1000, help="Queries."),
    k: int = typer.Option(10, help="Top-k per query."),
    seed: int = typer.Option(0),
    as_json: bool = json_option(),
):
    """Queries/s of our BM25 over a generated corpus next to a scipy sparse BM25, with top-k agreement."""
    from coevo.retrieval.bench import bench_retrieval as _bench

    if passages < 1 or queries < 1 or k < 1:
        fail("--passages, --queries and --k must be >= 1")
    emit(_bench(n_passages=passages, n_queries=queries, k=k, seed=seed), as_json)


def register(apps: dict) -> None:
    apps["bench"].command("retrieval")(bench_retrieval)
