"""``coevo eval-qa``: a search-agent solver on FlashRAG-format QA benchmarks (EM, Cover-EM), and
``coevo serve-retriever``: a Search-R1-compatible BM25 ``/retrieve`` server (docs/qa.md)."""
from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import UserError, console, fail
from coevo.commands import model_options as mo
from coevo.commands.output import emit, json_option


def load_benchmarks(spec: str, data_dir: Optional[Path], split: Optional[str], limit: Optional[int]) -> list:
    from coevo.qa.benchmarks import SHIPPED_DATA_DIR, load_benchmark, parse_benchmark_list

    d = data_dir or SHIPPED_DATA_DIR
    if not d.is_dir():
        raise UserError(f"data directory not found: {d}")
    return [load_benchmark(n, d, split, limit) for n in parse_benchmark_list(spec)]


def make_retriever(corpus: Optional[Path], retriever_url: Optional[str], timeout_s: float, source_field: str):
    """HTTPRetriever when a URL is given, else BM25 over the corpus (default: the shipped sample)."""
    if retriever_url:
        from coevo.retrieval.http import HTTPRetriever

        return HTTPRetriever(retriever_url, timeout_s=timeout_s), {"retriever": "http", "url": retriever_url}
    from coevo.qa.benchmarks import SHIPPED_CORPUS
    from coevo.retrieval.bm25 import BM25Retriever
    from coevo.retrieval.corpus import load_corpus

    load = load_corpus(corpus or SHIPPED_CORPUS, source_field)
    return BM25Retriever(load.passages, only_hits=True), {"retriever": "bm25", "corpus": str(corpus or SHIPPED_CORPUS),
                                          **load.summary(5)}


def write_samples(path: Path, samples: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for bench, rows in samples.items():
            for r in rows:
                f.write(json.dumps({"benchmark": bench, **r}) + "\n")


def eval_qa(
    benchmark: str = typer.Option("nq", "--benchmark", "-b", help="Comma-separated: nq, triviaqa, popqa, hotpotqa, "
                                  "2wikimultihopqa (2wikimqa), musique, bamboogle, or all."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="FlashRAG layout DIR/<name>/<split>.jsonl "
                                            "(default: the shipped NQ sample)."),
    split: Optional[str] = typer.Option(None, help="test | dev (default: test, else dev, as Search-R1)."),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="wiki-18-format JSONL indexed with BM25 "
                                          "(default: the shipped 1,000-passage sample)."),
    retriever_url: Optional[str] = typer.Option(None, "--retriever-url", help="A Search-R1 /retrieve server instead of --corpus."),
    retriever_timeout: float = typer.Option(30.0, help="Seconds per retrieval request."),
    source_field: str = typer.Option("title", help="Corpus field used as the passage's source id."),
    topk: int = typer.Option(3, min=1, help="Passages per search (Search-R1: 3)."),
    max_turns: int = typer.Option(4, help="Search calls per question."),
    max_new_tokens: int = typer.Option(256, min=1, help="Tokens per turn."),
    batch_size: int = typer.Option(16, min=1, help="Questions per rollout batch."),
    limit: Optional[int] = typer.Option(None, min=1, help="Only the first N questions of each benchmark."),
    samples: Optional[Path] = typer.Option(None, "--samples", help="Write per-question rows (answer, EM, Cover-EM) as JSONL."),
    greedy: bool = typer.Option(True, "--greedy/--no-greedy", help="Greedy decoding (else sample at --temperature / --top-p)."),
    model: str = mo.option("model"),
    checkpoint: Optional[Path] = mo.option("checkpoint"),
    temperature: float = mo.option("temperature"),
    top_p: float = mo.option("top_p"),
    device: str = mo.option("device"),
    server: List[str] = mo.option("server"),
    api_key_env: str = mo.option("api_key_env"),
    server_timeout: float = mo.option("server_timeout"),
    as_json: bool = json_option(),
):
    """EM and Cover-EM of a search-agent solver per benchmark, with unweighted and question-weighted means."""
    from coevo.core.policy import SamplingParams
    from coevo.qa.agent import SearchQAWorld
    from coevo.qa.benchmarks import BenchmarkError
    from coevo.qa.evaluate import evaluate_qa
    from coevo.retrieval.corpus import CorpusError
    from coevo.retrieval.http import RetrievalError

    try:
        opts = mo.from_cli(model=model, checkpoint=checkpoint, device=device, server=server, api_key_env=api_key_env,
                           server_timeout=server_timeout, temperature=temperature, top_p=top_p)
        if opts.model == mo.TINY:
            raise UserError(f"--model {mo.TINY} is the shipped arithmetic solver: it cannot read QA prompts")
        if topk < 1 or max_turns < 0 or max_new_tokens < 1 or (limit is not None and limit < 1):
            raise UserError("--topk, --max-new-tokens and --limit must be >= 1, --max-turns >= 0")
        loads = load_benchmarks(benchmark, data_dir, split, limit)
        retriever, rinfo = make_retriever(corpus, retriever_url, retriever_timeout, source_field)
        world = SearchQAWorld(retriever, topk=topk)
        pol = opts.policy("coevo eval-qa", world.name)
        sp = (SamplingParams(greedy=True, temperature=0.0, max_new_tokens=max_new_tokens) if greedy else
              SamplingParams(temperature=opts.temperature, top_p=opts.top_p, max_new_tokens=max_new_tokens))
        res = evaluate_qa(pol, world, loads, sp, max_turns=max_turns, batch_size=batch_size,
                          keep_samples=samples is not None)
    except (UserError, BenchmarkError, CorpusError, RetrievalError, ValueError) as e:
        fail(str(e))
    except Exception as e:  # noqa: BLE001 - model loading errors etc. become one line
        fail(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if samples is not None:
        write_samples(samples, res.pop("samples"))
    emit({**res, "retrieval": rinfo, "model": model, "servers": list(server)}, as_json)


class BM25Choice(str, Enum):
    """``serve-retriever --bm25``: the names of ``coevo.retrieval.bm25.BM25_SETTINGS``."""
    search_r1 = "search-r1"
    bm25s = "bm25s"


def serve_retriever(
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="wiki-18-format JSONL (default: the shipped sample)."),
    host: str = typer.Option("127.0.0.1", help="Bind address."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port (0 = any free one)."),
    topk: int = typer.Option(3, min=1, help="Default topk when a request has none."),
    source_field: str = typer.Option("title", help="Corpus field used as the passage's source id."),
    max_seconds: Optional[float] = typer.Option(None, help="Stop after this many seconds (default: until Ctrl-C)."),
    bm25: BM25Choice = typer.Option("search-r1", "--bm25",
                                    help="search-r1: Search-R1's pyserini index (k1 0.9, b 0.4, Porter "
                                         "stemming); bm25s: bm25s's defaults (k1 1.5, b 0.75, no stemming)."),
):
    """Serve BM25 over a JSONL corpus at POST /retrieve in Search-R1's request/response shape
    (422 errors as its FastAPI app; GET /health)."""
    from coevo.qa.benchmarks import SHIPPED_CORPUS
    from coevo.retrieval.corpus import CorpusError
    from coevo.retrieval.server import serve_corpus

    try:
        info = serve_corpus(str(corpus or SHIPPED_CORPUS), host, port, topk, source_field, max_seconds, bm25.value)
    except (CorpusError, OSError) as e:
        fail(str(e))
    console.print(f"stopped after {info['served_s']} s")


def register(apps: dict) -> None:
    apps["main"].command("eval-qa")(eval_qa)
    apps["main"].command("serve-retriever")(serve_retriever)
