"""``coevo bench ray-verify``: verification throughput on a Ray cluster next to the local pool
(coevo/executors/ray_bench.py, docs/cluster.md)."""
from __future__ import annotations

from typing import Optional

import typer

from coevo.cli_common import fail
from coevo.commands.output import emit, json_option


def register(apps: dict) -> None:
    @apps["bench"].command("ray-verify")
    def ray_verify(
        address: Optional[str] = typer.Option(None, "--address", help="A running Ray cluster (host:port); "
                                                                      "without it, local clusters of --nodes."),
        nodes: str = typer.Option("1,2", "--nodes", help="Worker node counts to start, one cluster each "
                                                         "(comma-separated; ignored with --address)."),
        n: int = typer.Option(2000, "--n", help="Answer pairs checked by each side."),
        blocks: int = typer.Option(4, "--blocks", help="Blocks the two sides alternate over."),
        local_workers: Optional[int] = typer.Option(None, "--local-workers",
                                                    help="Local pool processes (default: as many as Ray actors)."),
        seed: int = typer.Option(0, "--seed"),
        expect_cpus: int = typer.Option(0, "--expect-cpus", help="Wait until the cluster has this many CPUs."),
        isolate: bool = typer.Option(True, "--isolate/--no-isolate",
                                     help="Local clusters in a private network namespace (needs root and ip)."),
        as_json: bool = json_option(),
    ):
        """Ray verifier actors vs the local VerifierPool on the same pairs: items/s and their ratio."""
        from coevo.executors import ExecutorError

        if n < 1 or blocks < 1:
            fail("--n and --blocks must be >= 1")
        try:
            counts = [int(x) for x in nodes.split(",") if x.strip()]
        except ValueError:
            counts = []
        if not counts or min(counts) < 1:
            fail(f"--nodes: expected positive integers separated by commas, got {nodes!r}")
        try:
            if address:
                from coevo.executors.ray_bench import bench_ray_verify

                res = bench_ray_verify(address, n=n, local_workers=local_workers, blocks=blocks, seed=seed,
                                       expect_cpus=expect_cpus)
            else:
                from coevo.executors.ray_bench import measure_nodes

                res = measure_nodes(counts, n=n, blocks=blocks, seed=seed, isolate=isolate)
        except (ExecutorError, RuntimeError) as e:
            lines = [x.strip() for x in str(e).splitlines() if x.strip()]
            fail(" | ".join(lines[:1] + lines[-1:]) if lines else type(e).__name__)
        emit(res, as_json)
