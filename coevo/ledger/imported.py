"""An imported run directory (``coevo import``; the importers are ``coevo.integrations.importers``
and, for R-Zero's files, ``coevo.recipes.rzero.importer``): ``ledger.duckdb`` written one
transaction per step as the runner does, ``config.yaml``, ``import.json`` (files read, records,
every malformed line with its file and line number) and ``summary.json``, so ``coevo audit`` /
``coevo report`` run; the references file an import may take; the result line it prints."""
from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from coevo.core.records import RecordError as Bad, json_records

__all__ = ["Bad", "check_out", "write_run", "result_line", "read_references", "bad_record", "first_bad"]


def bad_record(path: Path, line: int | None, reason: str) -> dict:
    return {"file": str(path), "line": line, "reason": reason}


def check_out(out: Path) -> None:
    """RUN must be new or an empty directory (an import never appends to a run)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise Bad(f"{out} exists and is not empty: import into a new run directory")


def read_references(path: Path) -> tuple[dict[str, str], list[dict]]:
    """question -> reference answer from a JSON array or JSON-lines file of objects with
    ``question`` and one of ``reference`` / ``ground_truth`` / ``answer`` (first present)."""
    path = Path(path)
    if not path.is_file():
        raise Bad(f"references file {path} does not exist")
    refs, bad = {}, []
    for n, obj, err in json_records(path):
        if err:
            bad.append(bad_record(path, n, err))
            continue
        key = next((k for k in ("reference", "ground_truth", "answer") if isinstance(obj, dict) and k in obj), None)
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str) or key is None:
            bad.append(bad_record(path, n, "needs 'question' and one of 'reference', 'ground_truth', 'answer'"))
            continue
        refs[obj["question"]] = str(obj[key])
    return refs, bad


def first_bad(bad: list[dict]) -> str:
    return f"{bad[0]['file']}:{bad[0]['line']}: {bad[0]['reason']}" if bad else "-"


def write_run(out: Path, source: str, cfg: dict, steps: dict, files: list[str], n_records: int, bad: list[dict],
               rv, round_columns=None) -> dict:
    """Write ledger.duckdb (one transaction per step, as the runner), config.yaml, import.json, summary.json;
    ``round_columns(led, run_id, round)``: the source recipe's round table columns (summary ``rounds``)."""
    from coevo.ledger import views
    from coevo.ledger.store import Ledger
    from coevo.runlock import writer_guard

    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    with writer_guard(out, Bad):
        led = Ledger(out / "ledger.duckdb")
        try:
            run_id = out.name
            led.append("runs", [{"run_id": run_id, "created_at": t0, "recipe": cfg["recipe"], "world": source,
                                 "seed": None, "config_yaml": yaml.safe_dump(cfg, sort_keys=False),
                                 "coevo_version": _version()}])
            for i, (s, (rnd, phase, rows, metrics)) in enumerate(sorted(steps.items())):
                with led.step(run_id, s, rnd, phase, i) as w:
                    w.extend(rows)
                    w.metrics = metrics
            counts = {t: led.count(t, run_id) for t in ("steps", "tasks", "rollouts", "verdicts", "rewards",
                                                       "task_stats")}
            rounds = sorted({rnd for rnd, *_ in steps.values()})
            round_rows = [{**views.round_row(led, run_id, r), **round_columns(led, run_id, r)}
                          for r in rounds] if round_columns is not None else []
        finally:
            led.close()
        info = {"source": source, "path": cfg["import"]["path"], "files": files, "n_records": n_records,
                "n_malformed": len(bad), "malformed": bad,
                "verifier": {"kind": rv.kind, "version": rv.version} if rv is not None else None}
        (out / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        (out / "import.json").write_text(json.dumps(info, indent=1, default=float) + "\n")
        summary = {"recipe": cfg["recipe"], "preset": f"import:{source}", "run_id": out.name, "imported": True,
                   "source": source, "n_records": n_records, "n_malformed": len(bad), "counts": counts,
                   "rounds": round_rows, "steps": {str(s): m for s, (_, _, _, m) in sorted(steps.items())},
                   "wall_seconds": time.time() - t0}
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    return {"run_dir": str(out), "source": source, "files": files, "n_records": n_records, "n_malformed": len(bad),
            "malformed": bad, "counts": counts}


def _version() -> str:
    from coevo import __version__

    return str(__version__)


def result_line(res: dict) -> str:
    """One line for the terminal."""
    c = res["counts"]
    return (f"imported {res['n_records']} records from {len(res['files'])} file(s) into {res['run_dir']}: "
            f"{c['steps']} steps, {c['tasks']} tasks, {c['rollouts']} rollouts, {c['verdicts']} verdicts; "
            f"{res['n_malformed']} malformed" + (f" (first: {first_bad(res['malformed'])})" if res["malformed"] else ""))
